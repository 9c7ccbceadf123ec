"""Time expressions in recall queries: find one, resolve it to a UTC range, strip it.

``find_time("what broke in infra last week?", now)`` gives the range of last week, so
recall can prefer memories created then; ``strip_time`` gives the query back without the
expression, for keyword and vector search. English and Chinese are understood.

Every rule resolves by the same conventions:

* Calendars are UTC. A day runs from 00:00 to 00:00 UTC, a week starts on Monday, a
  season is meteorological and northern (spring Mar-May, summer Jun-Aug, autumn Sep-Nov,
  winter Dec-Feb) and a winter belongs to the year of its December.
* Ranges are half-open, [start, end). A named calendar unit ("this week", "Q4", "2025年")
  is the whole unit, even the part of it still to come.
* A name without a year ("in March", "late November", "Q1", "3月14日", "年底", "周一",
  "in the summer") is the most recent one that has begun by ``now``: "in March" asked on
  2026-02-10 is March 2025, asked on 2026-03-02 it is March 2026.
* Rolling windows ("the last 3 days", "past week", "recently", "最近两周") run from
  midnight N units before today to the end of today, so they hold at least N whole units
  back from ``now``. Hours are the exception: "the past 24 hours" ends at ``now``.
* "N units ago" is the calendar unit holding that moment: "3 days ago" is one day,
  "2 weeks ago" a Monday-to-Sunday week, "3 months ago" a month, "2 years ago" a year.
  "N hours ago" is the two hours around that moment.
* A vague count ("a few days ago", "the past several weeks", "前几天", "这几天") becomes a
  rolling window of seven days, or of three of any other unit.
* The querier's time zone is unknown, so parts of a day widen to the day: "this morning" is
  today, and evenings and nights ("last night", "昨晚", "tonight") take the day and the
  next, because a local evening crosses UTC midnight for half the world.
* Phrases about the future only (tomorrow, next week, 明天, 下个月) are not recognised:
  recall ranks memories by when they were created, and none were created in the future.

Words that only sometimes mean a time must come with context. A month name counts after
in/during/throughout/around, with a year or a day, after last/this, or with early/mid/late;
"may" and "march" are verbs too, so after last/this, or before a bare day, they must be
capitalised (or the day be an ordinal or follow "on"). A season needs a preposition, a
year or last/this, so "Spring Boot" stays a framework. A bare year needs in/during/
throughout/around or "the year", must lie between 1900 and next year, and must not count
something ("in 2048 bytes"). Numbers glued to dots, colons, slashes or letters (v2025.1,
:2025, build2025) are never dates. Chinese weekday and part words skip common compounds
(一周一次, 每周一, 周期, 目前天气, 年初次, 三天前端).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta


@dataclass(frozen=True)
class TimeRange:
    """A time expression found in a query and the UTC range it names."""

    start: datetime  # inclusive, UTC, tz-aware
    end: datetime  # exclusive, UTC, tz-aware
    text: str  # the matched expression as it appears in the query
    span: tuple[int, int]  # its character span in the query


_Bounds = tuple[datetime, datetime]
_Resolver = Callable[[re.Match[str], datetime], _Bounds | None]


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str]
    resolve: _Resolver


_RULES: list[_Rule] = []

# English patterns: ASCII classes, so \w and \b treat Chinese as a boundary ("上周的meeting").
_EN = re.IGNORECASE | re.ASCII
_CN = 0


def _rule(pattern: str, flags: int = _EN) -> Callable[[_Resolver], _Resolver]:
    """Register a pattern; its group ``t`` is the expression, anything around it is context."""

    def register(resolve: _Resolver) -> _Resolver:
        _RULES.append(_Rule(re.compile(pattern, flags), resolve))
        return resolve

    return register


def find_time(query: str, now: datetime) -> TimeRange | None:
    """The first time expression in ``query``, resolved against ``now`` (tz-aware UTC); None when there is none.

    "First" is the leftmost; of expressions starting at the same place the longest wins, so
    "the day before yesterday" beats "yesterday" and "上周一" beats "上周". A naive ``now``
    is taken to be UTC, as everywhere else in engram.
    """
    now = now.replace(tzinfo=UTC) if now.tzinfo is None else now.astimezone(UTC)
    # Full-width digits become ASCII ones, one character for one, so spans still fit ``query``.
    haystack = query.translate(_WIDE_DIGITS)
    best: tuple[int, int, int] | None = None
    found: TimeRange | None = None
    for order, rule in enumerate(_RULES):
        for match in rule.pattern.finditer(haystack):
            start, end = match.span("t")
            if best is not None and start > best[0]:
                break
            bounds = _resolve(rule, match, now)
            if bounds is None:
                continue
            key = (start, start - end, order)
            if best is None or key < best:
                best = key
                found = TimeRange(bounds[0], bounds[1], query[start:end], (start, end))
            break
    return found


def strip_time(query: str, found: TimeRange) -> str:
    """The query without the expression (and dangling prepositions like 'in', 'during', '的'), whitespace tidied."""
    start, end = found.span
    head = _DANGLING_BEFORE.sub("", query[:start])
    tail = _DANGLING_AFTER.sub("", query[end:])
    # Glue with a space only where two words would otherwise fuse; Chinese needs none.
    glue = ""
    if head and tail and not head[-1].isspace() and not tail[0].isspace():
        glue = "" if _CJK_CHAR.match(head[-1]) or _CJK_CHAR.match(tail[0]) else " "
    text = _SPACES.sub(" ", head + glue + tail)
    text = _SPACE_BEFORE_PUNCTUATION.sub("", text)
    # A comma that led into the expression is left hanging before the end of the sentence.
    text = _HANGING_COMMAS.sub("", text)
    return text.strip(" ,;:，；：、")


def _resolve(rule: _Rule, match: re.Match[str], now: datetime) -> _Bounds | None:
    try:
        return rule.resolve(match, now)
    except (ValueError, OverflowError):
        # Dates that do not exist (February 30, 2026-13) and counts that leave the
        # calendar ("99999 years ago") are not time expressions after all.
        return None


_WIDE_DIGITS = str.maketrans("０１２３４５６７８９", "0123456789")
_CJK_CHAR = re.compile(r"[\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef]")
_DANGLING_BEFORE = re.compile(
    r"(?:(?<![\w-])(?:back\s+in|sometime\s+in|as\s+of|in|during|on|at|from|since|over|within|throughout|for|"
    r"around|of|by)|[在于从自])\s*$",
    re.IGNORECASE | re.ASCII,
)
# The lookbehinds and possessive runs make a failed try cost nothing inside a long run of spaces or commas.
_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"(?<!\s)\s++(?=[,.;:!?，。；：！？、])")
_HANGING_COMMAS = re.compile(r"(?<![,;:，；：、])[,;:，；：、]++(?=[.!?。！？]|$)")
_DANGLING_AFTER = re.compile(r"^(?:['’]s(?![A-Za-z0-9_])|(?:的时候|时候|期间|以来|的)+)")


# --- calendar arithmetic -------------------------------------------------------------


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def _days(first: date, count: int = 1) -> _Bounds:
    return _midnight(first), _midnight(first + timedelta(days=count))


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + month - 1 + delta
    return index // 12, index % 12 + 1


def _months(year: int, month: int, count: int = 1) -> _Bounds:
    end_year, end_month = _add_months(year, month, count)
    return datetime(year, month, 1, tzinfo=UTC), datetime(end_year, end_month, 1, tzinfo=UTC)


def _week(day: date, back: int = 0) -> _Bounds:
    """The Monday-to-Sunday week holding ``day``, or ``back`` weeks before it."""
    return _days(_monday(day, back), 7)


def _monday(day: date, back: int = 0) -> date:
    return day - timedelta(days=day.weekday() + 7 * back)


def _months_before(day: date, count: int) -> date:
    year, month = _add_months(day.year, day.month, -count)
    # March 31 minus one month is the last day of February.
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _latest(make: Callable[[int], _Bounds], now: datetime) -> _Bounds:
    """The most recent yearly period that has begun by ``now``; ``make`` builds it for a year."""
    # Nine years always reach a February 29 (2100 is not a leap year).
    for year in range(now.year, now.year - 9, -1):
        try:
            bounds = make(year)
        except ValueError:
            continue
        if bounds[0] <= now:
            return bounds
    raise ValueError("no such period has begun")


def _latest_month(make: Callable[[int, int], _Bounds], now: datetime) -> _Bounds:
    """The most recent monthly period that has begun by ``now``; ``make`` builds it for a month."""
    for back in range(13):
        bounds = make(*_add_months(now.year, now.month, -back))
        if bounds[0] <= now:
            return bounds
    raise ValueError("no such period has begun")


def _calendar(unit: str, back: int, now: datetime) -> _Bounds:
    """This (``back`` 0) or an earlier calendar week, month, quarter or year."""
    today = now.date()
    if unit == "week":
        return _week(today, back)
    if unit == "month":
        return _months(*_add_months(today.year, today.month, -back))
    if unit == "quarter":
        first = 3 * ((today.month - 1) // 3) + 1
        return _months(*_add_months(today.year, first, -3 * back), 3)
    return _months(today.year - back, 1, 12)


# A vague count, by unit: "a few days" is about a week, "a few months" about three.
_FEW = {"hour": 3, "day": 7, "week": 3, "month": 3, "year": 3}


def _rolling(unit: str, count: int | None, now: datetime) -> _Bounds | None:
    """From midnight ``count`` units before today to the end of today (hours: to ``now``)."""
    count = _FEW[unit] if count is None else count
    if count <= 0:
        return None
    if unit == "hour":
        return now - timedelta(hours=count), now
    today = now.date()
    if unit == "day":
        first = today - timedelta(days=count)
    elif unit == "week":
        first = today - timedelta(weeks=count)
    else:
        first = _months_before(today, count * (12 if unit == "year" else 1))
    return _midnight(first), _midnight(today + timedelta(days=1))


def _ago(unit: str, count: int | None, now: datetime) -> _Bounds | None:
    """The calendar unit holding the moment ``count`` units before ``now``."""
    if count is None:
        return _rolling(unit, None, now)
    today = now.date()
    if unit == "hour":
        moment = now - timedelta(hours=count)
        return moment - timedelta(hours=1), moment + timedelta(hours=1)
    if unit == "day":
        return _days(today - timedelta(days=count))
    if unit == "week":
        return _week(today - timedelta(weeks=count))
    if unit == "month":
        return _months(*_add_months(today.year, today.month, -count))
    return _months(today.year - count, 1, 12)


_MONTH_PARTS = {"early": (1, 11), "mid": (11, 21), "late": (21, 0)}
# Parts of a year, as (first month, months): thirds for early/mid/late, two months for
# the start and the end, which is how "年初", "年底" and "the end of 2025" are used.
_YEAR_PARTS = {"early": (1, 4), "mid": (5, 4), "late": (9, 4), "start": (1, 2), "end": (11, 2)}
_PART_WORDS = {
    "early": "early", "mid": "mid", "middle": "mid", "late": "late", "start": "start", "beginning": "start",
    "end": "end", "初": "start", "底": "end", "末": "end", "上旬": "early", "中旬": "mid", "下旬": "late",
}  # fmt: skip


def _month_part(year: int, month: int, part: str) -> _Bounds:
    """Days 1-10, 11-20 or 21-end of a month; a month's start is early, its end late."""
    first, stop = _MONTH_PARTS[{"start": "early", "end": "late"}.get(part, part)]
    end = datetime(year, month, stop, tzinfo=UTC) if stop else _months(year, month)[1]
    return datetime(year, month, first, tzinfo=UTC), end


