"""Time expressions in recall queries: what each one means, in English and Chinese.

Every table is read against NOW, Thursday 2026-11-26 09:00 UTC, unless a case names
another moment. Ranges are [start, end); a bare date means its midnight UTC.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_cli.lang.timeexpr import TimeRange, find_time, strip_time

NOW = datetime(2026, 11, 26, 9, 0, tzinfo=UTC)  # a Thursday


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


Case = tuple[str, str, str, str]  # query, matched text, start, end


def check(query: str, text: str, start: str, end: str, now: datetime = NOW) -> None:
    found = find_time(query, now)
    assert found is not None, f"nothing found in {query!r}"
    assert (found.text, found.start, found.end) == (text, at(start), at(end)), query
    assert query[found.span[0] : found.span[1]] == found.text


DAYS: list[Case] = [
    ("what did I do today", "today", "2026-11-26", "2026-11-27"),
    ("yesterday's deploy", "yesterday", "2026-11-25", "2026-11-26"),
    ("the day before yesterday", "the day before yesterday", "2026-11-24", "2026-11-25"),
    ("yesterday morning", "yesterday morning", "2026-11-25", "2026-11-26"),
    ("this afternoon", "this afternoon", "2026-11-26", "2026-11-27"),
    # Evenings and nights take the next UTC day too: a local evening crosses midnight UTC.
    ("what broke last night", "last night", "2026-11-25", "2026-11-27"),
    ("yesterday evening", "yesterday evening", "2026-11-25", "2026-11-27"),
    ("tonight", "tonight", "2026-11-26", "2026-11-28"),
]

CALENDAR_UNITS: list[Case] = [
    ("what broke in infra this week?", "this week", "2026-11-23", "2026-11-30"),
    ("what broke in infra last week?", "last week", "2026-11-16", "2026-11-23"),
    ("the previous week", "the previous week", "2026-11-16", "2026-11-23"),
    ("the week before last", "the week before last", "2026-11-09", "2026-11-16"),
    ("this month", "this month", "2026-11-01", "2026-12-01"),
    ("last month", "last month", "2026-10-01", "2026-11-01"),
    ("the month before last", "the month before last", "2026-09-01", "2026-10-01"),
    ("this year", "this year", "2026-01-01", "2027-01-01"),
    ("last year", "last year", "2025-01-01", "2026-01-01"),
    ("the year before last", "the year before last", "2024-01-01", "2025-01-01"),
    ("this quarter", "this quarter", "2026-10-01", "2027-01-01"),
    ("last quarter", "last quarter", "2026-07-01", "2026-10-01"),
]

AGO: list[Case] = [
    ("3 days ago", "3 days ago", "2026-11-23", "2026-11-24"),
    ("a day ago", "a day ago", "2026-11-25", "2026-11-26"),
    ("2 weeks ago", "2 weeks ago", "2026-11-09", "2026-11-16"),  # the week holding Nov 12
    ("a week ago", "a week ago", "2026-11-16", "2026-11-23"),
    ("3 months ago", "3 months ago", "2026-08-01", "2026-09-01"),
    ("two years ago", "two years ago", "2024-01-01", "2025-01-01"),
    ("a couple of weeks ago", "a couple of weeks ago", "2026-11-09", "2026-11-16"),
    ("2 hours ago", "2 hours ago", "2026-11-26T06:00", "2026-11-26T08:00"),
    # Vague counts are rolling windows: seven days, or three of a longer unit.
    ("a few days ago", "a few days ago", "2026-11-19", "2026-11-27"),
    ("several months ago", "several months ago", "2026-08-26", "2026-11-27"),
]

ROLLING: list[Case] = [
    ("the last 3 days", "the last 3 days", "2026-11-23", "2026-11-27"),
    ("in the past 2 weeks", "the past 2 weeks", "2026-11-12", "2026-11-27"),
    ("over the last 6 months", "the last 6 months", "2026-05-26", "2026-11-27"),
    ("past 2 years", "past 2 years", "2024-11-26", "2026-11-27"),
    ("past week", "past week", "2026-11-19", "2026-11-27"),
    ("the past week", "the past week", "2026-11-19", "2026-11-27"),
    ("this past week", "this past week", "2026-11-19", "2026-11-27"),
    ("in the last month", "the last month", "2026-10-26", "2026-11-27"),
    ("the last year", "the last year", "2025-11-26", "2026-11-27"),
    ("the last few days", "the last few days", "2026-11-19", "2026-11-27"),
    ("the past few weeks", "the past few weeks", "2026-11-05", "2026-11-27"),
    ("the last 24 hours", "the last 24 hours", "2026-11-25T09:00", "2026-11-26T09:00"),
    ("what changed recently", "recently", "2026-11-12", "2026-11-27"),
    ("lately", "lately", "2026-11-12", "2026-11-27"),
]

EARLIER: list[Case] = [
    ("earlier this week", "earlier this week", "2026-11-23", "2026-11-26"),
    ("earlier this month", "earlier this month", "2026-11-01", "2026-11-26"),
    ("earlier this year", "earlier this year", "2026-01-01", "2026-11-26"),
    ("earlier today", "earlier today", "2026-11-26", "2026-11-27"),
]

WEEKDAYS: list[Case] = [
    # "last <day>" is the latest one before today; "on <day>" the latest, today included.
    ("last Monday", "last Monday", "2026-11-23", "2026-11-24"),
    ("last Thursday", "last Thursday", "2026-11-19", "2026-11-20"),
    ("last friday", "last friday", "2026-11-20", "2026-11-21"),
    ("this past Tuesday", "this past Tuesday", "2026-11-24", "2026-11-25"),
    ("on Thursday", "Thursday", "2026-11-26", "2026-11-27"),
    ("on Monday", "Monday", "2026-11-23", "2026-11-24"),
    ("on Friday", "Friday", "2026-11-20", "2026-11-21"),
    ("on Sat", "Sat", "2026-11-21", "2026-11-22"),
    ("this Monday", "this Monday", "2026-11-23", "2026-11-24"),
    ("this Saturday", "this Saturday", "2026-11-28", "2026-11-29"),
    ("Monday last week", "Monday last week", "2026-11-16", "2026-11-17"),
    ("Friday of this week", "Friday of this week", "2026-11-27", "2026-11-28"),
    ("last weekend", "last weekend", "2026-11-21", "2026-11-23"),
    ("this past weekend", "this past weekend", "2026-11-21", "2026-11-23"),
    ("this weekend", "this weekend", "2026-11-28", "2026-11-30"),
    ("over the weekend", "the weekend", "2026-11-21", "2026-11-23"),
]

MONTHS: list[Case] = [
    ("in March", "March", "2026-03-01", "2026-04-01"),
    ("during May", "May", "2026-05-01", "2026-06-01"),
    ("in may", "may", "2026-05-01", "2026-06-01"),
    ("in December", "December", "2025-12-01", "2026-01-01"),  # the latest December that has begun
    ("in November", "November", "2026-11-01", "2026-12-01"),
    ("back in Jan", "Jan", "2026-01-01", "2026-02-01"),
    ("in May 2025", "May 2025", "2025-05-01", "2025-06-01"),
    ("March 2025", "March 2025", "2025-03-01", "2025-04-01"),
    ("Sept, 2024", "Sept, 2024", "2024-09-01", "2024-10-01"),
    ("June of last year", "June of last year", "2025-06-01", "2025-07-01"),
    ("last March", "last March", "2026-03-01", "2026-04-01"),
    ("last November", "last November", "2025-11-01", "2025-12-01"),
    ("this December", "this December", "2026-12-01", "2027-01-01"),
]

DATES: list[Case] = [
    ("March 14", "March 14", "2026-03-14", "2026-03-15"),
    ("on March 14, 2025", "March 14, 2025", "2025-03-14", "2025-03-15"),
    ("Mar 14th", "Mar 14th", "2026-03-14", "2026-03-15"),
    ("14 March 2025", "14 March 2025", "2025-03-14", "2025-03-15"),
    ("the 14th of March", "the 14th of March", "2026-03-14", "2026-03-15"),
    ("December 25", "December 25", "2025-12-25", "2025-12-26"),  # not yet this year
    ("November 26", "November 26", "2026-11-26", "2026-11-27"),  # today counts
    ("May 3", "May 3", "2026-05-03", "2026-05-04"),
    ("on may 3", "may 3", "2026-05-03", "2026-05-04"),
    ("may 3rd", "may 3rd", "2026-05-03", "2026-05-04"),
    ("Feb 29", "Feb 29", "2024-02-29", "2024-03-01"),  # the latest that existed
]

YEARS: list[Case] = [
    ("in 2025", "2025", "2025-01-01", "2026-01-01"),
    ("during 2024", "2024", "2024-01-01", "2025-01-01"),
    ("in the year 2023", "the year 2023", "2023-01-01", "2024-01-01"),
    ("in 1999", "1999", "1999-01-01", "2000-01-01"),
    ("in 2027", "2027", "2027-01-01", "2028-01-01"),  # next year is still plausible
]

SEASONS: list[Case] = [
    ("What did Ravi do in the spring of 2025?", "the spring of 2025", "2025-03-01", "2025-06-01"),
    ("spring 2025", "spring 2025", "2025-03-01", "2025-06-01"),
    ("autumn 2024", "autumn 2024", "2024-09-01", "2024-12-01"),
    ("winter 2025", "winter 2025", "2025-12-01", "2026-03-01"),  # the winter of its December
    ("summer of last year", "summer of last year", "2025-06-01", "2025-09-01"),
    ("in summer", "summer", "2026-06-01", "2026-09-01"),
    ("in the fall", "the fall", "2026-09-01", "2026-12-01"),  # begun, and not over yet
    ("in the winter", "the winter", "2025-12-01", "2026-03-01"),
    ("last summer", "last summer", "2026-06-01", "2026-09-01"),
    ("last fall", "last fall", "2025-09-01", "2025-12-01"),  # this one is still going
    ("last winter", "last winter", "2025-12-01", "2026-03-01"),
    ("this winter", "this winter", "2026-12-01", "2027-03-01"),
    ("this summer", "this summer", "2026-06-01", "2026-09-01"),
]

PARTS: list[Case] = [
    ("early March", "early March", "2026-03-01", "2026-03-11"),
    ("mid-March 2025", "mid-March 2025", "2025-03-11", "2025-03-21"),
    ("late February 2024", "late February 2024", "2024-02-21", "2024-03-01"),
    ("late November", "late November", "2026-11-21", "2026-12-01"),
    ("at the end of March", "the end of March", "2026-03-21", "2026-04-01"),
    ("the beginning of June 2025", "the beginning of June 2025", "2025-06-01", "2025-06-11"),
    ("the end of last month", "the end of last month", "2026-10-21", "2026-11-01"),
    ("early 2025", "early 2025", "2025-01-01", "2025-05-01"),
    ("mid-2025", "mid-2025", "2025-05-01", "2025-09-01"),
    ("late last year", "late last year", "2025-09-01", "2026-01-01"),
    ("the start of the year", "the start of the year", "2026-01-01", "2026-03-01"),
    ("the end of 2025", "the end of 2025", "2025-11-01", "2026-01-01"),
]

QUARTERS: list[Case] = [
    ("Q1", "Q1", "2026-01-01", "2026-04-01"),
    ("q3 planning", "q3", "2026-07-01", "2026-10-01"),
    ("Q4", "Q4", "2026-10-01", "2027-01-01"),
    ("Q4 2025", "Q4 2025", "2025-10-01", "2026-01-01"),
    ("2025 Q2", "2025 Q2", "2025-04-01", "2025-07-01"),
    ("2025-Q2", "2025-Q2", "2025-04-01", "2025-07-01"),
    ("Q3 of last year", "Q3 of last year", "2025-07-01", "2025-10-01"),
    ("the third quarter of 2025", "the third quarter of 2025", "2025-07-01", "2025-10-01"),
]

ISO: list[Case] = [
    ("2026-03-14", "2026-03-14", "2026-03-14", "2026-03-15"),
    ("on 2026/03/14", "2026/03/14", "2026-03-14", "2026-03-15"),
    ("since 2026-03-14T09:30:00Z", "2026-03-14T09:30:00Z", "2026-03-14", "2026-03-15"),
    ("2026-03", "2026-03", "2026-03-01", "2026-04-01"),
    ("in 1999-12", "1999-12", "1999-12-01", "2000-01-01"),
]

CHINESE_DAYS_WEEKS: list[Case] = [
    ("今天做了什么", "今天", "2026-11-26", "2026-11-27"),
    ("昨天", "昨天", "2026-11-25", "2026-11-26"),
    ("前天", "前天", "2026-11-24", "2026-11-25"),
    ("大前天", "大前天", "2026-11-23", "2026-11-24"),
    ("今天早上", "今天早上", "2026-11-26", "2026-11-27"),
    ("昨晚", "昨晚", "2026-11-25", "2026-11-27"),
    ("昨天晚上", "昨天晚上", "2026-11-25", "2026-11-27"),
    ("这周", "这周", "2026-11-23", "2026-11-30"),
    ("本周", "本周", "2026-11-23", "2026-11-30"),
    ("上周", "上周", "2026-11-16", "2026-11-23"),
    ("上个星期", "上个星期", "2026-11-16", "2026-11-23"),
    ("上礼拜", "上礼拜", "2026-11-16", "2026-11-23"),
    ("上上周", "上上周", "2026-11-09", "2026-11-16"),
    ("上周一", "上周一", "2026-11-16", "2026-11-17"),
    ("上周日", "上周日", "2026-11-22", "2026-11-23"),
    ("上星期三", "上星期三", "2026-11-18", "2026-11-19"),
    ("这周五", "这周五", "2026-11-27", "2026-11-28"),
    ("周一", "周一", "2026-11-23", "2026-11-24"),  # the latest, today included
    ("周四", "周四", "2026-11-26", "2026-11-27"),
    ("周五", "周五", "2026-11-20", "2026-11-21"),
    ("星期天", "星期天", "2026-11-22", "2026-11-23"),
    ("礼拜二", "礼拜二", "2026-11-24", "2026-11-25"),
    ("上周末", "上周末", "2026-11-21", "2026-11-23"),
    ("周末", "周末", "2026-11-21", "2026-11-23"),
    ("上周一直在修 redis", "上周", "2026-11-16", "2026-11-23"),  # 一直 is "all along", not Monday
]

CHINESE_RELATIVE: list[Case] = [
    ("这个月", "这个月", "2026-11-01", "2026-12-01"),
    ("本月", "本月", "2026-11-01", "2026-12-01"),
    ("上个月 redis 出了什么问题", "上个月", "2026-10-01", "2026-11-01"),
    ("上月", "上月", "2026-10-01", "2026-11-01"),
    ("今年", "今年", "2026-01-01", "2027-01-01"),
    ("去年", "去年", "2025-01-01", "2026-01-01"),
    ("前年", "前年", "2024-01-01", "2025-01-01"),
    ("大前年", "大前年", "2023-01-01", "2024-01-01"),
    ("三天前", "三天前", "2026-11-23", "2026-11-24"),
    ("5天前", "5天前", "2026-11-21", "2026-11-22"),
    ("十天以前", "十天以前", "2026-11-16", "2026-11-17"),
    ("两周前", "两周前", "2026-11-09", "2026-11-16"),
    ("两个星期前", "两个星期前", "2026-11-09", "2026-11-16"),
    ("三个月前", "三个月前", "2026-08-01", "2026-09-01"),
    ("2年前", "2年前", "2024-01-01", "2025-01-01"),
    ("二十年前", "二十年前", "2006-01-01", "2007-01-01"),
    ("3小时前", "3小时前", "2026-11-26T05:00", "2026-11-26T07:00"),
    ("几天前", "几天前", "2026-11-19", "2026-11-27"),
    ("最近", "最近", "2026-11-12", "2026-11-27"),
    ("近期", "近期", "2026-11-12", "2026-11-27"),
    ("前几天", "前几天", "2026-11-19", "2026-11-27"),
    ("前些日子", "前些日子", "2026-11-19", "2026-11-27"),
    ("这几天", "这几天", "2026-11-19", "2026-11-27"),
    ("最近三天", "最近三天", "2026-11-23", "2026-11-27"),
    ("近一周", "近一周", "2026-11-19", "2026-11-27"),
    ("过去两个月", "过去两个月", "2026-09-26", "2026-11-27"),
    ("过去的一年", "过去的一年", "2025-11-26", "2026-11-27"),
    ("最近24小时", "最近24小时", "2026-11-25T09:00", "2026-11-26T09:00"),
    ("本季度", "本季度", "2026-10-01", "2027-01-01"),
    ("上个季度", "上个季度", "2026-07-01", "2026-10-01"),
]

CHINESE_CALENDAR: list[Case] = [
    ("3月", "3月", "2026-03-01", "2026-04-01"),
    ("三月份", "三月份", "2026-03-01", "2026-04-01"),
    ("12月", "12月", "2025-12-01", "2026-01-01"),  # the latest December that has begun
    ("十一月", "十一月", "2026-11-01", "2026-12-01"),
    ("3月14日", "3月14日", "2026-03-14", "2026-03-15"),
    ("12月25号", "12月25号", "2025-12-25", "2025-12-26"),
    ("十二月二十五号", "十二月二十五号", "2025-12-25", "2025-12-26"),
    ("2025年", "2025年", "2025-01-01", "2026-01-01"),
    ("二〇二五年", "二〇二五年", "2025-01-01", "2026-01-01"),
    ("2025年3月", "2025年3月", "2025-03-01", "2025-04-01"),
    ("2025年3月份", "2025年3月份", "2025-03-01", "2025-04-01"),
    ("2025年3月14日", "2025年3月14日", "2025-03-14", "2025-03-15"),
    ("去年3月", "去年3月", "2025-03-01", "2025-04-01"),
    ("今年二月", "今年二月", "2026-02-01", "2026-03-01"),
    ("去年夏天小林去了哪里？", "去年夏天", "2025-06-01", "2025-09-01"),
    ("今年春天", "今年春天", "2026-03-01", "2026-06-01"),
    ("去年冬天", "去年冬天", "2025-12-01", "2026-03-01"),
    ("今年冬天", "今年冬天", "2026-12-01", "2027-03-01"),
    ("夏天", "夏天", "2026-06-01", "2026-09-01"),
    ("冬季", "冬季", "2025-12-01", "2026-03-01"),
    ("上半年", "上半年", "2026-01-01", "2026-07-01"),
    ("下半年", "下半年", "2026-07-01", "2027-01-01"),
    ("去年下半年", "去年下半年", "2025-07-01", "2026-01-01"),
    ("2025年上半年", "2025年上半年", "2025-01-01", "2025-07-01"),
    ("年初", "年初", "2026-01-01", "2026-03-01"),
    ("年底", "年底", "2026-11-01", "2027-01-01"),
    ("年末", "年末", "2026-11-01", "2027-01-01"),
    ("今年年初", "今年年初", "2026-01-01", "2026-03-01"),
    ("去年底", "去年底", "2025-11-01", "2026-01-01"),
    ("去年年底", "去年年底", "2025-11-01", "2026-01-01"),
    ("2025年初", "2025年初", "2025-01-01", "2025-03-01"),
    ("月初", "月初", "2026-11-01", "2026-11-11"),
    ("月底", "月底", "2026-11-21", "2026-12-01"),
    ("上个月底", "上个月底", "2026-10-21", "2026-11-01"),
    ("本月初", "本月初", "2026-11-01", "2026-11-11"),
    ("3月初", "3月初", "2026-03-01", "2026-03-11"),
    ("3月中旬", "3月中旬", "2026-03-11", "2026-03-21"),
    ("3月下旬", "3月下旬", "2026-03-21", "2026-04-01"),
    ("第三季度", "第三季度", "2026-07-01", "2026-10-01"),
    ("2025年第一季度", "2025年第一季度", "2025-01-01", "2025-04-01"),
    ("2025年Q3", "2025年Q3", "2025-07-01", "2025-10-01"),
]


def _ids(cases: list[Case]) -> list[str]:
    return [case[0] for case in cases]


@pytest.mark.parametrize(("query", "text", "start", "end"), DAYS, ids=_ids(DAYS))
def test_days(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), CALENDAR_UNITS, ids=_ids(CALENDAR_UNITS))
def test_this_and_last_calendar_units(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), AGO, ids=_ids(AGO))
def test_n_units_ago_is_the_unit_holding_that_moment(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), ROLLING, ids=_ids(ROLLING))
def test_rolling_windows_run_to_the_end_of_today(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), EARLIER, ids=_ids(EARLIER))
def test_earlier_this_unit(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


def test_earlier_this_week_on_a_monday_is_that_monday() -> None:
    check("earlier this week", "earlier this week", "2026-11-23", "2026-11-24", now=at("2026-11-23T08:00"))


@pytest.mark.parametrize(("query", "text", "start", "end"), WEEKDAYS, ids=_ids(WEEKDAYS))
def test_weekdays_and_weekends(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


def test_the_weekend_asked_on_a_sunday_is_this_one() -> None:
    sunday = at("2026-11-29T10:00")
    check("over the weekend", "the weekend", "2026-11-28", "2026-11-30", now=sunday)
    check("last weekend", "last weekend", "2026-11-21", "2026-11-23", now=sunday)


@pytest.mark.parametrize(("query", "text", "start", "end"), MONTHS, ids=_ids(MONTHS))
def test_month_names(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


def test_a_month_without_a_year_is_the_latest_that_has_begun() -> None:
    check("in March", "March", "2025-03-01", "2025-04-01", now=at("2026-02-10"))
    check("in March", "March", "2026-03-01", "2026-04-01", now=at("2026-03-02"))
    check("3月", "3月", "2025-03-01", "2025-04-01", now=at("2026-02-10"))
    check("late November", "late November", "2025-11-21", "2025-12-01", now=at("2026-11-05"))
    check("月底", "月底", "2026-10-21", "2026-11-01", now=at("2026-11-05"))


@pytest.mark.parametrize(("query", "text", "start", "end"), DATES, ids=_ids(DATES))
def test_month_and_day(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), YEARS, ids=_ids(YEARS))
def test_years(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), SEASONS, ids=_ids(SEASONS))
def test_seasons(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


def test_seasons_asked_in_january_and_july() -> None:
    january, july = at("2026-01-15"), at("2026-07-15")
    check("this winter", "this winter", "2025-12-01", "2026-03-01", now=january)
    check("last winter", "last winter", "2024-12-01", "2025-03-01", now=january)
    check("last summer", "last summer", "2025-06-01", "2025-09-01", now=july)
    check("in the summer", "the summer", "2026-06-01", "2026-09-01", now=july)


@pytest.mark.parametrize(("query", "text", "start", "end"), PARTS, ids=_ids(PARTS))
def test_parts_of_months_and_years(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), QUARTERS, ids=_ids(QUARTERS))
def test_quarters(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), ISO, ids=_ids(ISO))
def test_iso_dates_and_months(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), CHINESE_DAYS_WEEKS, ids=_ids(CHINESE_DAYS_WEEKS))
def test_chinese_days_and_weeks(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), CHINESE_RELATIVE, ids=_ids(CHINESE_RELATIVE))
def test_chinese_relative_expressions(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


@pytest.mark.parametrize(("query", "text", "start", "end"), CHINESE_CALENDAR, ids=_ids(CHINESE_CALENDAR))
def test_chinese_calendar_expressions(query: str, text: str, start: str, end: str) -> None:
    check(query, text, start, end)


NOT_TIMES = [
    # Month names that are verbs, and other words that only look like times.
    "may I ask about the cache",
    "it may fail under load",
    "this may take a while",
    "May I see the deploy logs?",
    "may 3 workers share a lock",
    "march the pods through the rollout",
    "the last march of the band",
    "wait a second",
    "the second attempt worked",
    # Numbers that count things or name versions, ports and paths.
    "3 retries before giving up",
    "in 3 steps",
    "bump to v2025.1",
    "in v2025.1 the API changed",
    "listen on port 2025",
    "localhost:2025 refuses connections",
    "logs/2026/03/14/app.log",
    "PROJ-2024-12 is blocked",
    "allocated in 2048 bytes",
    "resize in 1920 px steps",
    "in 2030",  # years after next cannot hold memories
    "2026-02-30",
    "2026-13-01",
    # "last", "week", seasons and weekdays that are not times here.
    "the last step of the migration",
    "last time it failed",
    "the last week of March",
    "a week-long outage",
    "weekly report",
    "Spring Boot config",
    "in spring boot apps",
    "spring cleaning",
    "fall back to the replica",
    "in fall back mode",
    "on Mondays we deploy",
    "Mon-Fri on-call",
    "sat on the bench",
    "the last 0 days",
    # Only the future, which no memory comes from.
    "tomorrow",
    "next week",
    # Chinese compounds holding time-like characters.
    "一周一次",
    "每周一开会",
    "周期任务失败",
    "周日志在哪",
    "目前天气",
    "如今天气很好",
    "提前天数",
    "三天前端",
    "最近一次部署",
    "一个月",
    "三个月",
    "前三天",
    "接近三天",
    "明天",
    "下周一",
    "下个月底",
    "明年夏天",
    "每周末",
    "",
]


@pytest.mark.parametrize("query", NOT_TIMES)
def test_ordinary_words_are_not_times(query: str) -> None:
    assert find_time(query, NOW) is None


def test_the_first_expression_wins_and_the_longest_at_the_same_place() -> None:
    check("from last week or yesterday", "last week", "2026-11-16", "2026-11-23")
    check("the day before yesterday", "the day before yesterday", "2026-11-24", "2026-11-25")
    check("上周一和周三", "上周一", "2026-11-16", "2026-11-17")


def test_full_width_digits_are_read_and_spans_fit_the_original() -> None:
    query = "２０２５年３月的事故"
    found = find_time(query, NOW)
    assert found is not None
    assert (found.text, found.start, found.end) == ("２０２５年３月", at("2025-03-01"), at("2025-04-01"))
    assert strip_time(query, found) == "事故"


def test_now_in_another_zone_or_naive_is_read_as_utc() -> None:
    tokyo = timezone(timedelta(hours=9))
    # 2026-11-27 02:00 in Tokyo is still the 26th in UTC.
    check("today", "today", "2026-11-26", "2026-11-27", now=datetime(2026, 11, 27, 2, tzinfo=tokyo))
    check("today", "today", "2026-11-26", "2026-11-27", now=datetime(2026, 11, 26, 9))


STRIPPED = [
    ("what broke in infra last week?", "what broke in infra?"),
    ("What did Ravi do in the spring of 2025?", "What did Ravi do?"),
    ("上个月 redis 出了什么问题", "redis 出了什么问题"),
    ("去年夏天小林去了哪里？", "小林去了哪里？"),
    ("小林在上周一做了什么", "小林做了什么"),
    ("redis上个月出了问题", "redis出了问题"),
    ("上个月的问题", "问题"),
    ("今年以来的变化", "变化"),
    ("Last week, what broke?", "what broke?"),
    ("What broke, last week?", "What broke?"),
    ("last week's outage postmortem", "outage postmortem"),
    ("notes from during the last 3 days about redis", "notes from about redis"),
    ("May I see the logs from last week?", "May I see the logs?"),
    ("deploys   on Monday   that failed", "deploys that failed"),
    ("redis incident back in March", "redis incident"),
    ("2026-03-14T09:30:00Z deploy", "deploy"),
    ("yesterday", ""),
]


@pytest.mark.parametrize(("query", "expected"), STRIPPED)
def test_strip_time_removes_the_expression_and_its_preposition(query: str, expected: str) -> None:
    found = find_time(query, NOW)
    assert found is not None
    assert strip_time(query, found) == expected


# Pieces of expressions, so the property below also reaches the resolvers, not only "no match".
FRAGMENTS = [
    "last", "this", "past", "the", "a", "few", "several", "3", "0", "12", "9999", "days", "weeks", "months",
    "hours", "years", "ago", "in", "during", "on", "of", "early", "mid", "late", "March", "may", "May", "Monday",
    "Sat", "Q1", "q4", "2025", "1999", "2026-02-29", "2024-02-29", "Feb", "29", "29th", "spring", "fall",
    "winter", "weekend", "yesterday", "上", "上上", "周", "星期", "一", "日", "天", "末", "年", "月", "初", "底",
    "去年", "今年", "2025年", "3月", "14日", "十二", "几", "些", "前", "最近", "过去", "这", "个", "季度", "第",
    "下半年", "上旬", "号", ",", ".", "?", ":", "/", "-", "的", "在",
]  # fmt: skip
queries = st.one_of(
    st.text(max_size=60),
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map(" ".join),
    st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=6).map("".join),
)
moments = st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 12, 31), timezones=st.just(UTC))


@settings(max_examples=300, deadline=None)
@given(query=queries, now=moments)
def test_any_text_gives_a_well_formed_range_or_none(query: str, now: datetime) -> None:
    found = find_time(query, now)
    if found is None:
        return
    assert isinstance(found, TimeRange)
    assert found.start < found.end
    assert found.start.utcoffset() == timedelta(0) and found.end.utcoffset() == timedelta(0)
    assert found.text and query[found.span[0] : found.span[1]] == found.text
    stripped = strip_time(query, found)
    assert stripped == stripped.strip() and "  " not in stripped