def _year_part(year: int, part: str) -> _Bounds:
    first, count = _YEAR_PARTS[part]
    return _months(year, first, count)


def _season(first_month: int, year: int) -> _Bounds:
    return _months(year, first_month, 3)


def _season_latest(first_month: int, now: datetime) -> _Bounds:
    return _latest(lambda year: _season(first_month, year), now)


def _season_last(first_month: int, now: datetime) -> _Bounds:
    """The latest such season that is over: "last summer" asked in July is the year before's."""
    latest = _season_latest(first_month, now)
    return _season(first_month, latest[0].year - 1) if now < latest[1] else latest


def _season_this(first_month: int, now: datetime) -> _Bounds:
    """The season we are in, else the one that starts in this calendar year."""
    previous = _season(first_month, now.year - 1)  # only a winter reaches into the next year
    if previous[0] <= now < previous[1]:
        return previous
    return _season(first_month, now.year)


# --- reading the words -----------------------------------------------------------------


def _g(match: re.Match[str], name: str) -> str | None:
    """A named group's text, or None when this pattern lacks it or it did not take part."""
    return match.groupdict().get(name)


def _words(text: str) -> str:
    return " ".join(text.lower().split())


_EN_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple": 2,
}  # fmt: skip
_CN_DIGITS = {
    "零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9,
}  # fmt: skip
_VAGUE = frozenset({"few", "several", "几", "些"})


def _count(text: str) -> int | None:
    """A count as written (3, three, a couple of, 三, 二十五); None for a vague one (a few, 几)."""
    key = re.sub(r"^an?\s+|\s+of$", "", _words(text))
    if key in _VAGUE:
        return None
    if key.isdecimal():
        return int(key)
    if key in _EN_NUMBERS:
        return _EN_NUMBERS[key]
    return _cn_number(key)


def _cn_number(text: str) -> int:
    """Chinese numerals up to the hundreds: 十 = 10, 二十五 = 25, 一百零五 = 105."""
    total = current = 0
    for char in text:
        if char in _CN_DIGITS:
            current = _CN_DIGITS[char]
        elif char in "十百":
            total += (current or 1) * (10 if char == "十" else 100)
            current = 0
        else:
            raise ValueError(f"not a Chinese numeral: {text!r}")
    return total + current


def _cn_year_digits(text: str) -> int:
    """A year written digit by digit: 二〇二五 = 2025."""
    return int("".join(str(_CN_DIGITS[char]) for char in text))


def _unit(text: str) -> str:
    """The canonical unit of an English or Chinese unit word."""
    word = _words(text).rstrip("s")
    if word in ("hour", "day", "week", "month", "year"):
        return word
    if "时" in word:
        return "hour"
    if "月" in word:
        return "month"
    if "年" in word:
        return "year"
    if word[0] in "天日":
        return "day"
    return "week"  # 周, 星期, 礼拜


_MONTH_NAMES = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_SEASON_STARTS = {"spr": 3, "sum": 6, "aut": 9, "fal": 9, "win": 12, "春": 3, "夏": 6, "秋": 9, "冬": 12}


def _month_number(name: str) -> int:
    return _MONTH_NAMES.index(name[:3].lower()) + 1


def _weekday_number(name: str) -> int:
    if name in "一二三四五六日天":
        return min("一二三四五六日天".index(name), 6)
    return _WEEKDAY_NAMES.index(name[:3].lower())


def _season_start(name: str) -> int:
    return _SEASON_STARTS[name[:1] if name[0] in "春夏秋冬" else name[:3].lower()]


def _verb_month(match: re.Match[str]) -> bool:
    """True for "may" or "march" written in lower case, which are more often verbs."""
    name = _g(match, "mon") or ""
    # Case-sensitive on purpose: a capital ("May 3", "last March") is how people write the month.
    return name in ("may", "march")


def _year_ref(match: re.Match[str], now: datetime) -> int | None:
    """The year written next to a month or season: 2025, "last year", "this year"."""
    if year := _g(match, "year"):
        return int(year)
    if relative := _g(match, "yrel"):
        return now.year - (relative.lower() == "last")
    return None


# --- English ---------------------------------------------------------------------------

_L = r"(?<![\w-])"  # a word starts here
_N = r"(?<![\w.:/-])"  # a number starts here, not inside v2025.1, :8080 or a path
_R = r"(?![\w-]|[.:/]\w)"  # and ends here: not "week-long", "2025.1", "14:00"
_COUNT = (
    r"(?P<n>\d{1,4}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
    r"|(?:a\s+)?couple(?:\s+of)?|(?:a\s+)?few|several)"
)
_UNIT = r"(?P<u>hour|day|week|month|year)s?"
_WEEKDAY = (
    r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday"
    r"|(?-i:Mon|Tues|Tue|Wed|Thurs|Thur|Thu|Fri|Sat|Sun))"
)
_MONTH = (
    r"(?P<mon>january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)"
)
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_YEAR_OF = rf"(?:,?\s+(?:of\s+)?{_YEAR}|\s+(?:of\s+)?(?P<yrel>last|this)\s+year)"
# Not "fall back", "in spring boot apps": phrasal verbs and the Java framework.
_SEASON = (
    r"(?P<season>spring(?!\s+(?:boot|cloud|framework|security|data|batch|mvc|beans?|config|ai)(?!\w))"
    r"|fall(?!\s+(?:back|through|over|off|out|behind|apart)(?!\w))|summer|autumn|winter)"
)
_NOT_A_QUANTITY = (
    r"(?!\s*(?:%|(?:px|pixels?|bytes?|[kmgt]i?b|ms|secs?|seconds?|mins?|minutes?|hours?|lines?|rows?|items?"
    r"|records?|steps?|times|tokens?|users?|requests?|files?|words?|chars?|characters?|x)(?!\w)))"
)


@_rule(
    rf"{_L}(?P<t>(?P<day>(?:the\s+)?day\s+before\s+yesterday|yesterday|today)"
    rf"(?:\s+(?P<part>morning|afternoon|evening|night))?|(?P<eve>tonight|last\s+night)"
    rf"|this\s+(?P<part2>morning|afternoon|evening)){_R}"
)
def _en_day(match: re.Match[str], now: datetime) -> _Bounds:
    """today, yesterday, the day before yesterday, with morning/evening…; tonight; last night."""
    word = _words(_g(match, "day") or _g(match, "eve") or "today")
    back = 2 if "before" in word else 1 if word in ("yesterday", "last night") else 0
    part = _words(_g(match, "part") or _g(match, "part2") or "")
    night = _g(match, "eve") is not None or part in ("evening", "night")
    return _days(now.date() - timedelta(days=back), 2 if night else 1)


@_rule(
    rf"{_L}(?P<t>(?:(?:the\s+)?(?P<this>this|current)|(?:the\s+)?previous|last)\s+(?P<u>week|month|quarter|year))"
    rf"{_R}(?!\s+of{_R})"
)
@_rule(rf"{_L}(?P<t>(?:the\s+)?(?P<u>week|month|year)\s+(?P<before>before\s+last)){_R}")
def _en_calendar(match: re.Match[str], now: datetime) -> _Bounds:
    """this/last/previous week, month, quarter, year (calendar units); the week before last."""
    back = 0 if _g(match, "this") else 2 if _g(match, "before") else 1
    return _calendar(_words(match["u"]), back, now)


@_rule(rf"{_L}(?P<t>(?:the\s+last|(?:(?:the|this)\s+)?past)\s+(?P<u>week|month|year)){_R}(?!\s+of{_R})")
@_rule(rf"{_N}(?P<t>(?:the\s+)?(?:last|past|previous)\s+{_COUNT}\s+{_UNIT}){_R}")
def _en_rolling(match: re.Match[str], now: datetime) -> _Bounds | None:
    """the last/past N hours, days, weeks, months, years; past week, the last month (rolling)."""
    return _rolling(_unit(match["u"]), _count(_g(match, "n") or "1"), now)


@_rule(rf"{_N}(?P<t>{_COUNT}\s+{_UNIT}\s+ago){_R}")
def _en_ago(match: re.Match[str], now: datetime) -> _Bounds | None:
    """N hours/days/weeks/months/years ago, a week ago, a few days ago."""
    return _ago(_unit(match["u"]), _count(match["n"]), now)


@_rule(rf"{_L}(?P<t>recently|lately){_R}")
def _en_recently(match: re.Match[str], now: datetime) -> _Bounds | None:
    """recently, lately: the last 14 days."""
    return _rolling("day", 14, now)


@_rule(rf"{_L}(?P<t>earlier\s+(?:this\s+(?P<u>week|month|year)|today)){_R}")
def _en_earlier(match: re.Match[str], now: datetime) -> _Bounds:
    """earlier this week/month/year: from the unit's start to the start of today (earlier today: today)."""
    today = now.date()
    if match["u"] is None:
        return _days(today)
    start = _calendar(_words(match["u"]), 0, now)[0]
    # On the unit's first day there is no "earlier" yet; take that day rather than nothing.
    return start, max(_midnight(today), start + timedelta(days=1))


@_rule(rf"{_L}(?P<t>(?P<mod>last|this\s+past|past|this)\s+{_WEEKDAY}){_R}")
@_rule(rf"{_L}(?P<t>{_WEEKDAY}\s+(?:of\s+)?(?P<rel>last|this)\s+week){_R}")
@_rule(rf"{_L}on\s+(?P<t>{_WEEKDAY}){_R}")
def _en_weekday(match: re.Match[str], now: datetime) -> _Bounds:
    """last Monday (the latest before today), on Monday (the latest, today included),
    this Monday / Monday this week (this week's), Monday last week (last week's)."""
    today = now.date()
    weekday = _weekday_number(match["wd"])
    week = _words(_g(match, "rel") or "")
    modifier = _words(_g(match, "mod") or "")
    if week or modifier == "this":
        return _days(_monday(today, 1 if week == "last" else 0) + timedelta(days=weekday))
    back = (today.weekday() - weekday) % 7
    if modifier and back == 0:  # "last Thursday" asked on a Thursday is a week ago
        back = 7
    return _days(today - timedelta(days=back))


@_rule(rf"{_L}(?P<t>(?P<mod>last|this\s+past|past|this)\s+weekend){_R}")
@_rule(rf"{_L}(?:over|on|at|during)\s+(?P<t>the\s+weekend){_R}")
def _en_weekend(match: re.Match[str], now: datetime) -> _Bounds:
    """this weekend (this week's Saturday and Sunday), last weekend (last week's),
    over the weekend (the latest that has begun)."""
    relative = _words(_g(match, "mod") or "the")
    return _weekend(0 if relative == "this" else 1 if relative != "the" else None, now)


def _weekend(back: int | None, now: datetime) -> _Bounds:
    """Saturday and Sunday of this (0) or last (1) week; None: the latest that has begun."""
    today = now.date()
    if back is None:
        back = 0 if today.weekday() >= 5 else 1
    return _days(_monday(today, back) + timedelta(days=5), 2)


@_rule(rf"{_L}(?:in|during|throughout|around|back\s+in|sometime\s+in)\s+(?P<t>{_MONTH}{_YEAR_OF}?){_R}")
@_rule(rf"{_L}(?P<t>{_MONTH}{_YEAR_OF}){_R}")
@_rule(rf"{_L}(?P<t>(?P<mod>last|this)\s+{_MONTH}){_R}")
def _en_month(match: re.Match[str], now: datetime) -> _Bounds | None:
    """in March (the latest March that has begun), March 2025, March of last year,
    this March (this year's), last March (the latest before this month)."""
    month = _month_number(match["mon"])
    if (year := _year_ref(match, now)) is not None:
        return _months(year, month)
    modifier = _g(match, "mod")
    if modifier is None:
        return _latest(lambda y: _months(y, month), now)
    if _verb_month(match):  # "this may fail", "the last march"
        return None
    if modifier.lower() == "this":
        return _months(now.year, month)
    return _months(now.year if month < now.month else now.year - 1, month)


@_rule(rf"{_L}(?:(?P<on>on)\s+)?(?P<t>{_MONTH}\s+(?P<day>\d{{1,2}})(?P<ord>st|nd|rd|th)?(?:,?\s+{_YEAR})?){_R}")
@_rule(
    rf"{_N}(?:(?P<on>on)\s+)?(?P<t>(?:the\s+)?(?P<day>\d{{1,2}})(?P<ord>st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}"
    rf"(?:,?\s+{_YEAR})?){_R}"
)
def _en_date(match: re.Match[str], now: datetime) -> _Bounds | None:
    """March 14, Mar 14th, 2025; 14 March 2025; the 14th of March: that day, without a year the latest one."""
    if _verb_month(match) and not (_g(match, "on") or _g(match, "ord") or _g(match, "year")):
        return None  # "it may 3", "we march 10 miles"
    month, day = _month_number(match["mon"]), int(match["day"])
    if year := _g(match, "year"):
        return _days(date(int(year), month, day))
    return _latest(lambda y: _days(date(y, month, day)), now)


@_rule(rf"{_L}(?P<t>(?P<part>early|mid|late)(?:\s+|-){_MONTH}{_YEAR_OF}?){_R}")
@_rule(rf"{_L}(?P<t>(?:the\s+)?(?P<part>start|beginning|middle|end)\s+of\s+{_MONTH}{_YEAR_OF}?){_R}")
@_rule(
    rf"{_L}(?P<t>(?P<part>early|mid|late)(?:\s+|-)(?:(?P<mrel>last|this)\s+month|{_YEAR}|(?P<yrel>last|this)\s+year))"
    rf"{_R}"
)
@_rule(
    rf"{_L}(?P<t>(?:the\s+)?(?P<part>start|beginning|middle|end)\s+of\s+"
    rf"(?:(?P<mrel>last|this|the)\s+month|{_YEAR}|(?P<yrel>last|this|the)\s+year)){_R}"
)
def _en_part(match: re.Match[str], now: datetime) -> _Bounds:
    """early/mid/late March (days 1-10, 11-20, 21-end), the start/middle/end of March, late last month;
    early/mid/late 2025 (thirds of the year), the start/end of 2025 (Jan-Feb, Nov-Dec)."""
    part = _PART_WORDS[match["part"].lower()]
    if month_name := _g(match, "mon"):
        month = _month_number(month_name)
        if (year := _year_ref(match, now)) is not None:
            return _month_part(year, month, part)
        return _latest(lambda y: _month_part(y, month, part), now)
    if relative := _g(match, "mrel"):
        year, month = _add_months(now.year, now.month, -(relative.lower() == "last"))
        return _month_part(year, month, part)
    year = _year_ref(match, now)
    return _year_part(now.year if year is None else year, part)


@_rule(rf"{_L}(?:in|during|throughout|around)\s+(?P<t>(?:the\s+year\s+)?{_YEAR}){_R}{_NOT_A_QUANTITY}")
@_rule(rf"{_L}(?P<t>the\s+year\s+{_YEAR}){_R}")
def _en_year(match: re.Match[str], now: datetime) -> _Bounds | None:
    """in 2025, during 2024, the year 2023: the calendar year, if between 1900 and next year."""
    year = int(match["year"])
    return _months(year, 1, 12) if year <= now.year + 1 else None


@_rule(rf"{_L}(?P<t>(?P<mod>last|this\s+past|past|this)\s+{_SEASON}){_R}")
@_rule(rf"{_L}(?:in|during|over|throughout)\s+(?P<t>(?:the\s+)?{_SEASON}{_YEAR_OF}?){_R}")
@_rule(rf"{_L}(?P<t>(?:the\s+)?{_SEASON}{_YEAR_OF}){_R}")
def _en_season(match: re.Match[str], now: datetime) -> _Bounds:
    """in the summer (the latest begun), the summer of 2025, last summer (the latest over),
    this winter (the one we are in, else this year's)."""
    first = _season_start(match["season"])
    if (year := _year_ref(match, now)) is not None:
        return _season(first, year)
    modifier = _words(_g(match, "mod") or "")
    if modifier == "this":
        return _season_this(first, now)
    if modifier:
        return _season_last(first, now)
    return _season_latest(first, now)


@_rule(rf"{_L}(?P<t>q(?P<q>[1-4])(?:\s+(?:of\s+)?{_YEAR}|\s+(?:of\s+)?(?P<yrel>last|this)\s+year)?){_R}")
@_rule(rf"{_N}(?P<t>{_YEAR}[\s-]?q(?P<q>[1-4])){_R}")
@_rule(
    rf"{_L}(?P<t>(?:the\s+)?(?P<nth>first|second|third|fourth)\s+quarter"
    rf"(?:\s+of\s+(?:{_YEAR}|(?P<yrel>last|this)\s+year))?){_R}"
)
def _en_quarter(match: re.Match[str], now: datetime) -> _Bounds:
    """Q1-Q4 with or without a year (2025 Q3, Q3 of last year), the third quarter of 2025."""
    nth = _g(match, "nth")
    quarter = int(match["q"]) if nth is None else ("first", "second", "third", "fourth").index(nth.lower()) + 1
    if (year := _year_ref(match, now)) is not None:
        return _months(year, 3 * quarter - 2, 3)
    return _latest(lambda y: _months(y, 3 * quarter - 2, 3), now)


@_rule(
    rf"{_N}(?P<t>(?P<y>\d{{4}})(?P<sep>[-/])(?P<m>\d{{1,2}})(?P=sep)(?P<d>\d{{1,2}})"
    r"(?:T\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?)"
    rf"{_R}"
)
@_rule(rf"{_N}(?P<t>(?P<y>\d{{4}})-(?P<m>\d\d)){_R}")
def _iso(match: re.Match[str], now: datetime) -> _Bounds:
    """2026-03-14 (also 2026/03/14): that day; 2026-03: that month.

    A timestamp (2026-03-14T09:30Z) names the day as written; the match takes its time
    too, so that stripping leaves nothing of it behind.
    """
    year, month = int(match["y"]), int(match["m"])
    if day := _g(match, "d"):
        return _days(date(year, month, int(day)))
    return _months(year, month)


# --- Chinese ---------------------------------------------------------------------------

_CN_COUNT = r"(?P<n>\d{1,4}|[零〇一二两三四五六七八九十百]{1,5}|几|些)"
_CN_UNIT = r"(?P<u>个?小时|天|日|周|个?星期|个?礼拜|个月|年)"
_CN_MONTH = r"(?<!\d)(?P<m>1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])月份?"
_CN_DAY = r"(?P<d>3[01]|[12]\d|0?[1-9]|三十一?|二?十[一二三四五六七八九]?|[一二三四五六七八九])[日号]"
# 初, 底, 末 and 旬 after a month or year, but not 初次 (first time), 底层 (low level), 末尾 (end).
_CN_START = r"初(?![次始步级稿版衷心学中期见])"
_CN_END = r"底(?![层部线下座])|末(?![尾端])"
_CN_MONTH_PART = rf"(?P<mpart>上旬|中旬|下旬|{_CN_START}|{_CN_END})"
_CN_SEASON = r"(?P<season>春天|夏天|秋天|冬天|春季|夏季|秋季|冬季)"
# After 周/星期/礼拜 + weekday: not 上周一直 (all last week), 周日志 (weekly log) and the like.
_CN_WEEKDAY_END = r"(?![直起共下些点次个样切定般致志程期常记历报])"
# 周 not starting 周期 (period), 周边 (surroundings), 周年 (anniversary)...
_CN_WEEK_END = r"(?![期边围到全年岁刊长])"
# Before a bare weekday or 周末: not 每周一 (every Monday), 一周一次 (once a week), 下周 (next week).
_CN_NOT_COUNTED = r"(?<![每一两二三四五六七八九十几个上下这本前后隔])"


@_rule(
    r"(?<![提目当之以向往眼面事如])(?P<t>(?P<day>大前天|前天|昨天|昨日|今天|今日)"
    r"(?P<part>早上|上午|中午|下午|傍晚|晚上|夜里)?|(?P<short>今|昨)(?P<part2>早上|早|晚上|晚|夜))",
    _CN,
)
def _cn_day(match: re.Match[str], now: datetime) -> _Bounds:
    """今天, 昨天, 前天, 大前天, with 早上/下午/晚上…; 今早, 今晚, 昨晚, 昨夜."""
    word = _g(match, "day") or _g(match, "short") or "今"
    back = 3 if word == "大前天" else 2 if word == "前天" else 1 if word[0] == "昨" else 0
    part = _g(match, "part") or _g(match, "part2") or ""
    night = any(char in part for char in "晚夜")
    return _days(now.date() - timedelta(days=back), 2 if night else 1)


@_rule(
    r"(?P<t>(?P<w>上上周|上上个?星期|上上个?礼拜|上周|上一周|上个?星期|上个?礼拜|这周|本周|这一周|这个?星期|本星期"
    rf"|这个?礼拜){_CN_WEEK_END}(?:(?P<wd>[一二三四五六日天]){_CN_WEEKDAY_END}|(?P<end>末))?)",
    _CN,
)
def _cn_week(match: re.Match[str], now: datetime) -> _Bounds:
    """这周/本周, 上周/上个星期/上礼拜, 上上周: the calendar week.

    上周一…上周日 is that day of the week, 上周末 its Saturday and Sunday.
    """
    word = match["w"]
    back = 2 if word.startswith("上上") else 1 if word.startswith("上") else 0
    if weekday := _g(match, "wd"):
        return _days(_monday(now.date(), back) + timedelta(days=_weekday_number(weekday)))
    if _g(match, "end"):
        return _weekend(back, now)
    return _week(now.date(), back)


@_rule(rf"{_CN_NOT_COUNTED}(?P<t>(?:周|星期|礼拜)(?P<wd>[一二三四五六日天])){_CN_WEEKDAY_END}", _CN)
@_rule(rf"{_CN_NOT_COUNTED}(?P<t>周末)", _CN)
def _cn_weekday(match: re.Match[str], now: datetime) -> _Bounds:
    """周一/星期一/礼拜一…: the latest such day, today included; 周末: the latest weekend begun."""
    weekday = _g(match, "wd")
    if weekday is None:
        return _weekend(None, now)
    today = now.date()
    return _days(today - timedelta(days=(today.weekday() - _weekday_number(weekday)) % 7))


@_rule(rf"(?P<t>(?P<mrel>上上个月|上上月|上个月|上月|这个月|本月|这月)(?:{_CN_MONTH_PART})?)", _CN)
def _cn_month_relative(match: re.Match[str], now: datetime) -> _Bounds:
    """这个月/本月, 上个月, 上上个月: the calendar month; with 初/底/上旬…: that part of it."""
    relative = match["mrel"]
    back = 2 if relative.startswith("上上") else 1 if relative.startswith("上") else 0
    year, month = _add_months(now.year, now.month, -back)
    if part := _g(match, "mpart"):
        return _month_part(year, month, _PART_WORDS[part])
    return _months(year, month)


@_rule(
    r"(?P<t>(?P<yr>大前年|前年|去年|今年|本年|(?<!\d)(?P<yabs>(?:19|20)\d\d)年"
    r"|(?<![零〇一二三四五六七八九])(?P<ycn>[一二][零〇一二三四五六七八九]{3})年)"
    rf"(?:{_CN_MONTH}(?:{_CN_DAY}|{_CN_MONTH_PART})?|(?P<half>上半年|下半年)|年?(?P<ypart>{_CN_START}|{_CN_END})"
    rf"|{_CN_SEASON}|(?P<q>第?[一二三四1-4]季度|[Qq][1-4](?![0-9A-Za-z])))?)",
    _CN,
)
def _cn_year(match: re.Match[str], now: datetime) -> _Bounds:
    """今年, 去年, 前年, 大前年, 2025年, 二〇二五年, and under them: 3月, 3月14日, 3月底, 上半年/下半年,
    年初 (Jan-Feb), 年底 (Nov-Dec), 夏天, 第三季度/Q3. 今年冬天 is this winter (see "this winter")."""
    if absolute := _g(match, "yabs"):
        year = int(absolute)
    elif digits := _g(match, "ycn"):
        year = _cn_year_digits(digits)
    else:
        year = now.year - {"今年": 0, "本年": 0, "去年": 1, "前年": 2, "大前年": 3}[match["yr"]]
    if month_text := _g(match, "m"):
        month = _count(month_text) or 0
        if day := _g(match, "d"):
            return _days(date(year, month, _count(day) or 0))
        if part := _g(match, "mpart"):
            return _month_part(year, month, _PART_WORDS[part])
        return _months(year, month)
    if half := _g(match, "half"):
        return _months(year, 1 if half == "上半年" else 7, 6)
    if part := _g(match, "ypart"):
        return _year_part(year, _PART_WORDS[part])
    if season := _g(match, "season"):
        first = _season_start(season)
        return _season_this(first, now) if match["yr"] in ("今年", "本年") else _season(first, year)
    if quarter := _g(match, "q"):
        number = _count(quarter.strip("第季度Qq")) or 0
        return _months(year, 3 * number - 2, 3)
    return _months(year, 1, 12)


@_rule(rf"(?<![\d年零〇一二两三四五六七八九十第个每])(?P<t>{_CN_MONTH}(?:{_CN_DAY}|{_CN_MONTH_PART})?)", _CN)
def _cn_month(match: re.Match[str], now: datetime) -> _Bounds:
    """3月/三月份 (the latest begun), 3月14日/3月14号 (the latest such day), 3月初/3月下旬 (the latest begun)."""
    month = _count(match["m"]) or 0
    if day_text := _g(match, "d"):
        day = _count(day_text) or 0
        return _latest(lambda y: _days(date(y, month, day)), now)
    if part := _g(match, "mpart"):
        word = _PART_WORDS[part]
        return _latest(lambda y: _month_part(y, month, word), now)
    return _latest(lambda y: _months(y, month), now)


@_rule(
    rf"(?<![个])(?P<t>(?P<unit>年|月)(?P<part>{_CN_START}|{_CN_END})"
    r"|(?P<half>上半年|下半年)|(?P<xun>上旬|中旬|下旬))",
    _CN,
)
def _cn_part(match: re.Match[str], now: datetime) -> _Bounds:
    """年初/年底/年末, 上半年/下半年, 月初/月底/月末, 上旬/中旬/下旬 on their own: the latest begun."""
    if half := _g(match, "half"):
        first = 1 if half == "上半年" else 7
        return _latest(lambda y: _months(y, first, 6), now)
    if _g(match, "unit") == "年":
        part = _PART_WORDS[match["part"]]
        return _latest(lambda y: _year_part(y, part), now)
    part = _PART_WORDS[_g(match, "part") or match["xun"]]
    return _latest_month(lambda y, m: _month_part(y, m, part), now)


@_rule(rf"(?<![年])(?P<t>{_CN_SEASON})", _CN)
def _cn_season(match: re.Match[str], now: datetime) -> _Bounds:
    """春天/夏天/秋天/冬天 (or 春季…) on their own: the latest begun."""
    return _season_latest(_season_start(match["season"]), now)


@_rule(rf"(?<![\d零〇一二两三四五六七八九十百几])(?P<t>{_CN_COUNT}{_CN_UNIT}以?前)(?![端台缀置提])", _CN)
def _cn_ago(match: re.Match[str], now: datetime) -> _Bounds | None:
    """三天前, 两周前, 三个月前, 2年前, 5小时前 (as "N units ago"); 几天前 (the last 7 days)."""
    return _ago(_unit(match["u"]), _count(match["n"]), now)


@_rule(
    rf"(?<![接靠附将邻])(?P<t>(?P<pre>最近|近|过去|这|前)的?{_CN_COUNT}"
    r"(?P<u>个?小时|天|日子?|周|个?星期|个?礼拜|个月|年))",
    _CN,
)
def _cn_rolling(match: re.Match[str], now: datetime) -> _Bounds | None:
    """最近三天, 近一周, 过去两个月, 近两年 (rolling); 前几天/前些日子/这几天 (the last 7 days), 这两天."""
    count = _count(match["n"])
    # 前三天 is "the first three days" and 这三个月 rarely a window; only vague counts
    # (and 这两天, "these couple of days") make 前 and 这 mean "recent".
    if match["pre"] in ("前", "这") and count is not None and not (match["pre"] == "这" and count == 2):
        return None
    return _rolling(_unit(match["u"]), count, now)


@_rule(r"(?P<t>最近|近期|近来|这阵子|这段时间)(?!一次|那次)", _CN)
def _cn_recently(match: re.Match[str], now: datetime) -> _Bounds | None:
    """最近, 近期, 近来, 这阵子, 这段时间: the last 14 days (not 最近一次, "the latest time")."""
    return _rolling("day", 14, now)


@_rule(r"(?P<t>(?P<rel>上上个季度|上个季度|上季度|上一季度|这个季度|本季度|这季度))", _CN)
@_rule(r"(?<![年\d])(?P<t>第?(?P<q>[一二三四1-4])季度)", _CN)
def _cn_quarter(match: re.Match[str], now: datetime) -> _Bounds:
    """本季度/这个季度, 上个季度 (calendar quarters); 第三季度/三季度 (the latest begun)."""
    if relative := _g(match, "rel"):
        return _calendar("quarter", relative.count("上"), now)
    quarter = _count(match["q"]) or 0
    return _latest(lambda y: _months(y, 3 * quarter - 2, 3), now)
