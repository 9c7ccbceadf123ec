#!/usr/bin/env python3
"""Generate the long-chat benchmark: long multi-session chats between two people, with turn-level evidence.

The set follows the shape of public conversational-memory benchmarks (many dated sessions, questions whose
evidence is a handful of turns), but every word of it comes from this script: templates written for it, filled
with facts sampled from pools written for it.

Design
------
1. **People and a calendar.** Each conversation has two speakers (friends, former colleagues, cousins, old
   flatmates, former neighbours; about 30% of the conversations are in Chinese, names included) and 15-26 sessions on
   strictly increasing dates spread over 6-18 months.
2. **A hidden fact sheet per person.** Facts are records (`Fact`) sampled from the pools below: where they live and
   every move, their job and every change of job, pets (already there or adopted), a partner and the partner's job,
   an engagement, children and milestones, hobbies (some taken up during the chats), trips (some announced in an
   earlier session), health events, a long-term condition, purchases, a goal (signed up for, then achieved),
   preferences, and two people in their lives (a sister, a best friend, ...) with facts of their own. Conflicts are
   avoided (nobody allergic to cats adopts a kitten; a vegetarian's trip highlight is not a carbonara).
3. **A schedule.** Every fact gets the session where it is told; dated facts (a move, a trip, a new job, an injury)
   happened `offset` days before that session, and the text says so in words ("yesterday", "on Saturday", "last
   week"), so the date of an event is the session date minus the offset. Some facts are announced earlier (a
   booked trip, an interview, a driving test) and some are mentioned again later in other words. Chains stay
   coherent: the old home is only talked about before the move, a re-mention comes after the reveal.
4. **Rendering.** A session is an opener, the scheduled facts in random order and small talk between them
   (weather by season, food, series, holidays by the calendar), and a closing. A fact is told with one of several
   templates; some tell it over two turns (a question, then a short answer such as "yep, the blue one"), and most
   are followed by a reaction. Every turn keeps the facts and *attributes* (say `dest`, `hl` for a trip's
   highlight, `name` and `breed` for a pet) it states, so evidence is tracked per attribute, not per fact.
   Hard distractors are built in: both speakers usually have pets, trips and injuries; the other speaker may say
   they went to the same place years ago; a sister or friend goes to the same destination at another date.
5. **Queries from the same records.** A question is built from fact records, and its expected ids are every turn
   tagged with the attributes the answer needs (a question plus its short answer counts as two turns). Categories:
   `single-hop` (one fact, question worded differently from the turn), `multi-hop` (two or more facts, e.g. the
   dog adopted after a given move, a partner's job when the partner is named in one turn and the job in another),
   `temporal` (the answer depends on dates: "in March 2025", "before moving to Leeds", "first trip after ...";
   window questions are only asked when the person has several facts of that kind and exactly one falls in the
   window, with margins), and `open-domain` (a fact plus common sense: someone who hates crowds and a packed
   festival). A few questions are asked in the other language of the conversation.
6. **Validation.** `check()` runs after generation and refuses to write files that break the rules: counts per
   category and language, every expected id exists in the right namespace, session dates and timestamps strictly
   increase, enough turns and filler, unique queries, each answer value present in its evidence turns, evidence
   turns unique in their conversation (engram folds exact duplicates into one memory).

Everything is a pure function of `SEED`: one `random.Random` per conversation, no set iteration, fixed key order,
so the output is byte-identical on every run.

Usage (from the repository root):
  python scripts/make_long_chat.py            # write bench/long-chat/{memories,queries}.jsonl and print a summary
  python scripts/make_long_chat.py --check    # generate and validate only, write nothing
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

# Bump when the output changes: anything caching results on this set can key on it.
GENERATOR_VERSION = 1
SEED = 20260511
N_CONVERSATIONS = 14
ZH_CONVERSATIONS = (3, 6, 10, 13)  # 1-based numbers of the Chinese conversations (4 of 14, ~29%)
OUT_DIR = Path(__file__).resolve().parents[1] / "bench" / "long-chat"

# Queries per conversation and category (40/20/25/15), and how many to ask in the other language.
QUOTA = {"single-hop": 14, "multi-hop": 7, "temporal": 9, "open-domain": 5}
TARGET_SHARE = {"single-hop": 0.40, "multi-hop": 0.20, "temporal": 0.25, "open-domain": 0.15}
CROSS_LINGUAL = {"en": (1, 2), "zh": (3, 5)}  # inclusive range, by conversation language

MONTHS_EN = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS_EN = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
WEEKDAYS_ZH = ("周一", "周二", "周三", "周四", "周五", "周六", "周日")
SEASONS = {"spring": (3, 5), "summer": (6, 8), "autumn": (9, 11)}
SEASON_ZH = {"spring": "春天", "summer": "夏天", "autumn": "秋天"}
SPRING_FESTIVAL = {2024: date(2024, 2, 10), 2025: date(2025, 1, 29), 2026: date(2026, 2, 17)}
MID_AUTUMN = {2024: date(2024, 9, 17), 2025: date(2025, 10, 6), 2026: date(2026, 9, 25)}

# A template: space-separated attributes it states, then lines. "s:" is said by the teller, "o:" by the other
# speaker; "s~" / "o~" lines belong to the template but state nothing. The pseudo-attribute "now" marks a template
# that describes the event as happening at the time of the session (offset 0); "mention" marks a turn that names
# someone without saying who they are ("Leo says hi"), which no question uses as evidence.
Tpl = tuple[str, ...]


# --------------------------------------------------------------------------------------------------------------
# Data model


@dataclass
class Person:
    """A speaker, or someone in a speaker's life (``key`` like ``a.t1``)."""

    key: str
    name: str
    gender: str  # "f" or "m"
    blocked: set[str] = field(default_factory=set)  # pool keys and tags this person must not get (conflicts)

    def blocks(self, *keys: str) -> bool:
        return any(k in self.blocked for k in keys)


@dataclass
class Fact:
    """One record of a hidden fact sheet, and the turns that end up stating it."""

    fid: str
    kind: str
    owner: Person  # whom the fact is about
    teller: str  # speaker key ("a" or "b") who tells it
    v: dict[str, Any]  # slot values, in the conversation's language
    session: int  # 0-based session of the main reveal
    dated: bool = False
    offset: int = 0  # days from the event to the main session
    day: date | None = None  # event date, for dated facts
    tpl: Tpl | None = None  # main template, chosen when scheduling (it decides the offset)
    plan: int | None = None  # earlier session that announces it
    again: list[int] = field(default_factory=list)  # later sessions that mention it again
    follow: list[Fact] = field(default_factory=list)  # facts told right after this one (the other's echo)
    entry: dict[str, Any] | None = None  # pool entry for kinds whose templates live in the pool
    ev: dict[str, list[str]] = field(default_factory=dict)  # attribute -> turn ids stating it

    def has(self, *attrs: str) -> bool:
        return all(self.ev.get(a) for a in attrs)

    def turns(self, *attrs: str) -> list[str]:
        out: list[str] = []
        for a in attrs:
            out.extend(self.ev.get(a, []))
        return sorted(set(out))


@dataclass
class Line:
    who: str  # "a" or "b"
    text: str
    tags: list[tuple[Fact, tuple[str, ...]]] = field(default_factory=list)


@dataclass
class Turn:
    tid: str
    speaker: str
    content: str
    at: datetime
    session: int  # 1-based
    index: int  # 1-based within the session
    facts: tuple[str, ...]


@dataclass
class Query:
    query: str
    namespace: str
    ids: list[str]
    category: str
    lang: str
    now: str
    answer: str
    qtype: str
    checks: tuple[str, ...] = ()


# --------------------------------------------------------------------------------------------------------------
# Calendar helpers


def last_day(y: int, m: int) -> date:
    return (date(y + m // 12, m % 12 + 1, 1)) - timedelta(days=1)


def month_answer(d: date, lang: str) -> str:
    return f"{MONTHS_EN[d.month - 1]} {d.year}" if lang == "en" else f"{d.year}年{d.month}月"


def season_of(m: int) -> str | None:
    for name, (lo, hi) in SEASONS.items():
        if lo <= m <= hi:
            return name
    return None


def when_phrase(lang: str, offset: int, session_day: date, rng: random.Random) -> str:
    """Words for "``offset`` days before ``session_day``", as a friend would put it."""
    weekday = (session_day - timedelta(days=offset)).weekday()
    if lang == "en":
        if offset == 0:
            return rng.choice(("today", "this morning"))
        if offset == 1:
            return rng.choice(("yesterday", "last night"))
        if offset <= 6:
            return "on " + WEEKDAYS_EN[weekday]
        return rng.choice(("last week", "the other week"))
    if offset == 0:
        return rng.choice(("今天", "今天上午"))
    if offset == 1:
        return rng.choice(("昨天", "昨晚"))
    if offset == 2:
        return "前天"
    if offset <= 6:
        return WEEKDAYS_ZH[weekday]
    return "上周"


@dataclass(frozen=True)
class Window:
    """A stretch of calendar a question can name: a month or a season, absolute or relative to ``now``."""

    start: date
    end: date
    kind: str  # "month" or "season"
    year: int
    unit: int | str  # month number or season name
    relative: bool

    def phrase(self, lang: str, now: date) -> str:
        rel = ""
        if self.relative:
            rel = "this" if self.year == now.year else "last"
        if self.kind == "month":
            m = int(self.unit)
            if lang == "en":
                if rel:
                    return f"in {MONTHS_EN[m - 1]} {rel} year"
                return f"in {MONTHS_EN[m - 1]} {self.year}"
            return f"{'今年' if rel == 'this' else '去年'}{m}月" if rel else f"{self.year}年{m}月"
        season = str(self.unit)
        if lang == "en":
            if rel == "this":
                return f"earlier this year, in the {season}"
            if rel == "last":
                return f"in the {season} of last year"
            return f"in the {season} of {self.year}"
        return (
            f"{'今年' if rel == 'this' else '去年'}{SEASON_ZH[season]}" if rel else f"{self.year}年{SEASON_ZH[season]}"
        )


def windows_around(day: date, now: date) -> list[Window]:
    """Every window containing ``day`` that a question could name (relative ones only when unambiguous)."""
    out: list[Window] = []
    rel_ok = day.year in (now.year, now.year - 1)
    ms, me = date(day.year, day.month, 1), last_day(day.year, day.month)
    out.append(Window(ms, me, "month", day.year, day.month, False))
    if rel_ok and me < now:
        out.append(Window(ms, me, "month", day.year, day.month, True))
    season = season_of(day.month)
    if season:
        lo, hi = SEASONS[season]
        ss, se = date(day.year, lo, 1), last_day(day.year, hi)
        out.append(Window(ss, se, "season", day.year, season, False))
        if rel_ok and se < now:
            out.append(Window(ss, se, "season", day.year, season, True))
    return out


# --------------------------------------------------------------------------------------------------------------
# Pools: people


NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "f": (
            "Maya",
            "Priya",
            "Chloe",
            "Hannah",
            "Grace",
            "Aisha",
            "Olivia",
            "Zara",
            "Sofia",
            "Nina",
            "Freya",
            "Imogen",
            "Tessa",
            "Isla",
            "Naomi",
            "Elena",
            "Ruby",
            "Alice",
            "Leah",
            "Beth",
            "Jess",
            "Kate",
            "Amira",
            "Rosa",
            "Megan",
            "Lily",
            "Niamh",
            "Carys",
            "Jade",
            "Holly",
            "Anya",
            "Martha",
            "Orla",
            "Yasmin",
        ),
        "m": (
            "Ravi",
            "Tom",
            "Daniel",
            "Jamal",
            "Lucas",
            "Ethan",
            "Omar",
            "Ben",
            "Marcus",
            "Leo",
            "Sam",
            "Felix",
            "Arjun",
            "Kieran",
            "Owen",
            "Theo",
            "Hugo",
            "Jonah",
            "Josh",
            "Will",
            "Rob",
            "Adam",
            "Nathan",
            "Matt",
            "Callum",
            "Rhys",
            "Jack",
            "Dan",
            "Luke",
            "Pete",
            "Idris",
            "Connor",
            "Elliot",
            "Finlay",
        ),
    },
    "zh": {
        "f": (
            "小林",
            "陈静",
            "张敏",
            "赵婷",
            "孙悦",
            "吴桐",
            "何雪",
            "唐宁",
            "宋佳",
            "小雨",
            "佳佳",
            "婷婷",
            "阿美",
            "丽丽",
            "文文",
            "晓月",
            "思思",
            "琳琳",
            "莉莉",
            "小芸",
        ),
        "m": (
            "王磊",
            "刘洋",
            "阿杰",
            "郑凯",
            "许诺",
            "高远",
            "阿强",
            "老黄",
            "大伟",
            "小胖",
            "老周",
            "晓峰",
            "浩然",
            "志明",
            "阿飞",
            "大鹏",
            "小宇",
            "建国",
        ),
    },
}
KID_NAMES: dict[str, dict[str, tuple[str, ...]]] = {
    "en": {
        "f": ("Poppy", "Evie", "Mia", "Rosie", "Ivy", "Edie"),
        "m": ("Alfie", "Arlo", "Finn", "Oscar", "Teddy", "Reggie"),
    },
    "zh": {"f": ("朵朵", "糖糖", "果果", "安安"), "m": ("乐乐", "豆包", "天天", "小宝")},
}
PET_NAMES = {
    "en": (
        "Pickle",
        "Biscuit",
        "Juniper",
        "Otis",
        "Mabel",
        "Pepper",
        "Waffles",
        "Luna",
        "Bramble",
        "Nacho",
        "Ziggy",
        "Olive",
        "Hazel",
        "Moose",
        "Tofu",
        "Crumpet",
        "Basil",
        "Pudding",
        "Marmite",
        "Clementine",
    ),
    "zh": (
        "豆豆",
        "团子",
        "可乐",
        "年糕",
        "馒头",
        "旺财",
        "咪咪",
        "雪球",
        "布丁",
        "芝麻",
        "花卷",
        "土豆",
        "汤圆",
        "奶茶",
    ),
}
PRONOUNS = {"f": ("she", "her", "her"), "m": ("he", "him", "his")}  # subject, object, possessive
PRONOUN_ZH = {"f": "她", "m": "他"}

RELATIONSHIPS = {
    "en": (
        "friends from university",
        "former colleagues",
        "cousins",
        "old flatmates",
        "former neighbours",
        "school friends",
    ),
    "zh": ("大学同学", "前同事", "表亲", "以前的室友", "发小"),
}
# Partner relations: key -> (English, Chinese, partner's gender or "" for either)
PARTNER_RELS = {
    "bf": ("boyfriend", "男朋友", "m"),
    "gf": ("girlfriend", "女朋友", "f"),
    "husband": ("husband", "老公", "m"),
    "wife": ("wife", "老婆", "f"),
    "partner": ("partner", "对象", ""),
}
KID_RELS = {"f": ("daughter", "女儿"), "m": ("son", "儿子")}
# People in a speaker's life: (word, gender or "" for either)
THIRD_RELS = {
    "en": (
        ("sister", "f"),
        ("brother", "m"),
        ("best friend", ""),
        ("cousin", ""),
        ("old flatmate", ""),
        ("friend from uni", ""),
    ),
    "zh": (
        ("姐姐", "f"),
        ("妹妹", "f"),
        ("哥哥", "m"),
        ("弟弟", "m"),
        ("闺蜜", "f"),
        ("发小", ""),
        ("大学室友", ""),
        ("表姐", "f"),
        ("表哥", "m"),
    ),
}

# --------------------------------------------------------------------------------------------------------------
# Pools: places, work, animals

# (city, by the sea: True / False / None when it is not clear-cut)
CITIES: dict[str, tuple[tuple[str, bool | None], ...]] = {
    "en": (
        ("Leeds", False),
        ("Bristol", None),
        ("Manchester", False),
        ("Glasgow", False),
        ("Brighton", True),
        ("Cardiff", None),
        ("Sheffield", False),
        ("Nottingham", False),
        ("Norwich", False),
        ("York", False),
        ("Liverpool", None),
        ("Oxford", False),
        ("Bath", False),
        ("Plymouth", True),
        ("Aberdeen", True),
        ("Dublin", None),
        ("Belfast", None),
        ("Newcastle", None),
        ("Cambridge", False),
        ("Swansea", True),
        ("Bournemouth", True),
        ("Falmouth", True),
        ("Birmingham", False),
        ("Leicester", False),
    ),
    "zh": (
        ("成都", False),
        ("杭州", None),
        ("深圳", True),
        ("南京", False),
        ("武汉", False),
        ("西安", False),
        ("苏州", False),
        ("厦门", True),
        ("青岛", True),
        ("大连", True),
        ("长沙", False),
        ("重庆", False),
        ("昆明", False),
        ("广州", None),
        ("天津", None),
        ("合肥", False),
        ("宁波", None),
        ("郑州", False),
    ),
}
PLACES = {
    "en": (
        "the flat above the bakery",
        "the little terrace by the park",
        "the top-floor flat with no lift",
        "the house share near the station",
        "the basement flat with the temperamental boiler",
    ),
    "zh": ("公司附近的小区", "老城区的一个老小区", "地铁站旁边的公寓", "一个带小院子的房子", "学校附近的合租房"),
}

# Jobs: role, two employers, what a hard day looks like, and a common-sense question with its answer.
JOBS: dict[str, tuple[dict[str, Any], ...]] = {
    "en": (
        {
            "role": "nurse",
            "emps": ("St Aldhelm's Hospital", "Riverside Infirmary"),
            "act": "doing a twelve-hour shift on the ward",
            "oq": "Is {P} likely to work some night shifts?",
            "oa": "Yes, probably: {P} is a nurse.",
        },
        {
            "role": "primary school teacher",
            "emps": ("Hollins Lane Primary", "Marsh Green Primary"),
            "act": "marking thirty spelling tests",
            "oq": "Is {P} likely to be free for a long holiday in August?",
            "oa": "Probably yes: {P} teaches at a primary school, so the summer break is free.",
        },
        {
            "role": "software developer",
            "emps": ("Fernbank Labs", "Quarrystone Software"),
            "act": "chasing a bug that only shows up on Fridays",
            "oq": "Would {P} be a sensible person to ask why a laptop keeps crashing?",
            "oa": "Probably: {P} writes software for a living.",
        },
        {
            "role": "accountant",
            "emps": ("Dunmore & Pike", "Harlow Accounts"),
            "act": "doing year-end reconciliations",
            "oq": "Could {P} help a friend make sense of a tax return?",
            "oa": "Very likely: {P} is an accountant.",
        },
        {
            "role": "chef",
            "emps": ("The Copper Pot", "Salt & Ember"),
            "act": "working a double shift on the pass",
            "oq": "Is {P} usually free on Saturday evenings?",
            "oa": "Unlikely: {P} is a chef, and restaurant kitchens are busiest then.",
        },
        {
            "role": "physiotherapist",
            "emps": ("Ashgrove Physio", "Linfield Sports Clinic"),
            "act": "running back-to-back knee rehab sessions",
            "oq": "Would {P} have useful advice about a stiff shoulder?",
            "oa": "Yes: {P} is a physiotherapist.",
        },
        {
            "role": "graphic designer",
            "emps": ("Mossgate Studio", "Paperlark Design"),
            "act": "redoing the same logo for the fourth time",
            "oq": "Could {P} design a poster for a friend's gig?",
            "oa": "Very likely: {P} is a graphic designer.",
        },
        {
            "role": "vet",
            "emps": ("Bramble Vets", "Hillside Animal Clinic"),
            "act": "vaccinating puppies all morning",
            "oq": "Would {P} be a good person to ask about a poorly cat?",
            "oa": "Yes: {P} is a vet.",
        },
        {
            "role": "architect",
            "emps": ("Kellaway Architects", "Stone & Lume"),
            "act": "redrawing a library extension",
            "oq": "Would {P} have informed opinions about a loft conversion plan?",
            "oa": "Likely: {P} is an architect.",
        },
        {
            "role": "journalist",
            "emps": ("the Evening Courier", "the Northern Post"),
            "act": "chasing a council story on deadline",
            "oq": "Is {P} used to writing under tight time pressure?",
            "oa": "Yes: {P} is a journalist.",
        },
        {
            "role": "pharmacist",
            "emps": ("Greenway Pharmacy", "Boothby's Chemist"),
            "act": "giving a queue of flu jabs",
            "oq": "Could {P} say whether two cold remedies are safe to take together?",
            "oa": "Probably: {P} is a pharmacist.",
        },
        {
            "role": "electrician",
            "emps": ("Sparkwell Electrical", "Ohm & Sons"),
            "act": "rewiring a Victorian terrace",
            "oq": "Could {P} safely put up a new ceiling light?",
            "oa": "Yes, most likely: {P} is an electrician.",
        },
        {
            "role": "data analyst",
            "emps": ("Tallis Insurance", "Brightmere Energy"),
            "act": "building dashboards nobody reads",
            "oq": "Is {P} probably comfortable with big spreadsheets?",
            "oa": "Yes: {P} works as a data analyst.",
        },
        {
            "role": "librarian",
            "emps": ("Greyfriars Library", "the Central Library"),
            "act": "running toddler story time",
            "oq": "Would {P} be a good source of reading recommendations?",
            "oa": "Yes: {P} is a librarian.",
        },
    ),
    "zh": (
        {
            "role": "护士",
            "emps": ("市人民医院", "第三医院"),
            "act": "值了个大夜班",
            "oq": "{P}平时需要上夜班吗？",
            "oa": "很可能要，{P}是护士。",
        },
        {
            "role": "小学老师",
            "emps": ("实验小学", "育才小学"),
            "act": "改了一下午作业",
            "oq": "{P}寒暑假一般有空吗？",
            "oa": "多半有，{P}是小学老师。",
        },
        {
            "role": "程序员",
            "emps": ("星河科技", "蓝鲸软件"),
            "act": "修了一天线上的bug",
            "oq": "电脑出了问题找{P}帮忙靠谱吗？",
            "oa": "挺靠谱，{P}是程序员。",
        },
        {
            "role": "会计",
            "emps": ("信达会计师事务所", "永诚财务"),
            "act": "对了一天的账",
            "oq": "{P}能帮忙看看个税怎么申报吗？",
            "oa": "应该可以，{P}是会计。",
        },
        {
            "role": "厨师",
            "emps": ("老街私房菜", "江南小馆"),
            "act": "从早炒到晚",
            "oq": "周末晚上约{P}出来吃饭容易吗？",
            "oa": "不太容易，{P}是厨师，周末晚上最忙。",
        },
        {
            "role": "幼儿园老师",
            "emps": ("阳光幼儿园", "小星星幼儿园"),
            "act": "哄了一天小朋友",
            "oq": "{P}是不是很擅长跟小孩子打交道？",
            "oa": "很可能，{P}是幼儿园老师。",
        },
        {
            "role": "设计师",
            "emps": ("奇点广告", "木白设计工作室"),
            "act": "把海报改了八遍",
            "oq": "朋友婚礼的请柬找{P}来做合适吗？",
            "oa": "合适，{P}是设计师。",
        },
        {
            "role": "记者",
            "emps": ("都市晚报", "城市周刊"),
            "act": "赶稿赶到半夜",
            "oq": "{P}习惯在截稿压力下写东西吗？",
            "oa": "习惯，{P}是记者。",
        },
        {
            "role": "药剂师",
            "emps": ("百草堂药房", "仁和大药房"),
            "act": "配了一天的药",
            "oq": "问{P}两种感冒药能不能一起吃合适吗？",
            "oa": "合适，{P}是药剂师。",
        },
        {
            "role": "医生",
            "emps": ("中医院", "市第二医院"),
            "act": "门诊看了六十多个病人",
            "oq": "{P}的工作是不是经常要值班？",
            "oa": "是的，{P}是医生。",
        },
        {
            "role": "产品经理",
            "emps": ("飞鱼互联网", "云图科技"),
            "act": "开了一天的会",
            "oq": "{P}工作中需要经常开会吗？",
            "oa": "很可能，{P}是产品经理。",
        },
        {
            "role": "摄影师",
            "emps": ("光影婚纱摄影", "拾光影像"),
            "act": "拍了一整天婚纱照",
            "oq": "请{P}帮忙拍一张全家福合适吗？",
            "oa": "合适，{P}是摄影师。",
        },
        {
            "role": "数据分析师",
            "emps": ("数聚科技", "易达物流"),
            "act": "跑了一天的数据",
            "oq": "{P}应该很会用表格处理数据吧？",
            "oa": "很可能，{P}是数据分析师。",
        },
    ),
}

# Pets: (species, breed, baby word)
PETS = {
    "en": (
        ("dog", "beagle", "puppy"),
        ("dog", "border collie", "puppy"),
        ("dog", "dachshund", "puppy"),
        ("dog", "greyhound", "puppy"),
        ("dog", "labrador", "puppy"),
        ("dog", "cockapoo", "puppy"),
        ("dog", "whippet", "puppy"),
        ("dog", "springer spaniel", "puppy"),
        ("cat", "tabby cat", "kitten"),
        ("cat", "ginger cat", "kitten"),
        ("cat", "black cat", "kitten"),
        ("cat", "Maine Coon", "kitten"),
        ("cat", "Siamese cat", "kitten"),
    ),
    "zh": (
        ("狗", "柯基", "小狗"),
        ("狗", "柴犬", "小狗"),
        ("狗", "金毛", "小狗"),
        ("狗", "泰迪", "小狗"),
        ("狗", "边牧", "小狗"),
        ("狗", "比熊", "小狗"),
        ("狗", "哈士奇", "小狗"),
        ("猫", "橘猫", "小猫"),
        ("猫", "英短", "小猫"),
        ("猫", "布偶猫", "小猫"),
        ("猫", "狸花猫", "小猫"),
        ("猫", "暹罗猫", "小猫"),
    ),
}
SPECIES_WORD = {"dog": ("dog", "狗"), "cat": ("cat", "猫"), "狗": ("dog", "狗"), "猫": ("cat", "猫")}

# --------------------------------------------------------------------------------------------------------------
# Pools: hobbies, trips, health, purchases, goals, preferences
#
# Hobbies have a category; a person never has two hobbies of one category, so "what sport does X do" has one
# answer. "oq"/"oa" are the open-domain question and answer.

HOBBY_Q = {
    "en": {
        "sport": "What does {P} do to keep fit?",
        "craft": "What hands-on craft does {P} enjoy?",
        "music": "What musical pastime is {P} into?",
        "outdoor": "How does {P} like to spend time outdoors?",
        "game": "What kind of game is {P} into?",
        "food": "What does {P} like making in the kitchen?",
        "dance": "What style of dancing does {P} do?",
        "art": "What creative pastime does {P} have?",
        "water": "What does {P} like doing in the water?",
    },
    "zh": {
        "sport": "{P}平时做什么运动？",
        "craft": "{P}在学什么手工？",
        "music": "{P}业余时间玩什么音乐？",
        "outdoor": "{P}周末喜欢去户外干什么？",
        "game": "{P}喜欢玩什么游戏？",
        "food": "{P}在厨房里喜欢捣鼓什么？",
        "dance": "{P}在学什么舞？",
        "art": "{P}有什么文艺方面的爱好？",
        "water": "{P}喜欢什么水上运动？",
    },
}
HOBBIES: dict[str, tuple[dict[str, str], ...]] = {
    "en": (
        {
            "key": "bouldering",
            "cat": "sport",
            "noun": "bouldering",
            "doing": "bouldering at the climbing wall",
            "oq": "Would {P} appreciate a gift voucher for an indoor climbing centre?",
            "oa": "Yes: {P} goes bouldering regularly.",
        },
        {
            "key": "trail running",
            "cat": "sport",
            "noun": "trail running",
            "doing": "running the hill trails",
            "oq": "Would {P} be up for a muddy 10k through the woods?",
            "oa": "Very likely: {P} loves trail running.",
        },
        {
            "key": "yoga",
            "cat": "sport",
            "noun": "yoga",
            "doing": "doing yoga at the studio by the canal",
            "oq": "Would {P} enjoy a weekend retreat built around morning stretching sessions?",
            "oa": "Probably: {P} does yoga.",
        },
        {
            "key": "pottery",
            "cat": "craft",
            "noun": "pottery",
            "doing": "throwing bowls at the pottery studio",
            "oq": "Would {P} enjoy a ceramics workshop as a birthday present?",
            "oa": "Yes: {P} is into pottery.",
        },
        {
            "key": "knitting",
            "cat": "craft",
            "noun": "knitting",
            "doing": "knitting a jumper for the winter",
            "oq": "Would {P} like a bundle of good wool as a gift?",
            "oa": "Yes: {P} knits.",
        },
        {
            "key": "woodworking",
            "cat": "craft",
            "noun": "woodworking",
            "doing": "building a bookshelf in the shed",
            "oq": "Would {P} find a set of chisels a useful present?",
            "oa": "Yes: {P} does woodworking.",
        },
        {
            "key": "cello",
            "cat": "music",
            "noun": "cello",
            "doing": "practising the cello",
            "oq": "Would {P} enjoy an evening of chamber music?",
            "oa": "Likely: {P} plays the cello.",
        },
        {
            "key": "choir",
            "cat": "music",
            "noun": "choir",
            "doing": "singing with the community choir",
            "oq": "Would {P} likely enjoy a carol concert?",
            "oa": "Likely: {P} sings in a choir.",
        },
        {
            "key": "guitar",
            "cat": "music",
            "noun": "guitar",
            "doing": "learning songs on the guitar",
            "oq": "Would {P} be pleased with a new set of strings and a capo?",
            "oa": "Yes: {P} plays the guitar.",
        },
        {
            "key": "birdwatching",
            "cat": "outdoor",
            "noun": "birdwatching",
            "doing": "birdwatching at the reservoir",
            "oq": "Would {P} want a good pair of binoculars?",
            "oa": "Very likely: {P} goes birdwatching.",
        },
        {
            "key": "gardening",
            "cat": "outdoor",
            "noun": "gardening",
            "doing": "growing tomatoes on the allotment",
            "oq": "Would {P} appreciate a packet of heirloom seeds?",
            "oa": "Yes: {P} grows vegetables on an allotment.",
        },
        {
            "key": "chess",
            "cat": "game",
            "noun": "chess",
            "doing": "playing chess online every night",
            "oq": "Would {P} enjoy watching a grandmaster tournament?",
            "oa": "Probably: {P} plays a lot of chess.",
        },
        {
            "key": "board games",
            "cat": "game",
            "noun": "board games",
            "doing": "hosting board game nights",
            "oq": "Would {P} be pleased to get a new strategy game for Christmas?",
            "oa": "Yes: {P} loves board games.",
        },
        {
            "key": "baking",
            "cat": "food",
            "noun": "baking",
            "doing": "feeding my sourdough starter and baking loaves",
            "oq": "Would {P} enjoy a bread-making masterclass?",
            "oa": "Very likely: {P} bakes sourdough.",
        },
        {
            "key": "salsa",
            "cat": "dance",
            "noun": "salsa",
            "doing": "going to salsa classes",
            "oq": "Would {P} enjoy a Latin dance night?",
            "oa": "Yes: {P} dances salsa.",
        },
        {
            "key": "swing",
            "cat": "dance",
            "noun": "swing dancing",
            "doing": "doing lindy hop at the church hall",
            "oq": "Would {P} enjoy a 1940s-themed dance evening?",
            "oa": "Yes: {P} does swing dancing.",
        },
        {
            "key": "watercolour",
            "cat": "art",
            "noun": "painting",
            "doing": "painting watercolours in the park",
            "oq": "Would {P} like a set of good brushes?",
            "oa": "Yes: {P} paints watercolours.",
        },
        {
            "key": "film photography",
            "cat": "art",
            "noun": "film photography",
            "doing": "shooting on an old film camera",
            "oq": "Would {P} be interested in a darkroom course?",
            "oa": "Likely: {P} shoots on film.",
        },
        {
            "key": "wild swimming",
            "cat": "water",
            "noun": "wild swimming",
            "doing": "cold-water swimming in the lake",
            "oq": "Would {P} be up for a New Year's Day sea dip?",
            "oa": "Probably: {P} swims in cold open water.",
        },
        {
            "key": "surfing",
            "cat": "water",
            "noun": "surfing",
            "doing": "going to surfing lessons",
            "oq": "Would {P} enjoy a week on a coast known for big waves?",
            "oa": "Yes: {P} surfs.",
        },
    ),
    "zh": (
        {
            "key": "羽毛球",
            "cat": "sport",
            "noun": "羽毛球",
            "go": "打羽毛球",
            "doing": "打了一下午羽毛球",
            "oq": "送{P}一副新球拍合适吗？",
            "oa": "合适，{P}经常打羽毛球。",
        },
        {
            "key": "瑜伽",
            "cat": "sport",
            "noun": "瑜伽",
            "go": "练瑜伽",
            "doing": "上了两节瑜伽课",
            "oq": "送{P}一张拉伸课程的体验卡合适吗？",
            "oa": "合适，{P}在练瑜伽。",
        },
        {
            "key": "跑步",
            "cat": "sport",
            "noun": "跑步",
            "go": "跑步",
            "doing": "沿着江边跑了十公里",
            "oq": "{P}会对城市马拉松感兴趣吗？",
            "oa": "很可能，{P}经常跑步。",
        },
        {
            "key": "徒步",
            "cat": "outdoor",
            "noun": "徒步",
            "go": "徒步",
            "doing": "去山里徒步了一整天",
            "oq": "约{P}周末去爬山，{P}会答应吗？",
            "oa": "多半会，{P}喜欢徒步。",
        },
        {
            "key": "钓鱼",
            "cat": "outdoor",
            "noun": "钓鱼",
            "go": "钓鱼",
            "doing": "在水库边坐了一天钓鱼",
            "oq": "送{P}一套渔具合适吗？",
            "oa": "合适，{P}爱钓鱼。",
        },
        {
            "key": "吉他",
            "cat": "music",
            "noun": "吉他",
            "go": "练吉他",
            "doing": "练了一晚上吉他",
            "oq": "{P}会喜欢去听一场民谣弹唱的小演出吗？",
            "oa": "很可能，{P}在弹吉他。",
        },
        {
            "key": "合唱",
            "cat": "music",
            "noun": "合唱团",
            "go": "合唱团排练",
            "doing": "在合唱团排练了一晚上",
            "oq": "{P}会喜欢听一场无伴奏人声音乐会吗？",
            "oa": "很可能，{P}在合唱团唱歌。",
        },
        {
            "key": "烘焙",
            "cat": "food",
            "noun": "烘焙",
            "go": "烤面包",
            "doing": "烤了一炉面包",
            "oq": "送{P}一台新烤箱合适吗？",
            "oa": "合适，{P}喜欢烘焙。",
        },
        {
            "key": "书法",
            "cat": "art",
            "noun": "书法",
            "go": "练书法",
            "doing": "练了两个小时毛笔字",
            "oq": "送{P}一套笔墨纸砚合适吗？",
            "oa": "合适，{P}在练书法。",
        },
        {
            "key": "摄影",
            "cat": "art",
            "noun": "摄影",
            "go": "扫街拍照",
            "doing": "背着相机出去扫街",
            "oq": "{P}会想去看一个胶片影像展吗？",
            "oa": "很可能，{P}喜欢摄影。",
        },
        {
            "key": "围棋",
            "cat": "game",
            "noun": "围棋",
            "go": "下围棋",
            "doing": "下了一晚上围棋",
            "oq": "{P}会喜欢看职业棋手的比赛直播吗？",
            "oa": "很可能，{P}爱下围棋。",
        },
        {
            "key": "剧本杀",
            "cat": "game",
            "noun": "剧本杀",
            "go": "玩剧本杀",
            "doing": "玩了一个通宵的剧本杀",
            "oq": "约{P}去玩推理角色扮演游戏，{P}会感兴趣吗？",
            "oa": "会，{P}爱玩剧本杀。",
        },
        {
            "key": "陶艺",
            "cat": "craft",
            "noun": "陶艺",
            "go": "做陶艺",
            "doing": "在陶艺工作室拉了两个碗",
            "oq": "{P}会喜欢手工捏泥巴的体验课吗？",
            "oa": "很可能，{P}在学陶艺。",
        },
        {
            "key": "钩织",
            "cat": "craft",
            "noun": "钩织",
            "go": "钩毛线",
            "doing": "钩了一顶毛线帽",
            "oq": "送{P}几团好毛线合适吗？",
            "oa": "合适，{P}喜欢钩织。",
        },
        {
            "key": "游泳",
            "cat": "water",
            "noun": "游泳",
            "go": "游泳",
            "doing": "在泳池游了两千米",
            "oq": "{P}会喜欢住带泳池的酒店吗？",
            "oa": "很可能，{P}爱游泳。",
        },
        {
            "key": "街舞",
            "cat": "dance",
            "noun": "街舞",
            "go": "跳街舞",
            "doing": "跳了一晚上街舞",
            "oq": "{P}会想去看一场舞蹈比赛吗？",
            "oa": "很可能，{P}在跳街舞。",
        },
    ),
}

# Destinations: (place, tags, highlights as (clause, noun phrase, tags)). Tag "far" means a long flight.
DESTS: dict[str, tuple[tuple[str, tuple[str, ...], tuple[tuple[str, str, tuple[str, ...]], ...]], ...]] = {
    "en": (
        (
            "Lisbon",
            (),
            (
                ("we ate custard tarts every single day", "the custard tarts", ()),
                ("we rode the old yellow trams up every hill", "the yellow trams", ()),
            ),
        ),
        (
            "Kyoto",
            ("far",),
            (
                ("we had the temples to ourselves before sunrise", "the temples at sunrise", ("early",)),
                ("we walked through the bamboo forest in the rain", "the bamboo forest", ()),
            ),
        ),
        (
            "Tokyo",
            ("far",),
            (
                ("we ate at a counter bar with eight seats", "the tiny counter bars", ()),
                ("the fish market breakfast was worth the 5am alarm", "the fish market breakfast", ("early",)),
            ),
        ),
        (
            "Reykjavik",
            (),
            (
                ("we saw the northern lights on the last night", "the northern lights", ()),
                ("we soaked in a hot spring while it snowed", "the hot springs", ()),
            ),
        ),
        (
            "Barcelona",
            (),
            (
                ("we ate tapas at midnight like the locals", "the midnight tapas", ()),
                ("the Gaudí buildings blew my mind", "the Gaudí buildings", ()),
            ),
        ),
        (
            "Rome",
            (),
            (
                ("I had the best carbonara of my life", "that carbonara", ("meat",)),
                ("we stood in the Pantheon while rain fell through the roof", "the Pantheon in the rain", ()),
            ),
        ),
        (
            "Marrakech",
            ("far",),
            (
                ("we got lost in the souks for hours", "the souks", ()),
                ("we drank mint tea on a rooftop at sunset", "the rooftop mint tea", ()),
            ),
        ),
        (
            "Crete",
            (),
            (
                ("we found a beach with literally nobody on it", "the empty beach", ()),
                ("we hiked down a gorge all the way to the sea", "the gorge hike", ()),
            ),
        ),
        (
            "Copenhagen",
            (),
            (
                ("we cycled everywhere, even in the rain", "cycling everywhere", ()),
                ("the cinnamon buns were life-changing", "the cinnamon buns", ()),
            ),
        ),
        (
            "Vienna",
            (),
            (
                ("we spent hours in the old coffee houses", "the coffee houses", ()),
                ("we got standing tickets to the opera for a few euros", "the cheap opera tickets", ()),
            ),
        ),
        (
            "Dubrovnik",
            (),
            (
                ("we walked the whole city wall at dawn", "the city walls", ("early",)),
                ("we kayaked round the little island", "the kayaking", ("boat",)),
            ),
        ),
        (
            "Seville",
            (),
            (
                ("the whole city smelt of orange blossom", "the orange blossom", ()),
                ("we watched flamenco in a bar the size of a kitchen", "the tiny flamenco bar", ()),
            ),
        ),
        (
            "New York",
            ("far",),
            (
                ("I ate a bagel every single morning", "the bagels", ()),
                ("we walked the High Line at sunset", "the High Line", ()),
            ),
        ),
        (
            "the Lake District",
            (),
            (
                ("we climbed Helvellyn inside a cloud", "Helvellyn", ("height",)),
                ("we swam in a freezing tarn", "the freezing tarn", ()),
            ),
        ),
        (
            "Berlin",
            (),
            (
                ("we cycled along the line of the old wall", "the wall cycle", ()),
                ("the flea markets were incredible", "the flea markets", ()),
            ),
        ),
        (
            "Amsterdam",
            (),
            (
                ("we rented a little boat on the canals", "the canal boat", ("boat",)),
                ("we spent a whole day in the Rijksmuseum", "the Rijksmuseum", ()),
            ),
        ),
        (
            "Mexico City",
            ("far",),
            (
                ("the street tacos were unbelievable", "the street tacos", ("meat", "spicy")),
                ("we climbed the pyramids outside the city", "the pyramids", ()),
            ),
        ),
        (
            "Edinburgh",
            (),
            (
                ("we climbed Arthur's Seat in a gale", "Arthur's Seat", ()),
                ("we did a ghost tour of the old town", "the ghost tour", ()),
            ),
        ),
    ),
    "zh": (
        ("大理", (), (("沿着洱海骑了一圈车", "洱海边骑车", ()), ("在古城里晒了三天太阳", "古城的太阳", ()))),
        ("三亚", (), (("第一次潜水，看到了好多鱼", "潜水", ("boat",)), ("每天在海边看日落", "海边的日落", ()))),
        ("拉萨", ("far",), (("在布达拉宫前面站了好久", "布达拉宫", ()), ("喝了好多甜茶", "甜茶馆", ()))),
        ("京都", ("far",), (("穿着和服逛了清水寺", "清水寺", ()), ("在岚山的竹林里走了一下午", "岚山竹林", ()))),
        ("清迈", ("far",), (("逛了好几个夜市", "夜市", ()), ("去大象营喂了大象", "喂大象", ()))),
        (
            "喀纳斯",
            ("far",),
            (("秋天的白桦林美得不真实", "白桦林", ()), ("早起在湖边看了日出", "湖边日出", ("early",))),
        ),
        ("阳朔", (), (("在漓江上坐了竹筏", "漓江竹筏", ("boat",)), ("骑车穿过十里画廊", "十里画廊", ()))),
        ("张家界", (), (("走了玻璃栈道，腿都软了", "玻璃栈道", ("height",)), ("山里的云海太壮观了", "云海", ()))),
        ("青海湖", ("far",), (("环湖骑了三天车", "环湖骑行", ()), ("油菜花开得漫山遍野", "油菜花", ()))),
        ("哈尔滨", ("cold",), (("在冰雪大世界冻得直跺脚", "冰雪大世界", ()), ("吃了好多红肠", "红肠", ("meat",)))),
        ("黄山", (), (("凌晨爬起来看了日出", "黄山日出", ("early", "height")), ("住在了山顶的酒店", "山顶酒店", ()))),
        ("丽江", (), (("在古城的院子里发呆了一下午", "古城的院子", ()), ("去了玉龙雪山", "玉龙雪山", ()))),
        ("首尔", ("far",), (("逛了一整天的明洞", "明洞", ()), ("吃了好多炸鸡", "炸鸡", ("meat",)))),
        ("新加坡", ("far",), (("在环球影城玩疯了", "环球影城", ()), ("看了滨海湾的灯光秀", "灯光秀", ()))),
        ("西双版纳", ("far",), (("在雨林里看到了野象", "野象", ()), ("吃了好多热带水果", "热带水果", ()))),
        ("敦煌", ("far",), (("在鸣沙山骑了骆驼", "骑骆驼", ()), ("莫高窟的壁画太震撼了", "莫高窟", ()))),
    ),
}

# Health events. "main" templates tell it (attribute "event", plus "cause" when the cause is named), "again"
# mentions it later, "short" names it in answers, "sq"/"sa" ask about the cause, "wq" asks when.
HEALTH: dict[str, tuple[dict[str, Any], ...]] = {
    "en": (
        {
            "key": "ankle",
            "causes": ("at five-a-side", "stepping off a kerb", "at netball"),
            "main": (
                ("event cause", "s: sprained my ankle {cause} {when}, on crutches now"),
                ("event cause", "o: why are you limping in that photo??", "s: sprained ankle. {Cause}, don't ask"),
                ("event", "s: guess who's hobbling around with a sprained ankle. this idiot"),
            ),
            "again": (
                ("event", "s: ankle's finally back to normal, first proper walk since the sprain"),
                ("event", "s: the ankle is behaving again, I even jogged for the bus"),
            ),
            "short": "a sprained ankle",
            "sq": "How did {P} injure {poss} ankle?",
            "sa": "{cause}",
            "wq": "When did {P} sprain {poss} ankle?",
        },
        {
            "key": "wrist",
            "causes": ("falling off a bike", "slipping on wet leaves", "falling off a ladder"),
            "main": (
                ("event cause", "s: broke my wrist {cause} {when}. cast for six weeks"),
                ("event cause", "o: what happened to your arm?!", "s: broken wrist. {Cause}, very graceful"),
                ("event", "s: typing one-handed, I broke my wrist {when}"),
            ),
            "again": (
                ("event", "s: the cast is off! my wrist looks like a pale little twig"),
                ("event", "s: wrist is nearly back to normal, I can open jars again"),
            ),
            "short": "a broken wrist",
            "sq": "How did {P} come to break {poss} wrist?",
            "sa": "{Cause}.",
            "wq": "When did {P} break {poss} wrist?",
        },
        {
            "key": "back",
            "causes": ("lifting a sofa", "picking up a suitcase", "digging the garden"),
            "main": (
                ("event cause", "s: put my back out {cause} {when}, walking like a pensioner"),
                (
                    "event cause",
                    "o: you ok? you looked really stiff on the video call",
                    "s: back's gone. {cause}, of all things",
                ),
            ),
            "again": (
                ("event", "s: back's much better, the physio worked wonders"),
                ("event", "s: no more back pain, I can tie my own shoelaces like a grown-up"),
            ),
            "short": "a bad back",
            "sq": "What caused {P}'s back trouble?",
            "sa": "{cause}",
            "wq": "When did {P} put {poss} back out?",
        },
        {
            "key": "teeth",
            "causes": (),
            "main": (
                ("event", "s: had two wisdom teeth out {when}, I look like a hamster"),
                ("event", "o: how's the mouth?", "s: swollen. two wisdom teeth gone, living on soup"),
            ),
            "again": (
                ("event", "s: can finally eat crisps again, the wisdom teeth holes have healed"),
                ("event", "s: face has deflated, the wisdom teeth saga is officially over"),
            ),
            "short": "wisdom teeth taken out",
            "wq": "When did {P} have {poss} wisdom teeth out?",
        },
        {
            "key": "flu",
            "causes": (),
            "main": (
                ("event", "s: the flu flattened me {when}, three days in bed"),
                ("event", "o: you've been quiet, all ok?", "s: had the flu, properly wiped out"),
            ),
            "again": (("event", "s: finally shook off that flu, I have energy again"),),
            "short": "the flu",
            "wq": "When did {P} have the flu?",
        },
        {
            "key": "knee",
            "causes": ("football", "a bad landing at netball", "a skiing fall years ago"),
            "main": (
                ("event cause", "s: had knee surgery {when}, torn ligament from {cause}"),
                ("event", "o: how did the op go?", "s: knee's all stitched up, ligament fixed"),
            ),
            "again": (
                ("event", "s: walked to the shop without the knee brace today!"),
                ("event", "s: the physio says the knee is healing nicely after the op"),
            ),
            "short": "knee surgery",
            "sq": "What did {P} tear a ligament doing?",
            "sa": "{cause}",
            "wq": "When did {P} have the knee operation?",
        },
        {
            "key": "glasses",
            "causes": (),
            "main": (
                ("event", "s: got glasses for the first time {when}, trees have individual leaves?!"),
                ("event", "o: wait, new specs in your photo?", "s: yep! turns out I'm short-sighted"),
            ),
            "again": (
                ("event", "s: still not used to the glasses, I keep pushing them up my nose"),
                ("event", "s: I wear the new glasses even to watch TV now, everything is so crisp"),
            ),
            "short": "short sight (first glasses)",
            "wq": "When did {P} start wearing glasses?",
        },
        {
            "key": "poisoning",
            "causes": ("dodgy prawns", "a reheated rice salad"),
            "main": (
                ("event cause", "s: food poisoning from {cause} {when}, worst night of my life"),
                ("event", "o: you missed the quiz!", "s: food poisoning. never again"),
            ),
            "again": (("event", "s: my stomach has finally forgiven me for the food poisoning"),),
            "short": "food poisoning",
            "sq": "What gave {P} food poisoning?",
            "sa": "{cause}",
            "wq": "When did {P} get food poisoning?",
        },
    ),
    "zh": (
        {
            "key": "ankle",
            "causes": ("打球的时候", "下楼梯踩空", "跑步的时候"),
            "main": (
                ("event cause", "s: {when}{cause}崴了脚，现在拄着拐"),
                ("event", "o: 你朋友圈里怎么拄着拐？", "s: 崴脚了，别提了"),
                ("event cause", "s: 我脚崴了，{cause}没注意，肿得跟馒头一样"),
            ),
            "again": (
                ("event", "s: 脚终于好了，崴脚以后第一次出门散步"),
                ("event", "s: 脚踝消肿了，能正常走路了"),
            ),
            "short": "崴了脚",
            "sq": "{P}的脚是怎么受伤的？",
            "sa": "{cause}",
            "wq": "{P}是什么时候崴的脚？",
        },
        {
            "key": "wrist",
            "causes": ("骑车摔了", "爬梯子摔下来", "打滑摔了一跤"),
            "main": (
                ("event cause", "s: {when}{cause}，手腕骨折了，打了石膏"),
                ("event", "o: 你手上怎么打着石膏？", "s: 手腕骨折了，石膏要打六周"),
            ),
            "again": (
                ("event", "s: 石膏终于拆了，手腕细了一圈"),
                ("event", "s: 手腕恢复得差不多了，能自己拧瓶盖了"),
            ),
            "short": "手腕骨折",
            "sq": "{P}的手腕是怎么骨折的？",
            "sa": "{cause}",
            "wq": "{P}的手腕是什么时候骨折的？",
        },
        {
            "key": "back",
            "causes": ("搬沙发", "抱箱子", "大扫除"),
            "main": (
                ("event cause", "s: {when}{cause}把腰闪了，现在走路跟老头一样"),
                ("event cause", "o: 你怎么走路怪怪的？", "s: 腰闪了，{cause}弄的"),
            ),
            "again": (
                ("event", "s: 腰好多了，理疗还挺管用"),
                ("event", "s: 腰不疼了，终于能自己弯腰系鞋带了"),
            ),
            "short": "闪了腰",
            "sq": "{P}是怎么闪到腰的？",
            "sa": "{cause}",
            "wq": "{P}什么时候闪了腰？",
        },
        {
            "key": "teeth",
            "causes": (),
            "main": (
                ("event", "s: {when}拔了两颗智齿，脸肿成包子"),
                ("event", "o: 牙还疼吗？", "s: 肿着呢，拔了两颗智齿，只能喝粥"),
            ),
            "again": (
                ("event", "s: 拔牙的地方终于长好了，能吃薯片了"),
                ("event", "s: 脸终于消肿了，拔智齿这关算过了"),
            ),
            "short": "拔了智齿",
            "wq": "{P}是什么时候拔的智齿？",
        },
        {
            "key": "flu",
            "causes": (),
            "main": (
                ("event", "s: {when}发烧到三十九度，躺了三天"),
                ("event", "o: 这几天怎么没动静？", "s: 发高烧了，刚缓过来"),
            ),
            "again": (("event", "s: 烧退了，终于活过来了"),),
            "short": "发高烧",
            "wq": "{P}是什么时候发的高烧？",
        },
        {
            "key": "knee",
            "causes": ("踢球", "打篮球"),
            "main": (
                ("event cause", "s: {when}膝盖做了个小手术，{cause}把韧带弄伤了"),
                ("event", "o: 手术顺利吗？", "s: 顺利，膝盖韧带缝好了"),
            ),
            "again": (
                ("event", "s: 今天不戴护膝走到了楼下超市！"),
                ("event", "s: 复查说膝盖恢复得不错"),
            ),
            "short": "膝盖手术",
            "sq": "{P}的膝盖韧带是做什么运动伤的？",
            "sa": "{cause}",
            "wq": "{P}是什么时候做的膝盖手术？",
        },
        {
            "key": "glasses",
            "causes": (),
            "main": (
                ("event", "s: {when}去配了眼镜，原来世界这么清楚"),
                ("event", "o: 你戴眼镜了？", "s: 对，近视了，刚配的"),
            ),
            "again": (
                ("event", "s: 戴眼镜还是不习惯，老往下滑"),
                ("event", "s: 现在看电视都戴着新眼镜，太清楚了"),
            ),
            "short": "近视配眼镜",
            "wq": "{P}是什么时候开始戴眼镜的？",
        },
        {
            "key": "poisoning",
            "causes": ("不新鲜的海鲜", "隔夜的凉菜"),
            "main": (
                ("event cause", "s: {when}吃了{cause}，急性肠胃炎，折腾了一晚上"),
                ("event", "o: 聚餐你怎么没来？", "s: 肠胃炎，吐了一晚上"),
            ),
            "again": (("event", "s: 肠胃炎好了，但再也不敢乱吃东西了"),),
            "short": "急性肠胃炎",
            "sq": "{P}的肠胃炎是吃什么引起的？",
            "sa": "{cause}",
            "wq": "{P}是什么时候得的肠胃炎？",
        },
    ),
}

# Long-term conditions: static facts for open-domain questions. "blocks" lists pool keys and tags they rule out.
CONDITIONS: dict[str, tuple[dict[str, Any], ...]] = {
    "en": (
        {
            "key": "cats",
            "blocks": ("cat",),
            "main": (
                ("cond", "s: I'm horribly allergic to cats, my eyes puff up within minutes"),
                (
                    "cond",
                    "o: come round Saturday? the cat would love to meet you",
                    "s: haha you know I can't, the allergy. café instead?",
                ),
            ),
            "sq": "Which animal makes {P} ill?",
            "sa": "Cats: {P} is allergic to them.",
            "oq": "Would {P} be comfortable house-sitting for someone with three cats?",
            "oa": "No: {P} is allergic to cats.",
        },
        {
            "key": "lactose",
            "blocks": (),
            "main": (
                ("cond", "s: dairy and I have officially broken up, turns out I'm lactose intolerant"),
                ("cond", "s: can't do milk any more, the doctor says lactose intolerance"),
            ),
            "sq": "What can't {P} digest properly?",
            "sa": "Dairy (lactose).",
            "oq": "Would a cheese-and-ice-cream tasting evening suit {P}?",
            "oa": "Probably not: {P} is lactose intolerant.",
        },
        {
            "key": "heights",
            "blocks": ("height",),
            "main": (
                ("cond", "s: I can't even stand on a chair, heights are my nemesis"),
                (
                    "cond",
                    "o: fancy the rooftop café with the glass balcony?",
                    "s: you know me and heights. ground floor please",
                ),
            ),
            "sq": "What is {P} afraid of?",
            "sa": "Heights.",
            "oq": "Would {P} enjoy walking across a glass-floored skywalk?",
            "oa": "No: {P} is terrified of heights.",
        },
        {
            "key": "seasick",
            "blocks": ("boat",),
            "main": (("cond", "s: I get seasick on a pedalo, boats are a no from me"),),
            "sq": "What makes {P} feel sick when travelling?",
            "sa": "Boats: {P} gets seasick.",
            "oq": "Would {P} enjoy a week-long sailing holiday?",
            "oa": "Unlikely: {P} gets seasick.",
        },
        {
            "key": "hayfever",
            "blocks": (),
            "main": (
                ("cond", "s: pollen and I are enemies, every spring I'm a sneezing wreck"),
                ("cond", "s: my hay fever is the worst in the family, antihistamines for breakfast"),
            ),
            "sq": "What seasonal allergy does {P} suffer from?",
            "sa": "Hay fever.",
            "oq": "Is May likely to be an uncomfortable month for {P}?",
            "oa": "Yes: {P} has bad hay fever.",
        },
    ),
    "zh": (
        {
            "key": "cats",
            "blocks": ("猫",),
            "main": (
                ("cond", "s: 我猫毛过敏，进有猫的屋子就打喷嚏"),
                ("cond", "o: 周末来我家撸猫呀", "s: 饶了我吧，我对猫过敏的"),
            ),
            "sq": "{P}对什么动物过敏？",
            "sa": "猫",
            "oq": "请{P}帮忙照顾朋友家的两只猫合适吗？",
            "oa": "不合适，{P}猫毛过敏。",
        },
        {
            "key": "lactose",
            "blocks": (),
            "main": (("cond", "s: 我乳糖不耐受，一喝牛奶就拉肚子"),),
            "sq": "{P}不能喝什么？",
            "sa": "牛奶（乳糖不耐受）",
            "oq": "请{P}去吃奶酪火锅合适吗？",
            "oa": "不太合适，{P}乳糖不耐受。",
        },
        {
            "key": "heights",
            "blocks": ("height",),
            "main": (
                ("cond", "s: 我恐高，站在椅子上都腿软"),
                ("cond", "o: 下次一起去坐摩天轮吧", "s: 你知道我恐高的，饶了我"),
            ),
            "sq": "{P}害怕什么？",
            "sa": "高处（恐高）",
            "oq": "{P}会喜欢走悬崖边的透明步道吗？",
            "oa": "不会，{P}恐高。",
        },
        {
            "key": "carsick",
            "blocks": (),
            "main": (("cond", "s: 我晕车特别厉害，坐大巴必吐"),),
            "sq": "{P}坐车有什么毛病？",
            "sa": "晕车",
            "oq": "{P}会喜欢坐六个小时大巴去山区吗？",
            "oa": "不会，{P}晕车很严重。",
        },
        {
            "key": "rhinitis",
            "blocks": (),
            "main": (("cond", "s: 我有过敏性鼻炎，一到春天就喷嚏不断"),),
            "sq": "{P}有什么老毛病？",
            "sa": "过敏性鼻炎",
            "oq": "春天去植物园赏花，对{P}来说舒服吗？",
            "oa": "可能不太舒服，{P}有过敏性鼻炎。",
        },
    ),
}

# Purchases: item, colours, measure word (Chinese), open-domain question and answer (optional).
PURCHASES: dict[str, tuple[dict[str, Any], ...]] = {
    "en": (
        {"key": "car", "item": "car", "colours": ("blue", "red", "silver", "dark green")},
        {
            "key": "e-bike",
            "item": "e-bike",
            "colours": ("black", "mint green", "orange"),
            "oq": "Is {P} likely to make more trips by bike these days?",
            "oa": "Probably: {P} bought an e-bike.",
        },
        {"key": "sofa", "item": "sofa", "colours": ("green", "grey", "mustard yellow")},
        {
            "key": "tent",
            "item": "tent",
            "colours": ("orange", "olive green"),
            "oq": "Would {P} be up for a weekend of camping?",
            "oa": "Very likely: {P} bought a tent.",
        },
        {
            "key": "kayak",
            "item": "kayak",
            "colours": ("yellow", "red"),
            "oq": "Would {P} enjoy a day paddling down a river?",
            "oa": "Probably: {P} bought a kayak.",
        },
        {
            "key": "coffee machine",
            "item": "coffee machine",
            "colours": ("silver", "black", "cream"),
            "oq": "Would {P} appreciate a bag of freshly roasted beans?",
            "oa": "Likely: {P} bought a coffee machine.",
        },
        {
            "key": "piano",
            "item": "digital piano",
            "colours": ("white", "black"),
            "oq": "Does {P} probably practise an instrument at home?",
            "oa": "Yes: {P} bought a digital piano.",
        },
        {"key": "rain jacket", "item": "rain jacket", "colours": ("yellow", "navy", "red")},
        {
            "key": "telescope",
            "item": "telescope",
            "colours": ("white", "black"),
            "oq": "Would {P} be interested in staying up for a meteor shower?",
            "oa": "Likely: {P} bought a telescope.",
        },
        {"key": "desk", "item": "standing desk", "colours": ("white", "black")},
    ),
    "zh": (
        {"key": "car", "item": "车", "mw": "辆", "colours": ("白色", "蓝色", "灰色", "红色")},
        {
            "key": "e-bike",
            "item": "电动车",
            "mw": "辆",
            "colours": ("粉色", "黑色", "薄荷绿"),
            "oq": "{P}现在是不是更可能骑车出门？",
            "oa": "很可能，{P}买了电动车。",
        },
        {"key": "sofa", "item": "沙发", "mw": "张", "colours": ("墨绿色", "灰色", "奶白色")},
        {
            "key": "tent",
            "item": "帐篷",
            "mw": "顶",
            "colours": ("橙色", "军绿色"),
            "oq": "{P}会想周末去露营吗？",
            "oa": "很可能，{P}刚买了帐篷。",
        },
        {
            "key": "coffee machine",
            "item": "咖啡机",
            "mw": "台",
            "colours": ("银色", "黑色"),
            "oq": "送{P}一包新鲜烘焙的咖啡豆合适吗？",
            "oa": "合适，{P}买了咖啡机。",
        },
        {
            "key": "piano",
            "item": "电钢琴",
            "mw": "台",
            "colours": ("白色", "黑色"),
            "oq": "{P}在家会练乐器吗？",
            "oa": "很可能，{P}买了电钢琴。",
        },
        {
            "key": "projector",
            "item": "投影仪",
            "mw": "台",
            "colours": ("白色", "灰色"),
            "oq": "{P}会喜欢窝在家里看电影吗？",
            "oa": "很可能，{P}买了投影仪。",
        },
        {"key": "robot", "item": "扫地机器人", "mw": "台", "colours": ("白色", "黑色")},
        {"key": "bicycle", "item": "自行车", "mw": "辆", "colours": ("蓝色", "黄色")},
    ),
}

# Goals: announced ("sign", attribute "goal") and achieved later ("done", attribute "done").
GOALS: dict[str, tuple[dict[str, Any], ...]] = {
    "en": (
        {
            "key": "half",
            "vals": {
                "race": ("Great North Run", "Bristol Half Marathon", "Cardiff Half"),
                "time": ("2:04", "1:58", "2:21"),
            },
            "sign": (
                ("goal", "s: I signed up for the {race}. what have I done"),
                ("goal", "o: did you actually enter the {race}?", "s: I did. training starts Monday, pray for me"),
            ),
            "done": (
                ("done", "s: I finished the {race}!!! {time}, my legs are destroyed"),
                ("done", "o: did you survive the {race}??", "s: just about! {time}"),
            ),
            "sq": "Which race did {P} enter?",
            "sa": "The {race}.",
            "wq": "When did {P} run the {race}?",
            "short": "ran the {race}",
            "oq": "Would {P} know a thing or two about training for long distances?",
            "oa": "Yes: {P} trained for and finished the {race}.",
        },
        {
            "key": "driving",
            "vals": {},
            "sign": (("goal", "s: booked my driving test for {month}, eek"),),
            "done": (
                ("done", "s: PASSED MY DRIVING TEST!!! first time!"),
                ("done", "o: well?? the test??", "s: PASSED"),
            ),
            "sq": "What kind of test was {P} preparing for?",
            "sa": "A driving test.",
            "wq": "When did {P} pass {poss} driving test?",
            "short": "passed the driving test",
            "oq": "Can {P} now drive a car without someone supervising?",
            "oa": "Yes: {P} passed the driving test.",
        },
        {
            "key": "spanish",
            "vals": {"level": ("B1", "A2")},
            "sign": (("goal", "s: started Spanish evening classes, the teacher is very patient with me"),),
            "done": (
                ("done", "s: passed my {level} Spanish exam!!"),
                ("done", "o: how did the exam go?", "s: passed! {level} Spanish, officially"),
            ),
            "sq": "Which language has {P} been learning?",
            "sa": "Spanish.",
            "wq": "When did {P} pass the Spanish exam?",
            "short": "passed a {level} Spanish exam",
            "oq": "Would a holiday in Madrid give {P} a chance to practise something {sub}'s been studying?",
            "oa": "Yes: {P} has been learning Spanish.",
        },
        {
            "key": "kitchen",
            "vals": {"colour": ("sage green", "navy", "white")},
            "sign": (("goal", "s: we're ripping the kitchen out next month, takeaways for weeks"),),
            "done": (
                ("done", "s: the kitchen is DONE. {colour} cabinets, I'm in love"),
                ("done", "o: is the kitchen finished yet?", "s: finally! {colour} cabinets and everything"),
            ),
            "sq": "What colour are {P}'s new kitchen cabinets?",
            "sa": "{Colour}.",
            "wq": "When was {P}'s new kitchen finished?",
            "short": "finished the kitchen renovation",
            "sq_attr": "done",
        },
        {
            "key": "ride",
            "vals": {"money": ("£640", "£1,200", "£380")},
            "sign": (("goal", "s: signed up for a 100km charity bike ride for the hospice"),),
            "done": (("done", "s: did the 100k charity ride! raised {money} in the end"),),
            "sq": "How much money did {P} raise on the charity ride?",
            "sa": "{money}",
            "sq_attr": "done",
            "wq": "When did {P} do the charity bike ride?",
            "short": "did a 100km charity bike ride",
        },
    ),
    "zh": (
        {
            "key": "half",
            "vals": {"race": ("厦门", "杭州", "南京"), "time": ("2小时05分", "1小时58分", "2小时20分")},
            "sign": (("goal", "s: 报名了{race}半马，我是不是疯了"),),
            "done": (
                ("done", "s: {race}半马跑完了！{time}，腿废了"),
                ("done", "o: 半马跑完了吗？", "s: 跑完了！{time}"),
            ),
            "sq": "{P}报名了哪里的半程马拉松？",
            "sa": "{race}",
            "wq": "{P}是什么时候跑完半马的？",
            "short": "跑了{race}半马",
            "oq": "{P}对长跑训练应该有些经验吧？",
            "oa": "有，{P}跑完了{race}半马。",
        },
        {
            "key": "driving",
            "vals": {},
            "sign": (("goal", "s: {month}月考科目二，好慌"),),
            "done": (("done", "s: 驾照拿到了！！一把过"), ("done", "o: 考得怎么样？", "s: 过了！驾照到手")),
            "sq": "{P}在考什么证？",
            "sa": "驾照",
            "wq": "{P}是什么时候拿到驾照的？",
            "short": "拿到了驾照",
            "oq": "{P}现在可以自己开车上路了吗？",
            "oa": "可以，{P}拿到驾照了。",
        },
        {
            "key": "japanese",
            "vals": {},
            "sign": (("goal", "s: 报了日语班，准备考N2"),),
            "done": (("done", "s: N2过了！！日语没白学"), ("done", "o: 成绩出来了吗？", "s: 出了，N2过了！")),
            "sq": "{P}在学哪门外语？",
            "sa": "日语",
            "wq": "{P}是什么时候考过N2的？",
            "short": "考过了日语N2",
            "oq": "{P}去东京玩的时候能用上最近学的东西吗？",
            "oa": "能，{P}学了日语、考过了N2。",
        },
        {
            "key": "reno",
            "vals": {"colour": ("奶油白", "雾霾蓝", "原木色")},
            "sign": (("goal", "s: 房子开始装修了，天天跑建材市场"),),
            "done": (
                ("done", "s: 装修终于搞完了，{colour}的橱柜超好看"),
                ("done", "o: 装修弄完了没？", "s: 完工了！橱柜选的{colour}"),
            ),
            "sq": "{P}家新橱柜是什么颜色？",
            "sa": "{colour}",
            "sq_attr": "done",
            "wq": "{P}家是什么时候装修完的？",
            "short": "装修完了房子",
        },
        {
            "key": "exam",
            "vals": {},
            "sign": (("goal", "s: 决定考研了，每天泡图书馆"),),
            "done": (("done", "s: 考研上岸了！！"), ("done", "o: 考研结果出来了吗？", "s: 上岸了！")),
            "sq": "{P}在准备什么考试？",
            "sa": "考研",
            "wq": "{P}是什么时候知道考研上岸的？",
            "short": "考研上岸",
        },
        {
            "key": "diet",
            "vals": {},
            "sign": (("goal", "s: 开始减肥了，每天跳绳一千个"),),
            "done": (("done", "s: 三个月瘦了十斤！跳绳真有用"),),
            "sq": "{P}减肥每天做什么运动？",
            "sa": "跳绳",
            "wq": "{P}是什么时候说自己瘦了十斤的？",
            "short": "减肥瘦了十斤",
        },
    ),
}

# Preferences: static facts, category (a person has at most one per category), open-domain question and answer.
PREFS: dict[str, tuple[dict[str, Any], ...]] = {
    "en": (
        {
            "key": "spicy",
            "cat": "food",
            "blocks": ("spicy",),
            "main": (
                ("pref", "s: I can't handle spicy food at all, even black pepper makes me sweat"),
                ("pref", "o: fancy the new hot wings place?", "s: you know I can't do spice, I'd cry"),
            ),
            "sq": "What kind of food does {P} avoid?",
            "sa": "Spicy food.",
            "oq": "Would {P} enjoy a fiery Sichuan hotpot dinner?",
            "oa": "No: {P} can't handle spicy food.",
        },
        {
            "key": "veggie",
            "cat": "food",
            "blocks": ("meat",),
            "main": (
                ("pref", "s: ten years vegetarian now and I don't miss meat one bit"),
                ("pref", "o: burgers at mine on Sunday?", "s: I'll bring my own veggie ones, you know me"),
            ),
            "sq": "What diet does {P} follow?",
            "sa": "Vegetarian.",
            "oq": "Would a steakhouse be a good pick for {P}'s birthday dinner?",
            "oa": "No: {P} is vegetarian.",
        },
        {
            "key": "sweet",
            "cat": "food",
            "blocks": (),
            "main": (("pref", "s: my sweet tooth is out of control, I had cake for breakfast"),),
            "sq": "What kind of treats does {P} crave?",
            "sa": "Sweet things like cake.",
            "oq": "Would {P} be pleased with a box of pastries?",
            "oa": "Very likely: {P} has a sweet tooth.",
        },
        {
            "key": "flying",
            "cat": "travel",
            "blocks": ("far",),
            "main": (
                ("pref", "s: I hate flying, I'd rather spend two days on trains"),
                ("pref", "o: just fly, it's an hour!", "s: never. planes and me don't mix"),
            ),
            "sq": "Which way of travelling does {P} dread?",
            "sa": "Flying.",
            "oq": "Would {P} prefer the train to a plane for a trip to Paris?",
            "oa": "Yes: {P} hates flying.",
        },
        {
            "key": "snow",
            "cat": "holiday",
            "blocks": (),
            "main": (("pref", "s: nothing beats a week of skiing, I live for fresh snow"),),
            "sq": "What kind of holiday does {P} love most?",
            "sa": "Skiing holidays.",
            "oq": "Would {P} likely enjoy a winter holiday in the Alps?",
            "oa": "Yes: {P} loves skiing.",
        },
        {
            "key": "beach",
            "cat": "holiday",
            "blocks": (),
            "main": (("pref", "s: give me a beach and a book and I'm happy for a week"),),
            "sq": "What is {P}'s idea of a perfect holiday?",
            "sa": "A beach and a book.",
            "oq": "Would {P} enjoy a lazy week at a seaside resort?",
            "oa": "Yes: {P} loves beach holidays.",
        },
        {
            "key": "mornings",
            "cat": "time",
            "blocks": ("early",),
            "main": (("pref", "s: I am not a morning person, don't talk to me before ten"),),
            "sq": "What time of day does {P} struggle with?",
            "sa": "Early mornings.",
            "oq": "Would {P} enjoy a 6am sunrise boot camp?",
            "oa": "No: {P} is not a morning person.",
        },
        {
            "key": "crowds",
            "cat": "social",
            "blocks": (),
            "main": (("pref", "s: I hate crowds, big gigs make me panic a bit"),),
            "sq": "What kind of situation makes {P} uncomfortable?",
            "sa": "Crowds.",
            "oq": "Would {P} enjoy a packed three-day music festival?",
            "oa": "Probably not: {P} hates crowds.",
        },
        {
            "key": "jazz",
            "cat": "music",
            "blocks": (),
            "main": (("pref", "s: I've been listening to nothing but old jazz records lately"),),
            "sq": "What music is {P} into?",
            "sa": "Jazz.",
            "oq": "Would {P} enjoy an evening at a club with a live saxophone quartet?",
            "oa": "Likely: {P} loves jazz.",
        },
        {
            "key": "horror",
            "cat": "film",
            "blocks": (),
            "main": (("pref", "s: horror films are a hard no, I didn't sleep for a week after the last one"),),
            "sq": "What film genre does {P} refuse to watch?",
            "sa": "Horror.",
            "oq": "Would {P} want to join a scary-movie marathon on Halloween?",
            "oa": "No: {P} avoids horror films.",
        },
        {
            "key": "coffee",
            "cat": "drink",
            "blocks": (),
            "main": (("pref", "s: I'm a total coffee snob now, I weigh my beans every morning"),),
            "sq": "What drink is {P} fussy about?",
            "sa": "Coffee.",
            "oq": "Would {P} appreciate a bag of single-origin beans?",
            "oa": "Yes: {P} is a coffee snob.",
        },
        {
            "key": "teetotal",
            "cat": "drink",
            "blocks": (),
            "main": (("pref", "s: I don't drink at all these days, alcohol-free everything"),),
            "sq": "What has {P} stopped drinking?",
            "sa": "Alcohol.",
            "oq": "Would {P} enjoy a wine-tasting tour?",
            "oa": "Probably not: {P} doesn't drink alcohol.",
        },
    ),
    "zh": (
        {
            "key": "spicy",
            "cat": "food",
            "blocks": ("spicy",),
            "main": (
                ("pref", "s: 我一点辣都吃不了，微辣都不行"),
                ("pref", "o: 周末去吃火锅吧？", "s: 行，但我只能吃清汤锅，你懂的"),
            ),
            "sq": "{P}在饮食上有什么忌口？",
            "sa": "不能吃辣",
            "oq": "带{P}去吃正宗的川味麻辣烫合适吗？",
            "oa": "不合适，{P}一点辣都吃不了。",
        },
        {
            "key": "veggie",
            "cat": "food",
            "blocks": ("meat",),
            "main": (("pref", "s: 我吃素好几年了，一点都不想吃肉"),),
            "sq": "{P}有什么饮食习惯？",
            "sa": "吃素",
            "oq": "请{P}去吃烤肉自助合适吗？",
            "oa": "不合适，{P}吃素。",
        },
        {
            "key": "sweet",
            "cat": "food",
            "blocks": (),
            "main": (("pref", "s: 我就是爱吃甜的，一天不吃蛋糕就难受"),),
            "sq": "{P}特别爱吃什么？",
            "sa": "甜食、蛋糕",
            "oq": "送{P}一盒点心礼盒合适吗？",
            "oa": "合适，{P}爱吃甜的。",
        },
        {
            "key": "flying",
            "cat": "travel",
            "blocks": ("far",),
            "main": (("pref", "s: 我特别怕坐飞机，能坐高铁绝不坐飞机"),),
            "sq": "{P}出行最怕坐什么？",
            "sa": "飞机",
            "oq": "去一千公里外的城市，{P}会更愿意坐火车吗？",
            "oa": "会，{P}很怕坐飞机。",
        },
        {
            "key": "snow",
            "cat": "winter",
            "blocks": (),
            "main": (("pref", "s: 冬天最爱去滑雪，一年不去浑身难受"),),
            "sq": "{P}冬天最喜欢什么活动？",
            "sa": "滑雪",
            "oq": "约{P}冬天去崇礼玩几天，{P}会想去吗？",
            "oa": "很可能会，{P}爱滑雪。",
        },
        {
            "key": "cold",
            "cat": "winter",
            "blocks": ("cold", "snow"),
            "main": (("pref", "s: 我特别怕冷，冬天恨不得不出门"),),
            "sq": "{P}最受不了什么天气？",
            "sa": "冷天",
            "oq": "冬天约{P}去东北看冰雕，{P}会乐意吗？",
            "oa": "多半不乐意，{P}特别怕冷。",
        },
        {
            "key": "mornings",
            "cat": "time",
            "blocks": ("early",),
            "main": (("pref", "s: 我早上真的起不来，十点前别找我"),),
            "sq": "{P}最怕什么时间段？",
            "sa": "早上",
            "oq": "约{P}早上五点去爬山看日出，{P}会乐意吗？",
            "oa": "多半不乐意，{P}早上起不来。",
        },
        {
            "key": "crowds",
            "cat": "social",
            "blocks": (),
            "main": (("pref", "s: 我最怕人多的地方，一挤就心慌"),),
            "sq": "{P}不喜欢什么样的环境？",
            "sa": "人多拥挤的地方",
            "oq": "国庆节带{P}去热门景区玩，{P}会喜欢吗？",
            "oa": "不会，{P}不喜欢人多的地方。",
        },
        {
            "key": "coffee",
            "cat": "drink",
            "blocks": (),
            "main": (("pref", "s: 我现在每天离不开咖啡，只喝手冲"),),
            "sq": "{P}每天离不开什么饮料？",
            "sa": "咖啡（手冲）",
            "oq": "送{P}一包精品豆子合适吗？",
            "oa": "合适，{P}爱喝手冲咖啡。",
        },
        {
            "key": "teetotal",
            "cat": "drink",
            "blocks": (),
            "main": (("pref", "s: 我现在滴酒不沾了"),),
            "sq": "{P}戒了什么？",
            "sa": "酒",
            "oq": "请{P}去酒吧品酒合适吗？",
            "oa": "不太合适，{P}不喝酒。",
        },
        {
            "key": "standup",
            "cat": "show",
            "blocks": (),
            "main": (("pref", "s: 最近迷上了脱口秀，每周都去看现场"),),
            "sq": "{P}最近迷上了什么演出？",
            "sa": "脱口秀",
            "oq": "{P}会想要一张喜剧专场的票吗？",
            "oa": "很可能会，{P}爱看脱口秀。",
        },
    ),
}

# Children's milestones (dated).
KID_EVENTS: dict[str, tuple[dict[str, Any], ...]] = {
    "en": (
        {
            "key": "school",
            "main": (
                ("event", "s: {kname} started school {when}! {ksub} marched in without looking back"),
                (
                    "event",
                    "o: how was {kname}'s first day at school?",
                    "s: loved it, {ksub} wants to go on Saturdays too",
                ),
            ),
            "wq": "When did {P}'s {krel} start school?",
            "short": "{kname} started school",
        },
        {
            "key": "bike",
            "main": (("event", "s: {kname} rode a bike without stabilisers {when}!!"),),
            "wq": "When did {P}'s {krel} learn to ride a bike?",
            "short": "{kname} learned to ride a bike",
        },
        {
            "key": "tooth",
            "main": (("event", "s: {kname} lost {kposs} first tooth {when}, the tooth fairy paid way too much"),),
            "wq": "When did {P}'s {krel} lose a first tooth?",
            "short": "{kname} lost a first tooth",
        },
        {
            "key": "swim",
            "main": (("event", "s: {kname} swam a whole width of the pool {when}, I cried at the side"),),
            "wq": "When did {P}'s {krel} first swim a width on {kposs} own?",
            "short": "{kname} learned to swim",
        },
    ),
    "zh": (
        {
            "key": "school",
            "main": (
                ("event", "s: {when}{kname}第一天上学，头都不回就进去了"),
                ("event", "o: {kname}第一天上学怎么样？", "s: 可开心了，周末都吵着要去"),
            ),
            "wq": "{P}的{krel}是什么时候开始上学的？",
            "short": "{kname}开始上学",
        },
        {
            "key": "bike",
            "main": (("event", "s: {kname}{when}学会骑自行车了，不用辅助轮！"),),
            "wq": "{P}的{krel}是什么时候学会骑自行车的？",
            "short": "{kname}学会骑自行车",
        },
        {
            "key": "tooth",
            "main": (("event", "s: {kname}{when}掉了第一颗牙，可兴奋了"),),
            "wq": "{P}的{krel}是什么时候掉第一颗牙的？",
            "short": "{kname}掉了第一颗牙",
        },
        {
            "key": "swim",
            "main": (("event", "s: {kname}{when}学会游泳了，自己游了一整个来回"),),
            "wq": "{P}的{krel}是什么时候学会游泳的？",
            "short": "{kname}学会游泳",
        },
    ),
}

# --------------------------------------------------------------------------------------------------------------
# Templates for the kinds whose wording does not depend on a pool entry: TPL[kind][mode][lang].

TPL: dict[str, dict[str, dict[str, tuple[Tpl, ...]]]] = {
    "home": {
        "main": {
            "en": (
                ("city", "s: still in {city}, still in {place}, still moaning about the rent"),
                ("city", "s: {city} is grey and drizzly today but I do love it here"),
                ("city", "o: are you still living in {city}?", "s: yep, same place, {place}"),
                ("city", "s: walked right across {city} today, forgot how big it is"),
            ),
            "zh": (
                ("city", "s: 我还在{city}呢，住{place}"),
                ("city", "s: {city}今天天气不错，我还挺喜欢这里的"),
                ("city", "o: 你现在还住{city}吧？", "s: 对，还是老地方"),
                ("city", "s: 今天骑车绕了大半个{city}，腿都酸了"),
            ),
        },
        "again": {
            "en": (
                ("city", "s: the Saturday market in {city} was heaving this morning"),
                ("city", "s: my landlord here in {city} finally fixed the boiler"),
            ),
            "zh": (("city", "s: {city}最近到处修路，堵死了"), ("city", "s: 我们{city}这边新开了一家书店，改天带你去")),
        },
    },
    "move": {
        "plan": {
            "en": (
                ("plan", "s: we're seriously thinking about moving to {to}"),
                ("plan", "s: been looking at flats in {to} every evening, rents are a bit kinder there"),
            ),
            "zh": (("plan", "s: 我在考虑搬去{to}"), ("plan", "s: 最近天天在看{to}的房子")),
        },
        "main": {
            "en": (
                ("to from", "s: moved from {frm} to {to} {when}! boxes everywhere"),
                ("to", "s: first night in the new place in {to}, sleeping on a mattress on the floor"),
                ("to", "o: so how's {to}? all unpacked?", "s: ha, nowhere near, but I love it"),
                ("to from", "s: said goodbye to {frm} {when}, officially living in {to} now"),
                ("to", "s: moved into the new place in {to} {when}, never moving again"),
            ),
            "zh": (
                ("to from", "s: {when}从{frm}搬到{to}了，家里全是箱子"),
                ("to", "s: 在{to}的新家住了第一晚，床还没到，睡的地铺"),
                ("to", "o: 在{to}住得习惯吗？", "s: 还行，箱子还没拆完"),
                ("to from", "s: {when}离开{frm}了，现在正式是{to}人了哈哈"),
            ),
        },
        "again": {
            "en": (
                ("to", "s: the new flat in {to} gets so much light, the plants are thriving"),
                ("to", "s: still getting lost in {to} lol, took the wrong bus twice this week"),
            ),
            "zh": (("to", "s: {to}的新家采光特别好，花都长疯了"), ("to", "s: 来{to}这么久了还是会坐错公交")),
        },
    },
    "job": {
        "main": {
            "en": (
                ("role emp", "s: {Act} at {emp} today, being {a_role} is no joke"),
                ("role emp", "s: another long day at {emp}. {Act}. the joys of being {a_role}"),
                ("emp", "o: still at {emp}?", "s: still there, same old"),
                ("role", "s: people think {a_role} has it easy, they should try {act}"),
            ),
            "zh": (
                ("role emp", "s: 今天在{emp}{act}，当{role}真不容易"),
                ("role emp", "s: {emp}又加班，{act}，{role}的命"),
                ("emp", "o: 你还在{emp}吗？", "s: 还在，老样子"),
                ("role", "s: 谁说{role}轻松的，今天{act}"),
            ),
        },
        "again": {
            "en": (
                ("emp", "s: they moved my desk at {emp} next to the printer, kill me"),
                ("role", "s: the worst part of being {a_role}? the paperwork nobody warns you about"),
            ),
            "zh": (("emp", "s: {emp}食堂今天居然有小龙虾"), ("role", "s: 当{role}最烦的还是各种表格")),
        },
    },
    "jobchange": {
        "plan": {
            "en": (
                ("plan from", "s: I've got an interview at {emp} on Thursday, I'm thinking of leaving {old}"),
                ("plan from", "s: {old} is grinding me down, there's {a_role} job going at {emp}"),
            ),
            "zh": (
                ("plan from", "s: 想从{old}跳槽了，周四去{emp}面试"),
                ("plan from", "s: 在{old}干得太累了，{emp}在招{role}"),
            ),
        },
        "main": {
            "en": (
                ("role emp from", "s: big news: I left {old}! started at {emp} as {a_role} {when}"),
                ("emp", "s: first week at {emp} done, everyone is so nice"),
                ("emp", "o: did you take the {emp} job in the end?", "s: I did! started {when}"),
                ("role emp", "s: started the new job at {emp} {when}, being {a_role} there suits me"),
                ("from emp", "s: handed my badge back at {old} and started at {emp} {when}. wild"),
            ),
            "zh": (
                ("role emp from", "s: 跟你说个事，我从{old}离职了！{when}去{emp}做{role}了"),
                ("emp", "s: 在{emp}上班第一周，同事都挺好"),
                ("emp", "o: 你最后去{emp}了吗？", "s: 去了！{when}入职的"),
                ("role emp", "s: {when}开始在{emp}做{role}了，挺适合我"),
            ),
        },
        "again": {
            "en": (
                ("emp", "s: the team at {emp} took me out for lunch, still can't believe I work there now"),
                ("role emp", "s: months in as {a_role} at {emp} and I haven't regretted it once"),
            ),
            "zh": (("emp", "s: {emp}的同事今天请我吃饭，好感动"), ("role emp", "s: 在{emp}当{role}越来越顺手了")),
        },
    },
    "pet": {
        "main": {
            "en": (
                ("name breed", "s: {name} stole a whole sandwich off the counter today. {breed}s, honestly"),
                ("name breed", "s: had to take {name} to the vet, my poor {breed} ate a sock"),
                ("name breed", "o: how's {name} doing?", "s: fat and happy, my little {breed}"),
                ("name breed", "s: {name} got a fancy new bed and refuses to use it. typical {breed}"),
            ),
            "zh": (
                ("name breed", "s: 我家{name}今天把拖鞋咬烂了，这只{breed}太皮了"),
                ("name breed", "s: 带{name}去打疫苗了，我家{breed}怕打针，叫得整栋楼都听见"),
                ("name breed", "o: 你家{name}最近怎么样？", "s: 胖了两斤，我家{breed}太能吃了"),
            ),
        },
        "again": {
            "en": (
                ("name breed", "s: {name} has learned to sit! smartest {breed} in the world"),
                ("name breed", "s: took {name} to the beach, daft {breed} tried to eat a wave"),
            ),
            "zh": (
                ("name breed", "s: {name}学会握手了！我们家{breed}太聪明了"),
                ("name breed", "s: 带{name}去公园，这只{breed}疯跑了一下午"),
            ),
        },
    },
    "adopt": {
        "plan": {
            "en": (
                ("plan", "s: we're going to meet a {breed} at the rescue centre on Saturday, fingers crossed"),
                ("plan", "s: we've been looking at rescue {species}s online every single night"),
            ),
            "zh": (
                ("plan", "s: 周六去救助站看一只{breed}，希望能带回家"),
                ("plan", "s: 最近天天在网上看领养{species}的信息"),
            ),
        },
        "main": {
            "en": (
                ("name breed", "s: we finally adopted a {breed}! {Pposs} name is {name}"),
                ("name breed", "s: meet {name}!! brought {pobj} home {when}, the cutest little {breed}"),
                ("name breed", "o: wait, did you actually get the {breed}??", "s: we did!! {name}, {weeks} weeks old"),
            ),
            "zh": (
                ("name breed", "s: 我们终于领养了一只{breed}，叫{name}"),
                ("name breed", "s: {when}把{name}接回家了，一只{breed}{baby}，超可爱"),
                ("name breed", "o: 你真的去抱那只{breed}了？", "s: 抱回来了！叫{name}，才两个月大"),
            ),
        },
        "again": {
            "en": (
                ("name breed", "s: {name} has doubled in size already, my tiny {breed} is not so tiny"),
                ("name breed", "s: {name} chewed through a phone charger, this {breed} will be the death of me"),
            ),
            "zh": (
                ("name breed", "s: {name}长得好快，{breed}一个月一个样"),
                ("name breed", "s: {name}把充电线咬断了，这只{breed}要上天"),
            ),
        },
    },
    "partner": {
        "main": {
            "en": (
                ("name", "s: my {rel} {pname} is cooking tonight, bless {pobj}"),
                (
                    "name",
                    "o: how's {pname} doing?",
                    "s: good! my {rel} and I have been together {years} years now, can you believe it",
                ),
                ("name", "s: my {rel} {pname} and I finally had a date night, first one in forever"),
                ("name", "s: {rel} update: {pname} has started snoring. send help"),
            ),
            "zh": (
                ("name", "s: 我{rel}{pname}今晚做饭，我就等着吃了"),
                ("name", "o: {pname}最近怎么样？", "s: 挺好的，我跟我{rel}在一起{years}年了"),
                ("name", "s: 今天和我{rel}{pname}去看电影了，难得约会一次"),
                ("name", "s: 我{rel}{pname}最近打呼噜，吵死了"),
            ),
        },
        "again": {
            "en": (("mention", "s: {pname} says hi, by the way"),),
            "zh": (("mention", "s: {pname}让我跟你问好"),),
        },
    },
    "pjob": {
        "main": {
            "en": (
                ("job", "s: {pname} just qualified as {a_prole}, so proud of {pobj}"),
                ("job", "s: {pname} is working late again, that's the life of {a_prole} for you"),
                ("job", "o: is {pname} still working as {a_prole}?", "s: yep, still loves it"),
            ),
            "zh": (
                ("job", "s: {pname}考下证了，正式当上{prole}了"),
                ("job", "s: {pname}又加班，当{prole}就是这样"),
                ("job", "o: {pname}还在当{prole}吗？", "s: 对，干得挺开心"),
            ),
        },
    },
    "engage": {
        "main": {
            "en": (
                ("event", "s: {pname} proposed!!! {when}, I said yes obviously"),
                ("event", "o: wait is that a RING in your photo??", "s: YES. {pname} asked {when}"),
                ("event", "s: so... {pname} proposed {when} and we're engaged!!"),
            ),
            "zh": (
                ("event", "s: {pname}{when}跟我求婚了！！我答应了"),
                ("event", "o: 朋友圈那个戒指是怎么回事？？", "s: 哈哈哈{pname}{when}求婚了"),
                ("event", "s: 官宣一下，{pname}{when}求婚，我们订婚了！"),
            ),
        },
    },
    "kid": {
        "main": {
            "en": (
                ("name", "s: my {krel} {kname} turns {kage1} next month and wants a dinosaur cake"),
                ("name", "s: my {krel} {kname} has discovered the word 'why'. every sentence. why"),
                ("name", "o: how's little {kname}?", "s: a whirlwind! my {krel} is {kage} going on fifteen"),
                ("name", "s: school run with my {krel} {kname} this morning, took twenty minutes to choose socks"),
            ),
            "zh": (
                ("name", "s: 我{krel}{kname}下个月就{kage1}岁了，吵着要恐龙蛋糕"),
                ("name", "s: 我{krel}{kname}天天问为什么，我快疯了"),
                ("name", "o: 你家{kname}最近怎么样？", "s: 皮得很，我{krel}才{kage}岁就管不住了"),
                ("name", "s: 早上送{krel}{kname}出门，光挑袜子就挑了二十分钟"),
            ),
        },
        "again": {
            "en": (("mention", "s: {kname} drew me a portrait. I have seven fingers apparently"),),
            "zh": (("mention", "s: {kname}给我画了一幅画，我有七根手指哈哈"),),
        },
    },
    "hobby": {
        "main": {
            "en": (
                ("hobby", "s: {Doing} again this weekend, I'm hooked"),
                ("hobby", "s: can't do Thursday, that's my {noun} night"),
                ("hobby", "o: still doing the {noun}?", "s: every week! it's my happy place"),
                ("hobby", "s: honestly {noun} is the only thing keeping me sane lately"),
            ),
            "zh": (
                ("hobby", "s: 这周末又去{go}了，上瘾"),
                ("hobby", "s: 周四不行，我要去{go}"),
                ("hobby", "o: 你还在{go}吗？", "s: 每周都去，解压"),
                ("hobby", "s: 最近全靠{noun}续命了"),
            ),
        },
        "again": {
            "en": (
                ("hobby", "s: spent all Sunday {doing}, bliss"),
                ("hobby", "s: {noun} update: still obsessed, still improving, slowly"),
            ),
            "zh": (("hobby", "s: 周日{doing}，太爽了"), ("hobby", "s: {noun}这件事我是越来越上瘾了")),
        },
    },
    "takeup": {
        "main": {
            "en": (
                ("hobby", "s: I've taken up {noun}! first session {when}"),
                ("hobby", "s: guess who signed up for {noun} {when}. this person"),
                ("hobby", "o: how was your first {noun} class?", "s: loved it, already booked the next one"),
            ),
            "zh": (
                ("hobby", "s: 我开始学{noun}了！{when}上了第一节课"),
                ("hobby", "o: 第一次{go}感觉怎么样？", "s: 太好玩了，已经约了下一次"),
            ),
        },
        "again": {
            "en": (("hobby", "s: still loving the {noun}, properly hooked since I started"),),
            "zh": (("hobby", "s: {noun}学了一阵子了，越来越上手"),),
        },
    },
    "trip": {
        "plan": {
            "en": (
                ("dest", "s: {Dest} in {month} is officially booked!!"),
                ("dest", "s: it's happening: {dest} in {month}. any tips?"),
            ),
            "zh": (
                ("dest", "s: 订好{month}月去{dest}的票了！！"),
                ("dest", "s: {month}月打算去{dest}玩，有什么推荐吗？"),
            ),
        },
        "main": {
            "en": (
                ("dest hl", "s: just got back from {dest}! {hl}"),
                ("dest comp hl", "s: {Comp} and I spent the week in {dest}, {hl}"),
                ("dest hl", "o: how was {dest}??", "s: amazing. {hl}, I'm still thinking about it"),
                ("dest hl", "s: back from {dest} {when}, the highlight: {hl}"),
                ("dest now", "o: wait, are you in {dest} right now?", "s: yep! back on Sunday"),
            ),
            "zh": (
                ("dest hl", "s: 刚从{dest}回来！{hl}，太绝了"),
                ("dest comp hl", "s: 和{comp}在{dest}玩了一周，{hl}"),
                ("dest hl", "o: {dest}好玩吗？", "s: 超好玩，{hl}，现在还想"),
                ("dest hl", "s: {when}从{dest}回来的，最难忘的是{hl}"),
                ("dest now", "o: 你现在在{dest}？", "s: 对呀，周日回"),
            ),
        },
        "solo": {
            "en": (("dest comp hl", "s: went to {dest} on my own {when}, {hl}"),),
            "zh": (("dest comp hl", "s: {when}一个人去了趟{dest}，{hl}"),),
        },
        "again": {
            "en": (
                ("dest hl", "s: still dreaming about {hl_n} in {dest}"),
                ("dest", "s: finally printed the {dest} photos, they're all over the fridge"),
            ),
            "zh": (("dest hl", "s: 还在想{dest}的{hl_n}"), ("dest", "s: {dest}的照片终于洗出来了，贴了一冰箱")),
        },
    },
    "echo": {
        "main": {
            "en": (
                ("dest year", "s: ooh I went to {dest} back in {year}! loved {hl_n}"),
                ("dest year", "s: {dest}! I was there in {year}, so jealous"),
            ),
            "zh": (
                ("dest year", "s: 我{year}年也去过{dest}！特别喜欢{hl_n}"),
                ("dest year", "s: {dest}我{year}年去过，羡慕"),
            ),
        },
    },
    "purchase": {
        "plan": {
            "en": (("plan", "s: can't decide between the {colour} {item} and the {alt} one"),),
            "zh": (("plan", "s: 纠结买{colour}的{item}还是{alt}的"),),
        },
        "main": {
            "en": (
                ("item colour", "s: bought {a_colour} {item} {when}! no regrets"),
                ("item colour", "o: did you go for the {colour} {item} in the end?", "s: yep, the {colour} one!"),
                ("item colour", "o: so which {item} did you get, the {alt} or the {colour}?", "s: {colour}! obviously"),
                ("item colour", "o: wait, is that the {colour} {item} you showed me in the shop?", "s: that one!"),
                ("item", "s: treated myself to a new {item} {when}, don't tell anyone"),
            ),
            "zh": (
                ("item colour", "s: {when}买了{mw}{colour}的{item}！"),
                ("item colour", "o: 你最后买的是{colour}的那{mw}{item}吗？", "s: 对，就是那{mw}"),
                ("item colour", "o: {item}买了哪个颜色？{alt}还是{colour}？", "s: {colour}！"),
                ("item colour", "o: 是上次给我看的那{mw}{colour}的{item}吗？", "s: 就是那{mw}，眼光不错吧"),
                ("item", "s: {when}给自己买了{mw}{item}，不后悔"),
            ),
        },
        "again": {
            "en": (("item colour", "s: the {colour} {item} is the best thing I've bought all year"),),
            "zh": (("item colour", "s: 那{mw}{colour}的{item}真的买对了"),),
        },
    },
    "tp_info": {
        "main": {
            "en": (
                ("job city", "s: my {rel} {tname} just got a job as {a_trole} in {tcity}"),
                ("job", "s: {tname}, my {rel}, is {a_trole} now and says it's exhausting"),
                ("city", "o: is your {rel} {tname} still in {tcity}?", "s: yep, {tsub} loves it there"),
            ),
            "zh": (
                ("job city", "s: 我{rel}{tname}在{tcity}当{trole}"),
                ("job", "s: 我{rel}{tname}现在做{trole}，天天喊累"),
                ("city", "o: 你{rel}{tname}还在{tcity}吗？", "s: 在呢，说不想回来了"),
            ),
        },
    },
    "tp_trip": {
        "main": {
            "en": (
                ("dest", "s: my {rel} {tname} is in {dest} this week, sending me pictures of {hl_n}"),
                ("dest", "s: my {rel} {tname} just got back from {dest}, loved it"),
            ),
            "zh": (
                ("dest", "s: 我{rel}{tname}这周在{dest}，天天给我发{hl_n}的照片"),
                ("dest", "s: 我{rel}{tname}刚从{dest}回来，说特别好玩"),
            ),
        },
    },
    "tp_pet": {
        "main": {
            "en": (("pet", "s: my {rel} {tname} just adopted a {breed} called {pet}"),),
            "zh": (("pet", "s: 我{rel}{tname}刚领养了一只{breed}，叫{pet}"),),
        },
    },
    "tp_baby": {
        "main": {
            "en": (("baby", "s: my {rel} {tname} had a baby {when}! a little {bkid} called {bname}"),),
            "zh": (("baby", "s: 我{rel}{tname}{when}生了！是个{bkid}，叫{bname}"),),
        },
        "main_m": {
            "en": (("baby", "s: my {rel} {tname} became a dad {when}! a little {bkid} called {bname}"),),
            "zh": (("baby", "s: 我{rel}{tname}{when}当爸爸了！是个{bkid}，叫{bname}"),),
        },
    },
    "tp_wed": {
        "main": {
            "en": (("wed", "s: my {rel} {tname} got married {when} in {wplace}, I cried the whole time"),),
            "zh": (("wed", "s: 我{rel}{tname}{when}结婚了，婚礼在{wplace}办的"),),
        },
    },
}
WEDDING_PLACES = {
    "en": ("a barn in Devon", "a castle in Wales", "a boathouse on a lake", "the town hall"),
    "zh": ("海边", "老家", "一个草坪上", "一家老酒店"),
}

# --------------------------------------------------------------------------------------------------------------
# Filler: openers, reactions, small talk, closings. None of it states a fact of the fact sheet, and it avoids
# anything that could contradict one (no meat, spice, alcohol, flights or animals in small talk).

OPEN_X = {
    "en": (
        "hey {Y}!",
        "hiya",
        "morning!",
        "you around?",
        "hey, long time no chat",
        "heyy",
        "evening!",
        "hi hi",
        "oi {Y}",
        "quick hello!",
        "knock knock",
        "ok I have news",
    ),
    "zh": ("在吗？", "{Y}！", "早呀", "好久没聊了", "嘿", "下班没？", "晚上好", "哈喽哈喽", "有空吗？", "跟你说个事"),
}
OPEN_Y = {
    "en": (
        "hey you!",
        "hi! how's things?",
        "heyyy",
        "hello stranger",
        "here! what's up?",
        "hiii",
        "ooh hello",
        "yo",
        "always around for you",
        "go on then",
    ),
    "zh": ("在的在的", "哈喽", "怎么啦", "好久不见！", "来了来了", "在呢", "嗨", "说吧", "刚忙完"),
}
HOW_X = {
    "en": ("how's your week been?", "how are things?", "all good with you?", "how's life?"),
    "zh": ("最近怎么样？", "最近忙啥呢？", "还好吗？", "这周过得咋样？"),
}
HOW_Y = {
    "en": (
        "same old, same old",
        "good! bit knackered",
        "yeah fine, thanks",
        "honestly? ready for the weekend",
        "all good",
        "surviving, just about",
        "pretty good actually!",
        "can't complain",
    ),
    "zh": ("还行吧，老样子", "挺好的", "忙死了", "就那样，你呢？", "还不错", "凑合", "累但开心"),
}
CLOSE_X = {
    "en": (
        "anyway, gotta run",
        "talk soon!",
        "ok I'm off to bed, night!",
        "right, back to it",
        "let's catch up properly soon",
        "my dinner's ready, speak later",
        "phone's on 2%, bye!",
    ),
    "zh": ("先不聊了，去忙了", "晚安！", "回头聊", "我去做饭了", "领导叫我了，回聊", "睡了睡了", "手机没电了，拜拜"),
}
CLOSE_Y = {
    "en": ("bye!!", "night!", "laters", "yes please!", "speak soon x", "go go go", "enjoy!", "ttyl"),
    "zh": ("好的，拜拜", "晚安～", "回聊", "去吧去吧", "好嘞", "拜拜～", "嗯嗯"),
}
REACT: dict[str, dict[str, tuple[str, ...]]] = {
    "happy": {
        "en": (
            "congrats!!",
            "oh that's brilliant",
            "yesss",
            "love that for you",
            "so happy for you",
            "no way, that's great",
            "ahh nice one",
            "finally!",
            "that's huge",
            "amazing",
        ),
        "zh": ("恭喜恭喜！", "太好了！", "哇，牛", "终于！", "为你开心", "好棒", "厉害了", "可以啊"),
    },
    "sad": {
        "en": (
            "oh no",
            "ugh, sorry",
            "that sounds rough",
            "poor you",
            "hope it heals quickly",
            "oof",
            "sending hugs",
            "take it easy",
        ),
        "zh": ("啊，心疼", "好惨", "抱抱", "早点好起来", "天哪", "辛苦了", "唉，注意休息"),
    },
    "neutral": {
        "en": (
            "haha yes",
            "nice",
            "fair enough",
            "oh cool",
            "ha, classic",
            "makes sense",
            "ooh",
            "lol",
            "right?",
            "good to know",
            "noted",
            "haha of course",
        ),
        "zh": ("哈哈哈", "好的", "对对对", "懂了", "可以可以", "嗯嗯", "笑死", "有道理", "原来如此", "好家伙"),
    },
    "wow": {
        "en": (
            "wow",
            "jealous!!",
            "no way",
            "that sounds unreal",
            "send pics!",
            "so jealous",
            "stop it, I want to go",
            "ahh I love that",
        ),
        "zh": ("哇", "羡慕！", "真的假的", "绝了", "发照片！", "我也想去", "酸了", "好羡慕"),
    },
}
FOLLOW = {
    "en": ("haha thanks", "right??", "yeah, I know", "ta", "cheers", "I know!", "honestly", "haha yep"),
    "zh": ("哈哈谢谢", "是吧", "嘿嘿", "谢啦", "对吧", "可不是嘛"),
}
ASK_BACK = {
    "en": (
        ("anyway, what about you?", "oh, nothing exciting, work work work"),
        ("enough about me, how's your week?", "quiet! which is nice"),
        ("what's new with you?", "not much honestly, same old"),
    ),
    "zh": (
        ("说说你吧，最近咋样？", "没啥新鲜事，上班下班"),
        ("你呢？", "老样子，没啥变化"),
        ("你最近忙啥？", "瞎忙呗"),
    ),
}
DEDUPE_SUFFIX = {"en": (" haha", " lol", "!", " :)"), "zh": ("哈哈", "～", "！", "嘿嘿")}
MOODS = {
    "home": "neutral",
    "move": "happy",
    "job": "neutral",
    "jobchange": "happy",
    "pet": "neutral",
    "adopt": "happy",
    "partner": "neutral",
    "pjob": "neutral",
    "engage": "happy",
    "kid": "neutral",
    "kidevent": "happy",
    "hobby": "neutral",
    "takeup": "happy",
    "trip": "wow",
    "echo": "neutral",
    "health": "sad",
    "cond": "neutral",
    "purchase": "neutral",
    "goal": "happy",
    "pref": "neutral",
    "tp_info": "neutral",
    "tp_trip": "wow",
    "tp_pet": "neutral",
    "tp_baby": "happy",
    "tp_wed": "happy",
}

SMALL_TALK = {
    "en": (
        ("x: what are you up to this weekend?", "y: nothing much, {chore}", "x: living the dream haha"),
        ("x: {weather}", "y: {weather_reply}"),
        ("x: what's for dinner tonight?", "y: {dish}", "x: sounds good to me"),
        ("x: have you started the new series of {show}?", "y: not yet! no spoilers", "x: my lips are sealed"),
        ("x: I'm so tired today", "y: same, this week is never-ending"),
        ("x: did you see the video I sent?", "y: hahaha yes, watched it three times"),
        ("x: can't believe it's {month} already", "y: I know, where did the year go"),
        (
            "x: random question, do you still have my {borrowed}?",
            "y: oh god, yes, sorry! I'll bring it next time",
            "x: haha no rush",
        ),
        (
            "x: need a podcast for the commute, any ideas?",
            "y: try {podcast}, it's about {podtopic}",
            "x: ooh adding it now",
        ),
        ("x: traffic was horrendous this morning", "y: ugh, roadworks everywhere"),
        ("x: the group chat is chaos today", "y: I muted it an hour ago lol"),
        ("x: I keep forgetting to reply to emails", "y: same, my inbox is a disaster"),
        ("x: that quiz you sent me, I got 7 out of 10", "y: ha, I got 6, you win"),
        ("x: my phone screen cracked again", "y: noooo", "x: third time this year"),
        ("x: just watched the finale of {show}", "y: and??", "x: not saying a word, just watch it"),
        ("x: how's your day going?", "y: slowly. yours?", "x: same, clock-watching"),
        ("x: I made {dish} last night and it was actually good", "y: look at you, chef"),
        (
            "x: guess what, I finally fixed the wobbly table",
            "y: a DIY miracle",
            "x: it took three videos and a lot of swearing",
        ),
        ("x: my neighbour is drilling again", "y: at this hour?", "x: every single day"),
        (
            "x: I've started going to bed at ten, I'm a new person",
            "y: who are you and what have you done with my friend",
        ),
        ("x: just spent forty minutes on hold to the bank", "y: noooo, did you get through?", "x: eventually"),
        ("x: I'm reading that book you recommended", "y: and?", "x: can't put it down"),
        ("x: my laptop decided to update in the middle of a call", "y: classic"),
        ("x: the supermarket moved everything around again", "y: why do they always do that"),
        ("x: I tried that crossword app you mentioned", "y: addictive, right?", "x: twelve-day streak and counting"),
        ("x: someone left a box of free books on my street", "y: ooh did you take any?", "x: four, obviously"),
        ("x: lost my keys for an hour this morning", "y: where were they?", "x: in my hand. don't ask"),
    ),
    "zh": (
        ("x: 吃了吗？", "y: 刚吃完，{dish}", "x: 听着就香"),
        ("x: {weather}", "y: {weather_reply}"),
        ("x: 周末干嘛呢？", "y: 在家躺着，{chore}", "x: 羡慕"),
        ("x: 你看《{show}》了没？", "y: 还没，别剧透！", "x: 好好好，闭嘴了"),
        ("x: 今天好累", "y: 我也是，这周太长了"),
        ("x: 刚刷到一个视频笑死我了", "y: 发我看看", "x: 发你了，看完记得回我"),
        ("x: 转眼就{month}了", "y: 是啊，时间过得太快了"),
        ("x: 群里今天好热闹", "y: 我早就屏蔽了哈哈"),
        ("x: 今天地铁挤爆了", "y: 早高峰就是这样，习惯了"),
        ("x: 最近在追什么剧？", "y: 《{show}》，还挺好看"),
        ("x: 你上次借我的{borrowed}还在我这儿", "y: 不急不急，下次见面再给我"),
        ("x: 手机屏幕又摔碎了", "y: 啊？", "x: 今年第三次了"),
        ("x: 推荐个播客呗，通勤听", "y: 听听《{podcast}》，讲{podtopic}的", "x: 好，马上去搜"),
        ("x: 今天工作好多", "y: 摸鱼一下，别太累"),
        ("x: 你今天过得怎么样？", "y: 平平无奇，你呢？", "x: 一样一样"),
        ("x: 昨晚自己做了{dish}，居然还挺好吃", "y: 大厨啊"),
        ("x: 今天又被拉去开了三个会", "y: 开会开到怀疑人生"),
        ("x: 楼上又在装修，电钻声吵死了", "y: 周末也装修？", "x: 天天装"),
        ("x: 刚跟银行客服磨了四十分钟", "y: 解决了没", "x: 总算解决了"),
        ("x: 你推荐的那本书我在看了", "y: 怎么样？", "x: 停不下来"),
        ("x: 电脑开会开到一半自动更新了", "y: 经典"),
        ("x: 超市又把货架全换了位置", "y: 每次都找不到东西"),
        ("x: 我最近在玩那个填字小游戏", "y: 上瘾吧", "x: 已经连续打卡十二天了"),
        ("x: 早上找钥匙找了一个小时", "y: 在哪找到的？", "x: 在我手里……别问"),
        ("x: 快递员把我的包裹送到隔壁楼了", "y: 找回来了吗", "x: 找回来了，虚惊一场"),
        ("x: 最近开始十点睡觉了", "y: 你是谁？把我朋友还回来"),
    ),
}
SMALL_SLOTS = {
    "en": {
        "dish": (
            "pasta with whatever's in the fridge",
            "beans on toast, living the dream",
            "a big pot of vegetable soup",
            "mushroom risotto",
            "leftover noodles",
            "pancakes, don't judge",
            "a jacket potato",
            "tomato soup and toast",
        ),
        "show": ("The Lantern House", "Harbour Lights", "Quiet Street", "The Long Field", "Paper Kings", "Northbound"),
        "chore": (
            "laundry and a nap",
            "finally cleaning the oven",
            "tidying the wardrobe",
            "batch cooking for the week",
            "sorting out the recycling mountain",
            "ironing, sadly",
        ),
        "borrowed": ("umbrella", "book about the Tudors", "phone charger", "big tupperware", "camping chair"),
        "podcast": ("Deep Water Tales", "Small Hours", "The Quiet Archive"),
        "podtopic": ("old shipwrecks", "weird museum objects", "forgotten inventions"),
    },
    "zh": {
        "dish": ("西红柿鸡蛋面", "一碗清汤面", "外卖的炒饭", "自己煮的粥", "素馅饺子", "凉拌黄瓜配米饭", "煎饼果子"),
        "show": ("长河", "南方小镇", "灯火人间", "山海之间", "夜航船"),
        "chore": ("洗洗衣服睡睡觉", "打扫了一下卫生", "整理衣柜", "做了一周的饭", "把冰箱清空了"),
        "borrowed": ("雨伞", "充电宝", "那本小说", "保温杯"),
        "podcast": ("深夜电台", "旧物志", "慢慢说"),
        "podtopic": ("老城故事", "奇怪的冷知识", "历史上的小人物"),
    },
}
WEATHER = {
    "en": {
        "winter": (
            ("it's freezing here, frost on every windscreen again", "stay warm!"),
            ("we had actual snow this morning!", "ooh, proper winter"),
            ("so dark by four o'clock, I hate it", "same, hibernation mode"),
        ),
        "spring": (
            ("finally some sun today", "love that"),
            ("everything's blooming round here", "so pretty"),
            ("t-shirt weather at last, almost", "don't jinx it"),
        ),
        "summer": (
            ("it's boiling, I'm melting", "stay hydrated!"),
            ("hottest day of the year apparently", "it's sticky here too"),
            ("been sitting in front of a fan all day", "same, no air con here"),
        ),
        "autumn": (
            ("leaves everywhere, it's so pretty", "cosy season!"),
            ("rain again, classic", "same, soup weather"),
            ("had to dig out my big coat today", "already? brr"),
        ),
    },
    "zh": {
        "winter": (
            ("好冷啊，今天零下了", "多穿点！"),
            ("外面下雪了！", "哇，拍照了没"),
            ("天黑得好早，五点就黑了", "冬天就是这样"),
        ),
        "spring": (("终于暖和了", "真好"), ("外面的花都开了", "出去走走呀"), ("今天可以穿短袖了", "别着凉")),
        "summer": (
            ("热死了，三十八度", "多喝水"),
            ("又下暴雨了，鞋全湿了", "我这边也是"),
            ("空调开了一整天", "电费警告"),
        ),
        "autumn": (
            ("秋天终于来了，好舒服", "最舒服的季节"),
            ("今天风好大，降温了", "记得加衣服"),
            ("桂花开了，满街都是香味", "好香"),
        ),
    },
}
REL_FILLER = {
    "cousins": (("x: mum says hi by the way", "y: aw, say hi to auntie from me!"),),
    "former colleagues": (
        (
            "x: bumped into someone from the old office today",
            "y: haha who?",
            "x: the guy who microwaved fish every Friday",
        ),
    ),
    "old flatmates": (
        ("x: found a photo of our old flat today", "y: the one with the mushroom growing in the bathroom? lol"),
    ),
    "former neighbours": (
        (
            "x: walked down our old street today",
            "y: is the blue door at number 12 still there?",
            "x: painted green now, tragic",
        ),
    ),
    "表亲": (("x: 我妈让我问你好", "y: 替我问小姨好！"),),
    "前同事": (("x: 今天碰到老公司的人了", "y: 谁呀？", "x: 那个天天带饭的大哥"),),
    "以前的室友": (("x: 翻到以前宿舍的照片了", "y: 哈哈哈那时候好土"),),
    "大学同学": (("x: 班群里有人说要搞同学聚会", "y: 又说了十年，每次都没搞成"),),
    "发小": (("x: 路过咱们小学了，门口那家小卖部还在", "y: 真的假的！"),),
}


# --------------------------------------------------------------------------------------------------------------
# Building one conversation: people, calendar, fact sheets, schedule


def article(word: str) -> str:
    return ("an " if word[:1].lower() in "aeiou" else "a ") + word


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def fill(text: str, slots: dict[str, Any]) -> str:
    return text.format_map(slots)


def lang_slots(base: dict[str, Any], key: str, words: Sequence[str], lang: str) -> dict[str, Any]:
    """``base`` plus ``key`` set to the English or Chinese word of ``words`` (a question asked in ``lang``)."""
    return {**base, key: words[0 if lang == "en" else 1]}


OFFSETS = (0, 1, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9)


class Conversation:
    """One generated conversation: its people, calendar, facts, turns and (later) queries."""

    def __init__(
        self, num: int, lang: str, rel: str, speakers: tuple[tuple[str, str], tuple[str, str]], taken: set[str]
    ) -> None:
        self.num = num
        self.ns = f"conv-{num:02d}"
        self.lang = lang
        self.rng = random.Random(f"{SEED}-long-chat-{num}")
        rng = self.rng
        self.a = Person("a", *speakers[0])
        self.b = Person("b", *speakers[1])
        self.rel = rel
        self.free_places = list(PLACES[lang])
        rng.shuffle(self.free_places)
        self.free_names = {g: [n for n in NAMES[lang][g] if n not in taken] for g in "fm"}
        for g in "fm":
            rng.shuffle(self.free_names[g])
        self.free_kids = {g: list(KID_NAMES[lang][g]) for g in "fm"}
        for g in "fm":
            rng.shuffle(self.free_kids[g])
        self.free_pets = list(PET_NAMES[lang])
        rng.shuffle(self.free_pets)
        self.n = rng.randint(15, 26)
        self.dates = self._calendar()
        self.load = [0] * self.n
        self.facts: list[Fact] = []
        self.kind_count: Counter[str] = Counter()
        self.third: dict[str, list[tuple[Person, Fact]]] = {"a": [], "b": []}
        self.used_emps: set[str] = set()
        self.turns: list[Turn] = []
        self.small_used: Counter[int] = Counter()
        self.small_here: set[tuple[int, int]] = set()
        self.seen: set[str] = set()
        self.tpl_used: Counter[Tpl] = Counter()
        last = self.dates[-1]
        self.now = datetime(last.year, last.month, last.day, 12) + timedelta(days=rng.randint(2, 20))

    # ---- calendar and schedule

    def _calendar(self) -> list[date]:
        rng = self.rng
        span = rng.randint(190, 530)
        start = date(2024, 1, 8) + timedelta(days=rng.randint(0, 400))
        while True:
            days = sorted([0, span, *rng.sample(range(1, span), self.n - 2)])
            if all(b - a >= 3 for a, b in pairwise(days)):
                return [start + timedelta(days=d) for d in days]

    def slot(self, lo: int, hi: int, avoid: Iterable[int] = ()) -> int | None:
        """A session in [lo, hi] (clipped), not in ``avoid``, among the least loaded ones."""
        lo, hi = max(0, lo), min(self.n - 1, hi)
        bad = set(avoid)
        cands = [s for s in range(lo, hi + 1) if s not in bad]
        if not cands:
            return None
        least = min(self.load[s] for s in cands)
        pick = self.rng.choice([s for s in cands if self.load[s] <= least + 1])
        self.load[pick] += 1
        return pick

    def other(self, key: str) -> str:
        return "b" if key == "a" else "a"

    def speaker(self, key: str) -> Person:
        return self.a if key == "a" else self.b

    def take_name(self, gender: str) -> str:
        return self.free_names[gender].pop()

    def add(
        self,
        kind: str,
        owner: Person,
        teller: str,
        v: dict[str, Any],
        session: int,
        *,
        dated: bool = False,
        entry: dict[str, Any] | None = None,
    ) -> Fact:
        self.kind_count[kind] += 1
        f = Fact(
            f"{kind}.{owner.key}.{self.kind_count[kind]}", kind, owner, teller, v, session, dated=dated, entry=entry
        )
        self.facts.append(f)
        self._choose_main(f)
        return f

    def templates(self, f: Fact, mode: str) -> tuple[Tpl, ...]:
        """The templates that can tell ``f`` in ``mode`` ("main", "plan" or "again")."""
        L, e = self.lang, f.entry
        if f.kind == "health":
            assert e is not None
            return tuple(e[mode]) if mode in ("main", "again") else ()
        if f.kind in ("cond", "pref", "kidevent"):
            assert e is not None
            return tuple(e["main"]) if mode == "main" else ()
        if f.kind == "goal":
            assert e is not None
            return tuple(e["done"] if mode == "main" else e["sign"] if mode == "plan" else ())
        table = TPL[f.kind]
        if f.kind == "trip" and mode == "main":
            plain = tuple(t for t in table["main"][L] if "comp" not in t[0].split())
            comp = tuple(t for t in table["main"][L] if "comp" in t[0].split())
            mode_c = f.v["comp_mode"]
            if mode_c == "none":
                return plain
            extra = table["solo"][L] if mode_c == "solo" else comp
            return extra if self.rng.random() < 0.6 else plain
        if f.kind == "tp_baby" and mode == "main" and f.owner.gender == "m":
            return table["main_m"][L]
        return table.get(mode, {}).get(L, ())

    def pick_template(self, f: Fact, mode: str) -> Tpl:
        """One of the templates for ``f`` in ``mode``, preferring the ones this conversation has used least."""
        options = self.templates(f, mode)
        least = min(self.tpl_used[t] for t in options)
        tpl = self.rng.choice([t for t in options if self.tpl_used[t] == least])
        self.tpl_used[tpl] += 1
        return tpl

    def _choose_main(self, f: Fact) -> None:
        tpl = self.pick_template(f, "main")
        f.tpl = tpl
        if not f.dated:
            return
        if "now" in tpl[0].split():
            off = 0
        elif any("{when}" in line for line in tpl[1:]):
            off = self.rng.choice(OFFSETS)
        else:
            off = self.rng.randint(0, 3)
        if f.session > 0:
            off = min(off, (self.dates[f.session] - self.dates[f.session - 1]).days - 1)
        f.offset = off
        f.day = self.dates[f.session] - timedelta(days=off)

    def add_again(self, f: Fact, lo: int, hi: int, p: float) -> None:
        if self.templates(f, "again") and self.rng.random() < p:
            s = self.slot(lo, hi, avoid=(f.session, *(x for x in [f.plan] if x is not None)))
            if s is not None and s > f.session:
                f.again.append(s)

    # ---- fact sheets

    def sample(self) -> None:
        rng = self.rng
        moves = [rng.choice((0, 1, 1, 2)), rng.choice((0, 1, 1, 2))]
        if moves == [0, 0]:
            moves[rng.randrange(2)] = 1
        changes = [rng.choice((0, 1, 1, 2)), rng.choice((0, 1, 1, 2))]
        if changes == [0, 0]:
            changes[rng.randrange(2)] = 1
        self.shared_hobby = rng.random() < 0.4
        for p, q, nm, nc in ((self.a, self.b, moves[0], changes[0]), (self.b, self.a, moves[1], changes[1])):
            self.sample_person(p, q, nm, nc)
        # Every conversation gets at least one adoption, so pets come with a date somewhere.
        if not any(f.kind == "adopt" for f in self.facts):
            self.sample_pet(rng.choice((self.a, self.b)), adopted=True)

    def sample_person(self, p: Person, q: Person, n_moves: int, n_changes: int) -> None:
        rng, L, N = self.rng, self.lang, self.n
        # Conditions and preferences first: they rule things out for the rest of the sheet.
        theirs = {f.entry["key"] for f in self.facts if f.owner is q and f.kind in ("cond", "pref") and f.entry}
        if rng.random() < 0.45:
            e = rng.choice([x for x in CONDITIONS[L] if x["key"] not in theirs])
            p.blocked |= {e["key"], *e["blocks"]}
            self.add("cond", p, p.key, {}, self.slot(0, N - 1) or 0, entry=e)
        cats: set[str] = set()
        for e in rng.sample(PREFS[L], len(PREFS[L])):
            if len(cats) == 2:
                break
            if e["cat"] in cats or p.blocks(e["key"]) or e["key"] in theirs:
                continue
            cats.add(e["cat"])
            p.blocked |= set(e["blocks"])
            self.add("pref", p, p.key, {}, self.slot(0, N - 1) or 0, entry=e)
        self.sample_third(p)
        self.sample_partner(p)
        self.sample_homes(p, n_moves)
        self.sample_jobs(p, n_changes)
        if rng.random() < 0.5:
            self.sample_pet(p, adopted=False)
        if rng.random() < (0.3 if any(f.kind == "pet" and f.owner is p for f in self.facts) else 0.5):
            self.sample_pet(p, adopted=True)
        self.sample_hobbies(p, q)
        self.sample_trips(p, q)
        self.sample_health(p, q)
        self.sample_purchases(p, q)
        if rng.random() < 0.55:
            self.sample_goal(p)
        self.sample_third_events(p)

    def sample_third(self, p: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        rels = [
            r for r in THIRD_RELS[L] if not (self.rel in ("cousins", "表亲") and r[0] in ("cousin", "表姐", "表哥"))
        ]
        for i, (rel, g) in enumerate(rng.sample(rels, 2)):
            gender = g or rng.choice("fm")
            tp = Person(f"{p.key}.t{i + 1}", self.take_name(gender), gender)
            job = rng.choice(JOBS[L])
            city = rng.choice(CITIES[L])[0]
            v = {
                "rel": rel,
                "tname": tp.name,
                "trole": job["role"],
                "a_trole": article(job["role"]),
                "tcity": city,
                "tsub": PRONOUNS[gender][0],
            }
            info = self.add("tp_info", tp, p.key, v, self.slot(0, N - 1) or 0)
            self.third[p.key].append((tp, info))

    def sample_partner(self, p: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        if rng.random() >= 0.7:
            return
        weights = {
            "f": (("bf", 35), ("husband", 35), ("gf", 10), ("partner", 20)),
            "m": (("gf", 35), ("wife", 35), ("bf", 10), ("partner", 20)),
        }[p.gender]
        rel_key = rng.choices([k for k, _ in weights], [w for _, w in weights])[0]
        en, zh, g = PARTNER_RELS[rel_key]
        gender = g or rng.choice("fm")
        name = self.take_name(gender)
        sub, obj, _ = PRONOUNS[gender]
        v = {
            "rel_key": rel_key,
            "rel": en if L == "en" else zh,
            "pname": name,
            "years": rng.randint(2, 12),
            "psub": sub,
            "pobj": obj,
            "gender": gender,
        }
        s = self.slot(0, N // 2) or 0
        partner = self.add("partner", p, p.key, v, s)
        self.add_again(partner, s + 1, N - 1, 0.3)
        if rng.random() < 0.8:
            job = rng.choice(JOBS[L])
            pv = {**v, "prole": job["role"], "a_prole": article(job["role"])}
            self.add("pjob", p, p.key, pv, self.slot(s + 1, N - 1) or N - 1)
        if rel_key in ("bf", "gf", "partner") and rng.random() < 0.35:
            es = self.slot(s + 2, N - 1)
            if es is not None:
                self.add("engage", p, p.key, dict(v), es, dated=True)
        married = rel_key in ("husband", "wife")
        if rng.random() < (0.45 if married else 0.12):
            for _ in range(1 if rng.random() < 0.75 else 2):
                self.sample_kid(p)

    def sample_kid(self, p: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        g = rng.choice("fm")
        if not self.free_kids[g]:
            return
        name = self.free_kids[g].pop()
        born = self.dates[0] - timedelta(days=rng.randint(3 * 365 + 30, 7 * 365))
        sub, _, poss = PRONOUNS[g]
        v = {
            "kname": name,
            "krel": KID_RELS[g][0 if L == "en" else 1],
            "ksub": sub,
            "kposs": poss,
            "born": born,
            "gender": g,
        }
        s = self.slot(0, N // 2) or 0
        kid = self.add("kid", p, p.key, v, s)
        self.add_again(kid, s + 1, N - 1, 0.3)
        if rng.random() < 0.7:
            es = self.slot(s + 1, N - 1)
            if es is None:
                return
            age = (self.dates[es] - born).days // 365
            ok = {"school": (4, 5), "tooth": (5, 7), "bike": (3, 8), "swim": (3, 9)}
            entries = [e for e in KID_EVENTS[L] if ok[e["key"]][0] <= age <= ok[e["key"]][1]]
            if entries:
                self.add("kidevent", p, p.key, dict(v), es, dated=True, entry=rng.choice(entries))
            else:
                self.load[es] -= 1

    def sample_homes(self, p: Person, n_moves: int) -> None:
        rng, L, N = self.rng, self.lang, self.n
        cities = rng.sample(CITIES[L], n_moves + 1)
        s0 = self.slot(0, max(1, N // 4)) or 0
        home = self.add(
            "home", p, p.key, {"city": cities[0][0], "coast": cities[0][1], "place": self.free_places.pop()}, s0
        )
        chain = [home]
        prev = s0
        for k in range(n_moves):
            s = self.slot(max(prev + 2, N // 5), N - 1 - 3 * (n_moves - 1 - k)) or min(prev + 2, N - 1)
            mv = self.add(
                "move",
                p,
                p.key,
                {"to": cities[k + 1][0], "coast": cities[k + 1][1], "frm": cities[k][0]},
                s,
                dated=True,
            )
            if rng.random() < 0.6 and s - 1 > prev:
                mv.plan = self.slot(max(prev + 1, s - 4), s - 1)
            chain.append(mv)
            prev = s
        for i, f in enumerate(chain):
            end = chain[i + 1].plan or chain[i + 1].session if i + 1 < len(chain) else N
            self.add_again(f, f.session + 1, end - 1, 0.45)

    def sample_jobs(self, p: Person, n_changes: int) -> None:
        rng, L, N = self.rng, self.lang, self.n
        job = rng.choice(JOBS[L])
        emp = rng.choice([e for e in job["emps"] if e not in self.used_emps] or list(job["emps"]))
        self.used_emps.add(emp)
        s0 = self.slot(0, max(1, N // 3)) or 0
        first = self.add(
            "job",
            p,
            p.key,
            {"role": job["role"], "a_role": article(job["role"]), "emp": emp, "act": job["act"], "entry": job},
            s0,
        )
        chain = [first]
        prev = s0
        for k in range(n_changes):
            old = chain[-1].v
            # Most people stay in their line of work; some change careers.
            same = rng.random() < 0.6
            new = old["entry"] if same else rng.choice([j for j in JOBS[L] if j["role"] != old["role"]])
            emps = [e for e in new["emps"] if e not in self.used_emps] or [
                e for j in JOBS[L] for e in j["emps"] if e not in self.used_emps
            ]
            emp = rng.choice(emps)
            self.used_emps.add(emp)
            s = self.slot(max(prev + 2, N // 4), N - 1 - 3 * (n_changes - 1 - k)) or min(prev + 2, N - 1)
            v = {
                "role": new["role"],
                "a_role": article(new["role"]),
                "emp": emp,
                "old": old["emp"],
                "old_role": old["role"],
                "act": new["act"],
                "entry": new,
            }
            jc = self.add("jobchange", p, p.key, v, s, dated=True)
            if rng.random() < 0.5 and s - 1 > prev:
                jc.plan = self.slot(max(prev + 1, s - 4), s - 1)
            chain.append(jc)
            prev = s
        for i, f in enumerate(chain):
            end = chain[i + 1].plan or chain[i + 1].session if i + 1 < len(chain) else N
            self.add_again(f, f.session + 1, end - 1, 0.35)

    def sample_pet(self, p: Person, *, adopted: bool) -> None:
        rng, L, N = self.rng, self.lang, self.n
        options = [x for x in PETS[L] if not p.blocks(x[0])]
        species, breed, baby = rng.choice(options)
        g = rng.choice("fm")
        sub, obj, poss = PRONOUNS[g] if L == "en" else (PRONOUN_ZH[g],) * 3
        v = {
            "name": self.free_pets.pop(),
            "breed": breed,
            "species": species,
            "baby": baby,
            "psub": sub,
            "pobj": obj,
            "pposs": poss,
            "weeks": rng.randint(8, 14),
        }
        if adopted:
            s = self.slot(max(2, N // 5), N - 2) or N - 2
            f = self.add("adopt", p, p.key, v, s, dated=True)
            if rng.random() < 0.4:
                f.plan = self.slot(s - 3, s - 1)
        else:
            s = self.slot(0, N - 2) or 0
            f = self.add("pet", p, p.key, v, s)
        self.add_again(f, s + 1, N - 1, 0.5)

    def sample_hobbies(self, p: Person, q: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        pool = list(HOBBIES[L])
        rng.shuffle(pool)
        chosen: list[dict[str, str]] = []
        if self.shared_hobby and p.key == "b":
            theirs = [f.entry for f in self.facts if f.kind == "hobby" and f.owner is q and f.entry]
            if theirs:
                chosen.append(theirs[0])
        for e in pool:
            if len(chosen) == 3:
                break
            if e["cat"] not in {c["cat"] for c in chosen}:
                chosen.append(e)
        for i, e in enumerate(chosen):
            if i == 2 and rng.random() < 0.5:
                break
            if i < 2:
                f = self.add("hobby", p, p.key, dict(e), self.slot(0, N - 1) or 0, entry=e)
            else:
                f = self.add("takeup", p, p.key, dict(e), self.slot(2, N - 2) or 2, dated=True, entry=e)
            self.add_again(f, f.session + 1, N - 1, 0.3)

    def dest_options(self, p: Person) -> list[tuple[str, tuple[str, str, tuple[str, ...]]]]:
        """(destination, highlight) pairs this person can go to without contradicting the fact sheet."""
        homes = {
            f.v["city"] if f.kind == "home" else f.v["to"]
            for f in self.facts
            if f.owner is p and f.kind in ("home", "move")
        }
        out = []
        for dest, tags, hls in DESTS[self.lang]:
            if dest in homes or p.blocks(*tags):
                continue
            for hl in hls:
                if not p.blocks(*hl[2]):
                    out.append((dest, hl))
        return out

    def sample_trips(self, p: Person, q: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        opts = self.dest_options(p)
        rng.shuffle(opts)
        dests: list[tuple[str, tuple[str, str, tuple[str, ...]]]] = []
        for d in opts:
            if d[0] not in {x[0] for x in dests}:
                dests.append(d)
        taken: list[int] = []
        partner = next((f for f in self.facts if f.kind == "partner" and f.owner is p), None)
        echoed = False
        for dest, hl in dests[: rng.choice((2, 3, 3, 4))]:
            s = self.slot(1, N - 1, avoid=[x + d for x in taken for d in (-1, 0, 1)])
            if s is None:
                break
            taken.append(s)
            r = rng.random()
            clause = hl[0]
            comp_key = ""
            if partner and r < 0.45:
                mode, comp, who = "partner", partner.v["pname"], partner.v["pname"]
            elif r < 0.7 and self.third[p.key]:
                tp, info = rng.choice(self.third[p.key])
                mode, comp_key = "tp", tp.key
                comp = f"my {info.v['rel']} {tp.name}" if L == "en" else f"我{info.v['rel']}{tp.name}"
                who = f"{tp.name}, {p.name}'s {info.v['rel']}" if L == "en" else f"{p.name}的{info.v['rel']}{tp.name}"
            elif r < 0.85:
                mode, comp, who = "solo", "", ""
                if clause.startswith("we "):
                    clause = "I " + clause[3:]
            else:
                mode, comp, who = "none", "", ""
            v = {
                "dest": dest,
                "hl": clause,
                "hl_n": hl[1],
                "comp": comp,
                "comp_mode": mode,
                "comp_who": who,
                "comp_key": comp_key,
            }
            f = self.add("trip", p, p.key, v, s, dated=True)
            if "now" not in (f.tpl or ("",))[0].split() and rng.random() < 0.5:
                f.plan = self.slot(s - 5, s - 1)
            self.add_again(f, s + 1, N - 1, 0.3)
            if not echoed and rng.random() < 0.3:
                echoed = True
                other_hl = rng.choice([h for d, h in self.dest_options(q) if d == dest] or [hl])
                ev = {"dest": dest, "year": rng.randint(2012, 2022), "hl_n": other_hl[1]}
                echo = self.add("echo", q, q.key, ev, s)
                f.follow.append(echo)

    def sample_health(self, p: Person, q: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        entries = list(HEALTH[L])
        rng.shuffle(entries)
        theirs = [f.entry for f in self.facts if f.kind == "health" and f.owner is q and f.entry]
        if theirs and rng.random() < 0.5:
            entries.insert(0, theirs[0])  # the same trouble as the other speaker, at another date
        chosen: list[dict[str, Any]] = []
        for e in entries:
            if e["key"] not in {c["key"] for c in chosen}:
                chosen.append(e)
        taken: list[int] = []
        for e in chosen[: rng.choice((1, 1, 2))]:
            s = self.slot(1, N - 1, avoid=[x + d for x in taken for d in (-1, 0, 1)])
            if s is None:
                break
            taken.append(s)
            cause = rng.choice(e["causes"]) if e["causes"] else ""
            f = self.add("health", p, p.key, {"cause": cause, "Cause": cap(cause)}, s, dated=True, entry=e)
            self.add_again(f, s + 1, min(N - 1, s + 5), 0.5)

    def sample_purchases(self, p: Person, q: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        items = list(PURCHASES[L])
        rng.shuffle(items)
        theirs = [f.entry for f in self.facts if f.kind == "purchase" and f.owner is q and f.entry]
        if theirs and rng.random() < 0.4:
            items.insert(0, theirs[0])  # the same kind of thing as the other speaker, in another colour
        chosen: list[dict[str, Any]] = []
        for e in items:
            if e["key"] not in {c["key"] for c in chosen}:
                chosen.append(e)
        taken: list[int] = []
        for e in chosen[: rng.choice((1, 2, 2, 3))]:
            s = self.slot(1, N - 1, avoid=[x + d for x in taken for d in (-1, 0, 1)])
            if s is None:
                break
            taken.append(s)
            their_colours = {f.v["colour"] for f in self.facts if f.kind == "purchase" and f.entry is e}
            colours = [c for c in e["colours"] if c not in their_colours] or list(e["colours"])
            colour = rng.choice(colours)
            alt = rng.choice([c for c in e["colours"] if c != colour])
            v = {"item": e["item"], "colour": colour, "alt": alt, "a_colour": article(colour), "mw": e.get("mw", "")}
            f = self.add("purchase", p, p.key, v, s, dated=True, entry=e)
            if rng.random() < 0.3:
                f.plan = self.slot(s - 3, s - 1)
            self.add_again(f, s + 1, N - 1, 0.3)

    def sample_goal(self, p: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        e = rng.choice(GOALS[L])
        v = {k: rng.choice(vals) for k, vals in e["vals"].items()}
        v.update({cap(k): cap(str(x)) for k, x in list(v.items())})
        plan = self.slot(0, N - 5) or 0
        done = self.slot(plan + 3, N - 1) or N - 1
        f = self.add("goal", p, p.key, v, done, dated=True, entry=e)
        f.plan = plan

    def sample_third_events(self, p: Person) -> None:
        rng, L, N = self.rng, self.lang, self.n
        own = [f for f in self.facts if f.kind == "trip" and f.owner is p]
        for i, (tp, info) in enumerate(self.third[p.key]):
            v = dict(info.v)
            r = rng.random()
            must_echo = i == 0 and own and (p.key == "a" or rng.random() < 0.5)
            s = self.slot(max(1, info.session + 1), N - 1) or N - 1
            if must_echo or r < 0.4:
                if must_echo:
                    trip = rng.choice([t for t in own if t.v["comp_key"] != tp.key] or own)
                    dest, hl_n = trip.v["dest"], trip.v["hl_n"]
                    if abs(s - trip.session) < 2:
                        s2 = self.slot(1, N - 1, avoid=range(trip.session - 2, trip.session + 3))
                        s = s2 if s2 is not None else s
                else:
                    dest, hl = rng.choice([(d, h) for d, _, hs in DESTS[L] for h in hs[:1]])
                    hl_n = hl[1]
                v.update({"dest": dest, "hl_n": hl_n})
                self.add("tp_trip", tp, p.key, v, s, dated=True)
            elif r < 0.6 and self.free_pets:
                species, breed, _ = rng.choice(PETS[L])
                v.update({"breed": breed, "species": species, "pet": self.free_pets.pop()})
                self.add("tp_pet", tp, p.key, v, s, dated=True)
            elif r < 0.82:
                g = rng.choice("fm")
                if not self.free_kids[g]:
                    continue
                kid_word = {"f": ("girl", "女孩"), "m": ("boy", "男孩")}[g][0 if L == "en" else 1]
                v.update({"bkid": kid_word, "bname": self.free_kids[g].pop(), "tposs": PRONOUNS[tp.gender][2]})
                self.add("tp_baby", tp, p.key, v, s, dated=True)
            else:
                v.update({"wplace": rng.choice(WEDDING_PLACES[L])})
                self.add("tp_wed", tp, p.key, v, s, dated=True)

    # ---- rendering

    def slots(self, f: Fact, s: int) -> dict[str, Any]:
        L = self.lang
        d: dict[str, Any] = {k: x for k, x in f.v.items() if isinstance(x, str | int) and not isinstance(x, bool)}
        day = self.dates[s]
        d["when"] = when_phrase(L, f.offset if s == f.session else 0, day, self.rng)
        if f.day is not None:
            d["month"] = MONTHS_EN[f.day.month - 1] if L == "en" else f.day.month
        if f.kind in ("kid", "kidevent"):
            age = (day - f.v["born"]).days // 365
            d["kage"], d["kage1"] = age, age + 1
        if f.kind == "goal":
            d["sub"] = PRONOUNS[f.owner.gender][0]
        for k, x in list(d.items()):
            if isinstance(x, str) and k[:1].islower():
                d.setdefault(cap(k), cap(x))
        return d

    def expand(self, tpl: Tpl, f: Fact, s: int) -> list[Line]:
        attrs = tuple(tpl[0].split())
        slots = self.slots(f, s)
        out = []
        for raw in tpl[1:]:
            role, sep, text = raw[0], raw[1], raw[2:].strip()
            who = f.teller if role == "s" else self.other(f.teller)
            tags = [(f, attrs)] if sep == ":" and attrs else []
            out.append(Line(who, fill(text, slots), tags))
        return out

    def render(self) -> None:
        items: list[list[tuple[str, Fact]]] = [[] for _ in range(self.n)]
        for f in self.facts:
            if f.kind == "echo":
                continue  # told right after the trip it echoes
            items[f.session].append(("main", f))
            if f.plan is not None:
                items[f.plan].append(("plan", f))
            for s in f.again:
                items[s].append(("again", f))
        for s in range(self.n):
            self.emit(s, self.render_session(s, items[s]))

    def render_session(self, s: int, items: list[tuple[str, Fact]]) -> list[Line]:
        rng, L = self.rng, self.lang
        x, y = rng.sample(("a", "b"), 2)
        lines = [Line(x, fill(rng.choice(OPEN_X[L]), {"Y": self.speaker(y).name}))]
        if rng.random() < 0.85:
            lines.append(Line(y, rng.choice(OPEN_Y[L])))
        if rng.random() < 0.5:
            lines += [Line(x, rng.choice(HOW_X[L])), Line(y, rng.choice(HOW_Y[L]))]
        holiday = self.holiday_block(self.dates[s])
        if holiday and rng.random() < 0.8:
            lines += self.block(holiday, {})
        static = ("home", "job", "tp_info", "partner", "kid", "pet", "hobby", "cond", "pref")
        rng.shuffle(items)
        items.sort(key=lambda it: 0 if it[0] == "main" and it[1].kind in static else 1)
        for mode, f in items:
            if rng.random() < 0.33:
                lines += self.small_talk(s)
            lines += self.render_item(mode, f, s)
        if rng.random() < 0.5 or not items:
            lines += self.small_talk(s)
        if rng.random() < 0.12 and self.rel in REL_FILLER:
            lines += self.block(rng.choice(REL_FILLER[self.rel]), {})
        closer = rng.choice((x, y))
        lines.append(Line(closer, rng.choice(CLOSE_X[L])))
        if rng.random() < 0.8:
            lines.append(Line(self.other(closer), rng.choice(CLOSE_Y[L])))
        return lines

    def render_item(self, mode: str, f: Fact, s: int) -> list[Line]:
        rng, L = self.rng, self.lang
        tpl = f.tpl if mode == "main" and f.tpl else self.pick_template(f, mode)
        lines = self.expand(tpl, f, s)
        other = self.other(f.teller)
        if mode == "main":
            for g in f.follow:
                assert g.tpl is not None
                lines += self.expand(g.tpl, g, s)
                if rng.random() < 0.5:
                    lines.append(
                        Line(
                            f.teller,
                            rng.choice(
                                ("no way!", "ha, small world", "you never told me!")
                                if L == "en"
                                else ("真的假的！", "世界真小", "你都没跟我说过！")
                            ),
                        )
                    )
            if not f.follow and rng.random() < 0.75:
                mood = MOODS[f.kind]
                lines.append(Line(other, rng.choice(REACT[mood][L])))
                if mood in ("happy", "wow") and rng.random() < 0.35:
                    lines.append(Line(f.teller, rng.choice(FOLLOW[L])))
        elif rng.random() < (0.5 if mode == "plan" else 0.35):
            lines.append(Line(other, rng.choice(REACT["wow" if f.kind == "trip" else "neutral"][L])))
        if rng.random() < 0.1:
            ask, answer = rng.choice(ASK_BACK[L])
            lines += [Line(f.teller, ask), Line(other, answer)]
        return lines

    def block(self, tpl: Sequence[str], slots: dict[str, Any]) -> list[Line]:
        x, y = self.rng.sample(("a", "b"), 2)
        return [Line(x if raw[0] == "x" else y, fill(raw[2:].strip(), slots)) for raw in tpl]

    def small_talk(self, s: int) -> list[Line]:
        rng, L = self.rng, self.lang
        fresh = [i for i in range(len(SMALL_TALK[L])) if (s, i) not in self.small_here]
        least = min(self.small_used[i] for i in fresh)
        i = rng.choice([i for i in fresh if self.small_used[i] <= least + 1])
        self.small_here.add((s, i))
        blocks = SMALL_TALK[L]
        self.small_used[i] += 1
        day = self.dates[s]
        slots = {k: rng.choice(v) for k, v in SMALL_SLOTS[L].items()}
        season = season_of(day.month) or "winter"
        slots["weather"], slots["weather_reply"] = rng.choice(WEATHER[L][season])
        slots["month"] = MONTHS_EN[day.month - 1] if L == "en" else f"{day.month}月"
        return self.block(blocks[i], slots)

    def holiday_block(self, day: date) -> tuple[str, ...] | None:
        if self.lang == "en":
            if day.month == 12 and 10 <= day.day <= 26:
                return ("x: ready for Christmas?", "y: not even slightly, haven't bought a single present")
            if (day.month == 12 and day.day >= 28) or (day.month == 1 and day.day <= 7):
                return (
                    "x: happy new year!!",
                    "y: happy new year! any resolutions?",
                    "x: drink more water, same as every year",
                )
            return None
        sf, ma = SPRING_FESTIVAL.get(day.year), MID_AUTUMN.get(day.year)
        if sf and 0 < (sf - day).days <= 12:
            return ("x: 过年回家吗？", "y: 回，票已经抢到了")
        if sf and 0 <= (day - sf).days <= 7:
            return ("x: 新年快乐！红包收了多少？", "y: 哈哈哈不告诉你")
        if ma and abs((day - ma).days) <= 4:
            return ("x: 中秋快乐！", "y: 中秋快乐，月饼吃了没？", "x: 吃了个五仁的，还行")
        return None

    def emit(self, s: int, lines: list[Line]) -> None:
        rng = self.rng
        day = self.dates[s]
        t = datetime(day.year, day.month, day.day, rng.randint(7, 21), rng.randint(0, 59), rng.randint(0, 59))
        sep = ": " if self.lang == "en" else "："
        for i, line in enumerate(lines, 1):
            if i > 1:
                t += timedelta(minutes=rng.randint(0, 3), seconds=rng.randint(5, 59))
            tid = f"c{self.num:02d}-s{s + 1:02d}-t{i:03d}"
            who = self.speaker(line.who)
            if line.tags:
                # engram folds exact duplicates into one memory: an evidence turn must say something new.
                suffixes = DEDUPE_SUFFIX[self.lang]
                base, k = line.text, 0
                while f"{who.name}{sep}{line.text}" in self.seen:
                    line.text = base + suffixes[k % len(suffixes)] * (1 + k // len(suffixes))
                    k += 1
            self.seen.add(f"{who.name}{sep}{line.text}")
            fids: list[str] = []
            for f, attrs in line.tags:
                for a in attrs:
                    f.ev.setdefault(a, []).append(tid)
                fids.append(f.fid)
            self.turns.append(
                Turn(tid, who.name, f"{who.name}{sep}{line.text}", t, s + 1, i, tuple(dict.fromkeys(fids)))
            )


# --------------------------------------------------------------------------------------------------------------
# Questions. QT[qtype][lang] holds the wordings; a candidate picks one per language it can be asked in.

QT: dict[str, dict[str, tuple[str, ...]]] = {
    # single-hop
    "s_home": {
        "en": ("Which city does {P} live in?", "Where is {P} based?", "What town or city is {P}'s home?"),
        "zh": ("{P}住在哪个城市？", "{P}在哪座城市生活？"),
    },
    "s_moved_to": {
        "en": ("Where did {P} relocate to from {frm}?", "After leaving {frm}, which city did {P} settle in?"),
        "zh": ("{P}离开{frm}以后搬去了哪里？", "{P}从{frm}搬到了哪座城市？"),
    },
    "s_role": {
        "en": ("What does {P} do for a living?", "What is {P}'s profession?", "What line of work is {P} in?"),
        "zh": ("{P}是做什么工作的？", "{P}的职业是什么？"),
    },
    "s_emp": {
        "en": ("Who does {P} work for?", "Which organisation employs {P}?"),
        "zh": ("{P}在哪个单位上班？", "{P}在哪家单位工作？"),
    },
    "s_newemp": {
        "en": ("Which employer did {P} leave {old} for?", "Where did {P} go after quitting {old}?"),
        "zh": ("{P}从{old}离职后去了哪里？", "{P}辞掉{old}的工作后去了哪家单位？"),
    },
    "s_pet_name": {
        "en": ("What is {P}'s {breed} called?", "What name did {P} give the {breed}?"),
        "zh": ("{P}家的{breed}叫什么名字？", "{P}给那只{breed}起了什么名字？"),
    },
    "s_pet_breed": {
        "en": ("What kind of {species} does {P} have?", "What breed is {P}'s {species}?"),
        "zh": ("{P}养的{species}是什么品种？", "{P}家的{species}是哪个品种？"),
    },
    "s_partner": {
        "en": ("Who is {P}'s {rel}?", "What is the name of {P}'s {rel}?"),
        "zh": ("{P}的{rel}叫什么？", "{P}的{rel}是谁？"),
    },
    "s_pjob": {
        "en": ("What does {pname}, {P}'s {rel}, do for work?", "What is the job of {P}'s {rel} {pname}?"),
        "zh": ("{P}的{rel}{pname}是做什么工作的？",),
    },
    "s_engage": {
        "en": ("Who proposed to {P}?", "Who asked {P} to get married?"),
        "zh": ("谁向{P}求婚了？", "{P}是被谁求婚的？"),
    },
    "s_kid": {
        "en": ("What is {P}'s {krel} called?", "What's the name of {P}'s {krel}?"),
        "zh": ("{P}的{krel}叫什么名字？",),
    },
    "s_hobby": {"en": ("{hq}",), "zh": ("{hq}",)},
    "s_trip_hl": {
        "en": (
            "What stood out most for {P} on the trip to {dest}?",
            "What was the best part of {P}'s holiday in {dest}?",
        ),
        "zh": ("{P}去{dest}印象最深的是什么？", "{P}在{dest}玩得最开心的是什么？"),
    },
    "s_trip_comp": {
        "en": ("Who did {P} travel to {dest} with?", "Who went along with {P} to {dest}?"),
        "zh": ("{P}是和谁一起去的{dest}？", "{P}去{dest}的时候谁陪着？"),
    },
    "s_echo": {
        "en": ("In which year had {P} been to {dest}?", "Years before these chats, when did {P} visit {dest}?"),
        "zh": ("{P}是哪一年去过{dest}的？",),
    },
    "s_entry": {"en": ("{eq}",), "zh": ("{eq}",)},
    "s_buy_colour": {
        "en": ("What colour is the {item} {P} bought?", "Which colour did {P} choose for the new {item}?"),
        "zh": ("{P}买的{item}是什么颜色的？", "{P}最后选了什么颜色的{item}？"),
    },
    "s_tp_job": {
        "en": ("What does {P}'s {rel} do for work?", "What is the job of {P}'s {rel} {T}?"),
        "zh": ("{P}的{rel}是做什么的？", "{P}的{rel}{T}做什么工作？"),
    },
    "s_tp_city": {
        "en": ("Where does {P}'s {rel} live?", "Which city is {P}'s {rel} {T} based in?"),
        "zh": ("{P}的{rel}现在在哪个城市？", "{P}的{rel}{T}住在哪里？"),
    },
    "s_tp_pet": {"en": ("What did {P}'s {rel} name the new {breed}?",), "zh": ("{P}的{rel}养的{breed}叫什么？",)},
    "s_tp_baby": {
        "en": ("What is the name of {P}'s {rel}'s baby?", "What did {P}'s {rel} {T} call the new baby?"),
        "zh": ("{P}的{rel}家宝宝叫什么名字？",),
    },
    "s_tp_wed": {"en": ("Where did {P}'s {rel} hold the wedding?",), "zh": ("{P}的{rel}的婚礼在哪里办的？",)},
    # temporal
    "t_trip_win": {
        "en": (
            "Where did {P} go on holiday {win}?",
            "Which place did {P} visit {win}?",
            "Where did {P} travel to {win}?",
        ),
        "zh": ("{P}{win}去哪儿旅行了？", "{win}{P}去了哪里玩？"),
    },
    "t_trip_when": {
        "en": ("When did {P} go to {dest}?", "In which month was {P}'s trip to {dest}?"),
        "zh": ("{P}是什么时候去的{dest}？", "{P}哪个月去的{dest}？"),
    },
    "t_trip_order": {
        "en": ("Which did {P} visit first, {d1} or {d2}?", "Did {P} go to {d1} before or after {d2}?"),
        "zh": ("{P}先去的{d1}还是{d2}？", "{d1}和{d2}，{P}先去的哪个？"),
    },
    "t_trip_last": {
        "en": ("Where was {P}'s most recent trip?", "What was the latest place {P} travelled to?"),
        "zh": ("{P}最近一次旅行去了哪里？",),
    },
    "t_trip_after_move": {
        "en": ("What was the first trip {P} took after moving to {to}?",),
        "zh": ("{P}搬到{to}以后第一次去哪儿旅行了？",),
    },
    "t_home_before": {
        "en": ("Where did {P} live before moving to {to}?", "Which city was {P}'s home before {to}?"),
        "zh": ("{P}搬到{to}之前住在哪里？", "{P}在搬去{to}以前住哪个城市？"),
    },
    "t_home_win": {
        "en": ("Which city was {P} living in {win}?", "Where was {P}'s home {win}?"),
        "zh": ("{win}{P}住在哪个城市？", "{P}{win}住在哪里？"),
    },
    "t_move_when": {
        "en": ("When did {P} move to {to}?", "When did {P} relocate to {to}?"),
        "zh": ("{P}是什么时候搬到{to}的？",),
    },
    "t_job_before": {
        "en": ("Where did {P} work before joining {emp}?", "Who was {P}'s employer before {emp}?"),
        "zh": ("{P}去{emp}之前在哪里上班？",),
    },
    "t_job_win": {
        "en": ("Where was {P} working {win}?", "Who employed {P} {win}?"),
        "zh": ("{win}{P}在哪里上班？", "{P}{win}在哪家单位工作？"),
    },
    "t_job_when": {
        "en": ("When did {P} start at {emp}?", "When did {P} begin the job at {emp}?"),
        "zh": ("{P}是什么时候入职{emp}的？",),
    },
    "t_pet_when": {
        "en": ("When did {P} bring {name} home?", "When did {P} adopt {name}?"),
        "zh": ("{P}是什么时候把{name}接回家的？", "{P}什么时候领养的{name}？"),
    },
    "t_health_win": {
        "en": ("What health problem did {P} have {win}?", "What was wrong with {P}'s health {win}?"),
        "zh": ("{P}{win}身体出了什么状况？", "{win}{P}生了什么病或受了什么伤？"),
    },
    "t_entry_when": {"en": ("{wq}",), "zh": ("{wq}",)},
    "t_buy_win": {
        "en": ("What did {P} buy {win}?", "What was {P}'s big purchase {win}?"),
        "zh": ("{P}{win}买了什么？", "{win}{P}添置了什么东西？"),
    },
    "t_engage_when": {
        "en": ("When did {P} get engaged?", "When did {pname} propose to {P}?"),
        "zh": ("{P}是什么时候订婚的？", "{pname}是什么时候向{P}求婚的？"),
    },
    "t_any_win": {
        "en": ("What happened in {P}'s life {win}?", "What was new with {P} {win}?"),
        "zh": ("{P}{win}发生了什么事？", "{win}{P}有什么新鲜事？"),
    },
    "t_tp_when": {"en": ("When did {P}'s {rel} {tevent}?",), "zh": ("{P}的{rel}是什么时候{tevent}的？",)},
    "t_who_first": {
        "en": ("Who went to {dest} first, {P} or {P}'s {rel}?",),
        "zh": ("{P}和{P}的{rel}，谁先去的{dest}？",),
    },
    # multi-hop
    "m_pet_after_move": {
        "en": (
            "What's the name of the {species} {P} got after moving to {to}?",
            "After settling in {to}, what did {P} call the new {species}?",
        ),
        "zh": ("{P}搬到{to}以后养的{species}叫什么？",),
    },
    "m_home_at": {
        "en": ("Where was {P} living when {event}?", "Which city was {P} in at the time {event}?"),
        "zh": ("{P}{event}的时候住在哪个城市？",),
    },
    "m_pjob": {
        "en": ("What does {P}'s {rel} do for a living?", "What is the job of {P}'s {rel}?"),
        "zh": ("{P}的{rel}是做什么工作的？", "{P}的{rel}从事什么职业？"),
    },
    "m_trip_partner": {
        "en": (
            "Where did {P} go on holiday with {poss} {rel}?",
            "Which place did {P} and {poss} {rel} visit together?",
        ),
        "zh": ("{P}和{rel}一起去了哪里旅行？",),
    },
    "m_both_pets": {
        "en": ("What pets do {A} and {B} have between them?", "Which animals do {A} and {B} each own?"),
        "zh": ("{A}和{B}各自养了什么宠物？",),
    },
    "m_shared_dest_tp": {
        "en": ("Which place did both {P} and {P}'s {rel} travel to?",),
        "zh": ("{P}和{P}的{rel}都去过哪个地方？",),
    },
    "m_shared_dest": {
        "en": ("Which destination have both {A} and {B} been to?", "Name a place that both {A} and {B} have visited."),
        "zh": ("{A}和{B}都去过哪个地方？",),
    },
    "m_trips_all": {
        "en": ("Which places did {P} travel to over the course of these chats?", "List the trips {P} took."),
        "zh": ("这段时间{P}都去哪些地方旅行过？",),
    },
    "m_jobs_all": {
        "en": ("Which employers has {P} worked for?", "What workplaces has {P} been at?"),
        "zh": ("{P}先后在哪些单位工作过？",),
    },
    "m_homes_all": {
        "en": ("Which cities has {P} lived in?", "List the cities {P} has called home."),
        "zh": ("{P}先后在哪些城市住过？",),
    },
    "m_shared_hobby": {
        "en": ("What hobby do {A} and {B} have in common?", "Which pastime do both {A} and {B} enjoy?"),
        "zh": ("{A}和{B}有什么共同爱好？",),
    },
    "m_kid_partner": {
        "en": ("What are the names of {P}'s {rel} and {krel}?",),
        "zh": ("{P}的{rel}和{krel}分别叫什么？",),
    },
    "m_both_health": {
        "en": ("Which health problem did both {A} and {B} have?",),
        "zh": ("{A}和{B}都遇到过什么身体问题？",),
    },
    "m_both_item": {
        "en": ("What did {A} and {B} both buy, each in a different colour?",),
        "zh": ("{A}和{B}都买了什么，颜色还不一样？",),
    },
    # open-domain
    "o_entry": {"en": ("{oq}",), "zh": ("{oq}",)},
    "o_pet": {
        "en": (
            "Would {P} need someone to look after an animal while away for a week?",
            "If {P} went abroad for a fortnight, would there be an animal to arrange care for?",
        ),
        "zh": ("{P}出远门一周的话，需要找人照看家里的动物吗？",),
    },
    "o_kid": {
        "en": ("Would {P} likely need a babysitter for a late night out?",),
        "zh": ("{P}晚上出去玩，可能需要找人帮忙带孩子吗？",),
    },
    "o_coast": {
        "en": (
            "Could {P} easily go for a walk on a beach near home these days?",
            "Does {P} currently live somewhere with the sea close by?",
        ),
        "zh": ("{P}现在下班后能方便地去海边散步吗？", "{P}现在住的地方离海近吗？"),
    },
}

# Answers that describe an event, for "what happened in ..." questions: kind -> (en, zh, attribute that states it)
EVENT_DESC = {
    "move": ("moved to {to}", "搬到了{to}", "to"),
    "jobchange": ("started a new job at {emp}", "入职了{emp}", "emp"),
    "adopt": ("adopted {name} the {breed}", "领养了{breed}{name}", "name"),
    "engage": ("got engaged to {pname}", "和{pname}订婚了", "event"),
    "takeup": ("took up {noun}", "开始学{noun}", "hobby"),
    "trip": ("went to {dest}", "去{dest}旅行", "dest"),
    "purchase": ("bought {a_colour} {item}", "买了{mw}{colour}的{item}", "item"),
}
TP_EVENT = {  # third-party event kind -> (en phrase, zh phrase, attribute)
    "tp_trip": ("go to {dest}", "去{dest}", "dest"),
    "tp_baby": ("have the baby", "生宝宝", "baby"),
    "tp_wed": ("get married", "结婚", "wed"),
    "tp_pet": ("get the {breed}", "养{breed}", "pet"),
}


@dataclass
class Cand:
    cat: str
    qtype: str
    texts: dict[str, str]
    answer: str
    ids: list[str]
    keys: tuple[str, ...]
    checks: tuple[str, ...]


class QueryBuilder:
    """Turns a rendered conversation's fact records into candidate questions, then picks a balanced set."""

    def __init__(self, conv: Conversation) -> None:
        self.c = conv
        self.L = conv.lang
        self.rng = random.Random(f"{SEED}-long-chat-queries-{conv.num}")
        self.now = conv.now.date()
        self.cands: list[Cand] = []

    # ---- helpers

    def of(self, p: Person, *kinds: str) -> list[Fact]:
        return sorted((f for f in self.c.facts if f.owner is p and f.kind in kinds), key=lambda f: (f.session, f.fid))

    def session_day(self, f: Fact) -> date:
        return self.c.dates[f.session]

    def span(self, f: Fact) -> tuple[date, date]:
        """The days the event of ``f`` may have happened on, as far as its wording tells a reader.

        "yesterday" or "on Saturday" pin the day; "last week" leaves a few days either way; a template without a
        time phrase ("just got back from Lisbon", "first week at the new job done") means "in the last ten days".
        """
        assert f.day is not None and f.tpl is not None
        sd = self.session_day(f)
        if "now" in f.tpl[0].split():
            return sd, sd
        if any("{when}" in line for line in f.tpl[1:]):
            if f.offset <= 6:
                return f.day, f.day
            return f.day - timedelta(days=4), min(f.day + timedelta(days=4), sd)
        return sd - timedelta(days=10), sd

    def inside(self, f: Fact, w: Window) -> bool:
        lo, hi = self.span(f)
        return w.start <= lo and hi <= w.end and w.end < self.now

    def clear_of(self, others: Iterable[Fact], w: Window, margin: int = 10) -> bool:
        for g in others:
            lo, hi = self.span(g)
            if lo - timedelta(days=margin) <= w.end and hi + timedelta(days=margin) >= w.start:
                return False
        return True

    def month_ok(self, f: Fact) -> bool:
        lo, hi = self.span(f)
        return lo.month == hi.month and lo.year == hi.year

    def names(self, p: Person) -> dict[str, str]:
        sub, _, poss = PRONOUNS[p.gender]
        return {"P": p.name, "sub": sub, "poss": poss}

    def add(
        self,
        cat: str,
        qtype: str,
        slots: dict[str, Any] | Callable[[str], dict[str, Any]],
        answer: str,
        ids: Iterable[str],
        facts: Sequence[Fact],
        checks: Iterable[str] = (),
        xl: bool = False,
        tmpl: dict[str, tuple[str, ...]] | None = None,
    ) -> None:
        ids = sorted(set(ids))
        if not ids:
            return
        table = tmpl or QT[qtype]
        texts = {}
        for lang in (self.L, *(("zh" if self.L == "en" else "en",) if xl else ())):
            if lang not in table:
                continue
            sl = slots(lang) if callable(slots) else slots
            texts[lang] = fill(self.rng.choice(table[lang]), sl)
        self.cands.append(
            Cand(cat, qtype, texts, answer, ids, tuple(f.fid for f in facts), tuple(str(x) for x in checks))
        )

    def residences(self, p: Person) -> list[tuple[Fact, str, list[str], date, date]]:
        """(fact, city, turns stating that p lived there, from, until) for each home in order."""
        chain = self.of(p, "home", "move")
        out = []
        for i, f in enumerate(chain):
            city = f.v["city"] if f.kind == "home" else f.v["to"]
            ids = f.turns("city") if f.kind == "home" else f.turns("to")
            nxt = chain[i + 1] if i + 1 < len(chain) else None
            if nxt:
                ids = ids + nxt.turns("from")
            start = self.c.dates[0] if f.day is None else f.day
            end = nxt.day if nxt and nxt.day else self.now
            out.append((f, city, ids, start, end))
        return out

    def employments(self, p: Person) -> list[tuple[Fact, str, list[str], date, date]]:
        chain = self.of(p, "job", "jobchange")
        out = []
        for i, f in enumerate(chain):
            nxt = chain[i + 1] if i + 1 < len(chain) else None
            ids = f.turns("emp") + (nxt.turns("from") if nxt else [])
            start = self.c.dates[0] if f.day is None else f.day
            end = nxt.day if nxt and nxt.day else self.now
            out.append((f, f.v["emp"], ids, start, end))
        return out

    def period_windows(self, start: date, end: date) -> list[Window]:
        """Windows lying well inside [start, end] (ten days of margin) and inside the conversation."""
        lo = max(start, self.c.dates[0]) + timedelta(days=10)
        hi = min(end, self.now) - timedelta(days=10)
        out: list[Window] = []
        d = date(lo.year, lo.month, 1)
        while d <= hi:
            for w in windows_around(d, self.now):
                if lo <= w.start and w.end <= hi and w not in out:
                    out.append(w)
            d = last_day(d.year, d.month) + timedelta(days=1)
        return out

    def win_slots(self, base: dict[str, Any], w: Window) -> Callable[[str], dict[str, Any]]:
        return lambda lang: {**base, "win": w.phrase(lang, self.now)}

    def join(self, items: Sequence[str]) -> str:
        items = list(dict.fromkeys(items))
        if self.L == "zh":
            return "、".join(items)
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    # ---- candidates

    def build(self) -> None:
        for p in (self.c.a, self.c.b):
            self.single(p)
            self.temporal(p)
            self.multi(p)
            self.open(p)
        self.pairs()

    def single(self, p: Person) -> None:
        L, nm = self.L, self.names(p)
        res = self.residences(p)
        if len(res) == 1:
            f, city, ids, _, _ = res[0]
            self.add("single-hop", "s_home", nm, city, ids, [f], [city])
        for f in self.of(p, "move"):
            self.add("single-hop", "s_moved_to", {**nm, "frm": f.v["frm"]}, f.v["to"], f.turns("to"), [f], [f.v["to"]])
        jobs = self.of(p, "job", "jobchange")
        if len(jobs) == 1:
            f = jobs[0]
            self.add("single-hop", "s_role", nm, f.v["role"], f.turns("role"), [f], [f.v["role"]])
            self.add("single-hop", "s_emp", nm, f.v["emp"], f.turns("emp"), [f], [f.v["emp"]])
        for f in self.of(p, "jobchange"):
            self.add("single-hop", "s_newemp", {**nm, "old": f.v["old"]}, f.v["emp"], f.turns("emp"), [f], [f.v["emp"]])
        pets = self.of(p, "pet", "adopt")
        for f in pets:
            same_breed = [g for g in pets if g.v["breed"] == f.v["breed"]]
            same_species = [g for g in pets if g.v["species"] == f.v["species"]]
            if len(same_breed) == 1:
                self.add(
                    "single-hop",
                    "s_pet_name",
                    {**nm, "breed": f.v["breed"]},
                    f.v["name"],
                    f.turns("name"),
                    [f],
                    [f.v["name"]],
                )
            if len(same_species) == 1:
                sp = SPECIES_WORD[f.v["species"]][0 if L == "en" else 1]
                self.add(
                    "single-hop",
                    "s_pet_breed",
                    {**nm, "species": sp},
                    f.v["breed"],
                    f.turns("breed"),
                    [f],
                    [f.v["breed"]],
                )
        for f in self.of(p, "partner"):
            rk = f.v["rel_key"]
            self.add(
                "single-hop",
                "s_partner",
                partial(lang_slots, nm, "rel", PARTNER_RELS[rk][:2]),
                f.v["pname"],
                f.turns("name"),
                [f],
                [f.v["pname"]],
                xl=True,
            )
        for f in self.of(p, "pjob"):
            self.add(
                "single-hop",
                "s_pjob",
                {**nm, "pname": f.v["pname"], "rel": f.v["rel"]},
                f.v["prole"],
                f.turns("job"),
                [f],
                [f.v["prole"]],
            )
        for f in self.of(p, "engage"):
            self.add("single-hop", "s_engage", nm, f.v["pname"], f.turns("event"), [f], [f.v["pname"]])
        kids = self.of(p, "kid")
        for f in kids:
            g = f.v["gender"]
            if sum(k.v["gender"] == g for k in kids) == 1:
                self.add(
                    "single-hop",
                    "s_kid",
                    partial(lang_slots, nm, "krel", KID_RELS[g]),
                    f.v["kname"],
                    f.turns("name"),
                    [f],
                    [f.v["kname"]],
                    xl=True,
                )
        for f in self.of(p, "hobby", "takeup"):
            assert f.entry is not None
            cat = f.entry["cat"]
            self.add(
                "single-hop",
                "s_hobby",
                partial(lang_slots, {}, "hq", (fill(HOBBY_Q["en"][cat], nm), fill(HOBBY_Q["zh"][cat], nm))),
                f.entry["noun"],
                f.turns("hobby"),
                [f],
                xl=True,
            )
        for f in self.of(p, "trip"):
            sl = {**nm, "dest": f.v["dest"]}
            self.add("single-hop", "s_trip_hl", sl, f.v["hl_n"], f.turns("hl"), [f], [f.v["dest"]])
            if f.v["comp_mode"] in ("partner", "tp", "solo"):
                who = f.v["comp_who"] or (f"{p.name} went alone" if L == "en" else f"{p.name}是一个人去的")
                self.add("single-hop", "s_trip_comp", sl, who, f.turns("comp"), [f], [f.v["dest"]])
        for f in self.of(p, "echo"):
            self.add(
                "single-hop",
                "s_echo",
                {**nm, "dest": f.v["dest"]},
                str(f.v["year"]),
                f.turns("year"),
                [f],
                [f.v["year"]],
            )
        for f in self.of(p, "health"):
            e = f.entry
            assert e is not None
            if "sq" in e and f.v["cause"]:
                sl = {**nm, **f.v}
                self.add(
                    "single-hop",
                    "s_entry",
                    {"eq": fill(e["sq"], sl)},
                    fill(e["sa"], sl),
                    f.turns("cause"),
                    [f],
                    [f.v["cause"]],
                )
        for f in self.of(p, "purchase"):
            if sum(g.v["item"] == f.v["item"] for g in self.of(p, "purchase")) == 1:
                self.add(
                    "single-hop",
                    "s_buy_colour",
                    {**nm, "item": f.v["item"]},
                    f.v["colour"],
                    f.turns("colour"),
                    [f],
                    [f.v["colour"]],
                )
        for f in self.of(p, "goal"):
            e = f.entry
            assert e is not None
            attr = e.get("sq_attr", "goal")
            sl = {**nm, **f.v}
            checks = [x for k, x in f.v.items() if k in ("race", "colour", "money") and k[:1].islower()]
            self.add(
                "single-hop",
                "s_entry",
                {"eq": fill(e["sq"], sl)},
                fill(e["sa"], sl),
                f.turns(attr),
                [f],
                checks if attr == "done" or "{race}" in e["sq"] or "race" in e["sa"] else [],
            )
        for f in self.of(p, "pref", "cond"):
            e = f.entry
            assert e is not None
            self.add("single-hop", "s_entry", {"eq": fill(e["sq"], nm)}, fill(e["sa"], nm), f.turns(f.kind), [f])
        for tp, info in self.c.third[p.key]:
            sl = {**nm, "rel": info.v["rel"], "T": tp.name}
            self.add("single-hop", "s_tp_job", sl, info.v["trole"], info.turns("job"), [info], [info.v["trole"]])
            self.add("single-hop", "s_tp_city", sl, info.v["tcity"], info.turns("city"), [info], [info.v["tcity"]])
            for f in self.of(tp, "tp_pet"):
                self.add(
                    "single-hop",
                    "s_tp_pet",
                    {**sl, "breed": f.v["breed"]},
                    f.v["pet"],
                    f.turns("pet"),
                    [f],
                    [f.v["pet"]],
                )
            for f in self.of(tp, "tp_baby"):
                self.add("single-hop", "s_tp_baby", sl, f.v["bname"], f.turns("baby"), [f], [f.v["bname"]])
            for f in self.of(tp, "tp_wed"):
                self.add("single-hop", "s_tp_wed", sl, f.v["wplace"], f.turns("wed"), [f], [f.v["wplace"]])

    def temporal(self, p: Person) -> None:
        L, nm, rng = self.L, self.names(p), self.rng
        trips = [f for f in self.of(p, "trip") if f.has("dest")]
        if len(trips) >= 2:
            for f in trips:
                others = [g for g in trips if g is not f]
                ws = [
                    w
                    for w in windows_around(f.day or self.now, self.now)
                    if self.inside(f, w) and self.clear_of(others, w)
                ]
                if ws:
                    self.add(
                        "temporal",
                        "t_trip_win",
                        self.win_slots(nm, rng.choice(ws)),
                        f.v["dest"],
                        f.turns("dest"),
                        [f],
                        [f.v["dest"]],
                        xl=True,
                    )
            a, b = rng.sample(trips, 2)
            assert a.day and b.day
            if abs((a.day - b.day).days) >= 20:
                first = a if a.day < b.day else b
                self.add(
                    "temporal",
                    "t_trip_order",
                    {**nm, "d1": a.v["dest"], "d2": b.v["dest"]},
                    first.v["dest"],
                    a.turns("dest") + b.turns("dest"),
                    [a, b],
                    [a.v["dest"], b.v["dest"]],
                )
            by_day = sorted(trips, key=lambda f: f.day or self.now)
            last, prev = by_day[-1], by_day[-2]
            if last.day and prev.day and (last.day - prev.day).days >= 20:
                self.add(
                    "temporal", "t_trip_last", nm, last.v["dest"], last.turns("dest"), [last], [last.v["dest"]], xl=True
                )
            for m in self.of(p, "move"):
                after = [t for t in by_day if self.span(t)[0] > self.span(m)[1]]
                before = [t for t in by_day if self.span(t)[1] < self.span(m)[0]]
                if after and before and m.has("to"):
                    self.add(
                        "temporal",
                        "t_trip_after_move",
                        {**nm, "to": m.v["to"]},
                        after[0].v["dest"],
                        m.turns("to") + after[0].turns("dest"),
                        [m, after[0]],
                        [after[0].v["dest"], m.v["to"]],
                    )
        for f in trips:
            if self.month_ok(f):
                self.add(
                    "temporal",
                    "t_trip_when",
                    {**nm, "dest": f.v["dest"]},
                    month_answer(self.span(f)[1], L),
                    f.turns("dest"),
                    [f],
                    [f.v["dest"]],
                )
        res = self.residences(p)
        if len(res) >= 2:
            for i in range(1, len(res)):
                f, city, ids, _, _ = res[i]
                pf, pcity, pids, _, _ = res[i - 1]
                self.add("temporal", "t_home_before", {**nm, "to": city}, pcity, pids + f.turns("to"), [pf, f], [pcity])
            for f, city, ids, start, end in res:
                ws = self.period_windows(start, end)
                if ws:
                    self.add(
                        "temporal", "t_home_win", self.win_slots(nm, rng.choice(ws)), city, ids, [f], [city], xl=True
                    )
        for f in self.of(p, "move"):
            if self.month_ok(f):
                self.add(
                    "temporal",
                    "t_move_when",
                    {**nm, "to": f.v["to"]},
                    month_answer(self.span(f)[1], L),
                    f.turns("to"),
                    [f],
                    [f.v["to"]],
                )
        emp = self.employments(p)
        if len(emp) >= 2:
            for i in range(1, len(emp)):
                f, employer, ids, _, _ = emp[i]
                pf, pe, pids, _, _ = emp[i - 1]
                self.add("temporal", "t_job_before", {**nm, "emp": employer}, pe, pids, [pf, f], [pe])
            for f, employer, ids, start, end in emp:
                ws = self.period_windows(start, end)
                if ws:
                    w = rng.choice(ws)
                    self.add("temporal", "t_job_win", self.win_slots(nm, w), employer, ids, [f], [employer], xl=True)
        for f in self.of(p, "jobchange"):
            if self.month_ok(f):
                self.add(
                    "temporal",
                    "t_job_when",
                    {**nm, "emp": f.v["emp"]},
                    month_answer(self.span(f)[1], L),
                    f.turns("emp"),
                    [f],
                    [f.v["emp"]],
                )
        for f in self.of(p, "adopt"):
            if self.month_ok(f):
                self.add(
                    "temporal",
                    "t_pet_when",
                    {**nm, "name": f.v["name"]},
                    month_answer(self.span(f)[1], L),
                    f.turns("name"),
                    [f],
                    [f.v["name"]],
                )
        for f in self.of(p, "engage"):
            if self.month_ok(f):
                self.add(
                    "temporal",
                    "t_engage_when",
                    {**nm, "pname": f.v["pname"]},
                    month_answer(self.span(f)[1], L),
                    f.turns("event"),
                    [f],
                    [f.v["pname"]],
                )
        health = self.of(p, "health")
        for f in health:
            assert f.entry is not None
            short = f.entry["short"]
            if len(health) >= 2:
                ws = [
                    w
                    for w in windows_around(f.day or self.now, self.now)
                    if self.inside(f, w) and self.clear_of([g for g in health if g is not f], w)
                ]
                if ws:
                    self.add(
                        "temporal",
                        "t_health_win",
                        self.win_slots(nm, rng.choice(ws)),
                        short,
                        f.turns("event"),
                        [f],
                        xl=True,
                    )
            if self.month_ok(f):
                self.add(
                    "temporal",
                    "t_entry_when",
                    {"wq": fill(f.entry["wq"], nm)},
                    month_answer(self.span(f)[1], L),
                    f.turns("event"),
                    [f],
                )
        buys = [f for f in self.of(p, "purchase") if f.has("item")]
        if len(buys) >= 2:
            for f in buys:
                ws = [
                    w
                    for w in windows_around(f.day or self.now, self.now)
                    if self.inside(f, w) and self.clear_of([g for g in buys if g is not f], w)
                ]
                if ws:
                    ans = fill(EVENT_DESC["purchase"][0 if L == "en" else 1], f.v)
                    self.add(
                        "temporal",
                        "t_buy_win",
                        self.win_slots(nm, rng.choice(ws)),
                        ans,
                        f.turns("item"),
                        [f],
                        [f.v["item"]],
                        xl=True,
                    )
        for f in self.of(p, "goal", "kidevent"):
            e = f.entry
            assert e is not None
            if not self.month_ok(f):
                continue
            sl = {**nm, **{k: x for k, x in f.v.items() if isinstance(x, str)}}
            if f.kind == "goal":
                self.add(
                    "temporal",
                    "t_entry_when",
                    {"wq": fill(e["wq"], sl)},
                    month_answer(self.span(f)[1], L),
                    f.turns("done"),
                    [f],
                )
            else:
                kid = next((k for k in self.of(p, "kid") if k.v["kname"] == f.v["kname"]), None)
                if kid and sum(k.v["gender"] == kid.v["gender"] for k in self.of(p, "kid")) == 1:
                    self.add(
                        "temporal",
                        "t_entry_when",
                        {"wq": fill(e["wq"], sl)},
                        month_answer(self.span(f)[1], L),
                        kid.turns("name") + f.turns("event"),
                        [kid, f],
                        [f.v["kname"]],
                    )
        # "What happened in X's life in <window>?": exactly one dated fact of X in the window.
        rivals = [f for f in self.c.facts if f.owner is p and f.dated]
        dated = [f for f in self.of(p, *EVENT_DESC) if f.has(EVENT_DESC[f.kind][2])]
        for f in dated:
            ws = [
                w
                for w in windows_around(f.day or self.now, self.now)
                if self.inside(f, w) and self.clear_of([g for g in rivals if g is not f], w, margin=5)
            ]
            if ws:
                en, zh, attr = EVENT_DESC[f.kind]
                ans = fill(en if L == "en" else zh, f.v)
                self.add("temporal", "t_any_win", self.win_slots(nm, rng.choice(ws)), ans, f.turns(attr), [f], xl=True)
        own_trips = {f.v["dest"]: f for f in trips}
        for tp, info in self.c.third[p.key]:
            for f in self.of(tp, *TP_EVENT):
                en, zh, attr = TP_EVENT[f.kind]
                if self.month_ok(f):
                    sl = {**nm, "rel": info.v["rel"], "tevent": fill(en if L == "en" else zh, f.v)}
                    self.add("temporal", "t_tp_when", sl, month_answer(self.span(f)[1], L), f.turns(attr), [f])
                mine = own_trips.get(f.v.get("dest", ""))
                together = any(t.v["comp_key"] == tp.key for t in trips)
                if f.kind == "tp_trip" and mine and not together:
                    (m_lo, m_hi), (t_lo, t_hi) = self.span(mine), self.span(f)
                    if m_lo - t_hi < timedelta(days=20) and t_lo - m_hi < timedelta(days=20):
                        continue
                    who_first = p.name if m_hi < t_lo else f"{tp.name} ({info.v['rel']})"
                    sl = {**nm, "rel": info.v["rel"], "dest": f.v["dest"]}
                    self.add(
                        "temporal",
                        "t_who_first",
                        sl,
                        who_first,
                        mine.turns("dest") + f.turns("dest"),
                        [mine, f],
                        [f.v["dest"]],
                    )

    def multi(self, p: Person) -> None:
        L, nm = self.L, self.names(p)
        res = self.residences(p)
        adopts = self.of(p, "adopt")
        moves = self.of(p, "move")
        for i, m in enumerate(moves):
            nxt = self.span(moves[i + 1])[0] if i + 1 < len(moves) else None
            for a in adopts:
                if not (self.span(a)[0] > self.span(m)[1] and (nxt is None or self.span(a)[1] < nxt)):
                    continue
                if sum(x.v["species"] == a.v["species"] and self.span(x)[0] > self.span(m)[1] for x in adopts) != 1:
                    continue
                sp = SPECIES_WORD[a.v["species"]][0 if L == "en" else 1]
                self.add(
                    "multi-hop",
                    "m_pet_after_move",
                    {**nm, "to": m.v["to"], "species": sp},
                    a.v["name"],
                    m.turns("to") + a.turns("name"),
                    [m, a],
                    [a.v["name"], m.v["to"]],
                )
        if len(res) >= 2:
            events = [(f, "emp", ("{sub} started at {emp}", "入职{emp}")) for f in self.of(p, "jobchange")]
            events += [(f, "name", ("{sub} brought {name} home", "把{name}接回家")) for f in adopts]
            events += [(f, "item", ("{sub} bought the {item}", "买{item}")) for f in self.of(p, "purchase")]
            for f, attr, (en, zh) in events:
                if not f.day or not f.has(attr):
                    continue
                home = [r for r in res if r[3] + timedelta(days=14) < f.day and f.day + timedelta(days=14) < r[4]]
                if len(home) == 1 and home[0][0] is not f:
                    hf, city, ids, _, _ = home[0]
                    if (
                        sum(g.v.get("item") == f.v.get("item") for g in self.of(p, "purchase")) > 1
                        and f.kind == "purchase"
                    ):
                        continue
                    ev = fill(en if L == "en" else zh, {**f.v, **nm})
                    self.add("multi-hop", "m_home_at", {**nm, "event": ev}, city, ids + f.turns(attr), [hf, f], [city])
        partner = next(iter(self.of(p, "partner")), None)
        if partner and partner.has("name"):
            rk = partner.v["rel_key"]

            def rel(lang: str, rk: str = rk) -> str:
                return PARTNER_RELS[rk][0 if lang == "en" else 1]

            for f in self.of(p, "pjob"):
                self.add(
                    "multi-hop",
                    "m_pjob",
                    lambda lang: {**nm, "rel": rel(lang)},
                    f.v["prole"],
                    partner.turns("name") + f.turns("job"),
                    [partner, f],
                    [f.v["prole"], partner.v["pname"]],
                    xl=True,
                )
            with_partner = [t for t in self.of(p, "trip") if t.v["comp_mode"] == "partner"]
            if len(with_partner) == 1 and with_partner[0].has("comp"):
                t = with_partner[0]
                self.add(
                    "multi-hop",
                    "m_trip_partner",
                    lambda lang: {**nm, "rel": rel(lang)},
                    t.v["dest"],
                    partner.turns("name") + t.turns("comp"),
                    [partner, t],
                    [t.v["dest"], partner.v["pname"]],
                    xl=True,
                )
            kids = [k for k in self.of(p, "kid") if k.has("name")]
            if len(kids) == 1:
                k = kids[0]
                g = k.v["gender"]
                self.add(
                    "multi-hop",
                    "m_kid_partner",
                    lambda lang: {**nm, "rel": rel(lang), "krel": KID_RELS[g][0 if lang == "en" else 1]},
                    self.join([partner.v["pname"], k.v["kname"]]),
                    partner.turns("name") + k.turns("name"),
                    [partner, k],
                    [partner.v["pname"], k.v["kname"]],
                    xl=True,
                )
        trips = [t for t in self.of(p, "trip") if t.has("dest")]
        if len(trips) >= 2:
            self.add(
                "multi-hop",
                "m_trips_all",
                nm,
                self.join([t.v["dest"] for t in trips]),
                [i for t in trips for i in t.turns("dest")],
                trips,
                [t.v["dest"] for t in trips],
                xl=True,
            )
        emp = self.employments(p)
        if len(emp) >= 2 and all(e[2] for e in emp):
            self.add(
                "multi-hop",
                "m_jobs_all",
                nm,
                self.join([e[1] for e in emp]),
                [i for e in emp for i in e[2]],
                [e[0] for e in emp],
                [e[1] for e in emp],
                xl=True,
            )
        if len(res) >= 2 and all(r[2] for r in res):
            self.add(
                "multi-hop",
                "m_homes_all",
                nm,
                self.join([r[1] for r in res]),
                [i for r in res for i in r[2]],
                [r[0] for r in res],
                [r[1] for r in res],
                xl=True,
            )
        for tp, info in self.c.third[p.key]:
            if any(t.v["comp_key"] == tp.key for t in trips):
                continue  # they travelled together: "both went to" would have two answers
            for f in self.of(tp, "tp_trip"):
                mine = [t for t in trips if t.v["dest"] == f.v["dest"]]
                if mine:
                    sl = {**nm, "rel": info.v["rel"]}
                    self.add(
                        "multi-hop",
                        "m_shared_dest_tp",
                        sl,
                        f.v["dest"],
                        mine[0].turns("dest") + f.turns("dest"),
                        [mine[0], f],
                        [f.v["dest"]],
                    )

    def open(self, p: Person) -> None:
        L, nm = self.L, self.names(p)
        for f in self.of(p, "pref", "cond"):
            e = f.entry
            assert e is not None
            self.add("open-domain", "o_entry", {"oq": fill(e["oq"], nm)}, fill(e["oa"], nm), f.turns(f.kind), [f])
        for f in self.of(p, "hobby", "takeup"):
            e = f.entry
            assert e is not None
            self.add("open-domain", "o_entry", {"oq": fill(e["oq"], nm)}, fill(e["oa"], nm), f.turns("hobby"), [f])
        jobs = self.of(p, "job", "jobchange")
        if jobs:
            cur = jobs[-1]
            e = cur.v["entry"]
            self.add(
                "open-domain",
                "o_entry",
                {"oq": fill(e["oq"], nm)},
                fill(e["oa"], nm),
                cur.turns("role"),
                [cur],
                [cur.v["role"]],
            )
        for f in self.of(p, "purchase"):
            e = f.entry
            assert e is not None
            if "oq" in e:
                self.add(
                    "open-domain",
                    "o_entry",
                    {"oq": fill(e["oq"], nm)},
                    fill(e["oa"], nm),
                    f.turns("item"),
                    [f],
                    [f.v["item"]],
                )
        for f in self.of(p, "goal"):
            e = f.entry
            assert e is not None
            if "oq" in e:
                sl = {**nm, **{k: x for k, x in f.v.items() if isinstance(x, str)}}
                self.add(
                    "open-domain", "o_entry", {"oq": fill(e["oq"], sl)}, fill(e["oa"], sl), f.turns("goal", "done"), [f]
                )
        pets = [f for f in self.of(p, "pet", "adopt") if f.has("name")]
        if pets:
            names = self.join([f.v["name"] for f in pets])
            ans = f"Yes: {p.name} has {names}." if L == "en" else f"需要，{p.name}养了{names}。"
            self.add(
                "open-domain",
                "o_pet",
                nm,
                ans,
                [i for f in pets for i in f.turns("name")],
                pets,
                [f.v["name"] for f in pets],
                xl=True,
            )
        kids = [k for k in self.of(p, "kid") if k.has("name")]
        if kids:
            names = self.join([k.v["kname"] for k in kids])
            ans = (
                f"Likely: {p.name} has young children ({names})."
                if L == "en"
                else f"很可能需要，{p.name}家有小孩（{names}）。"
            )
            self.add("open-domain", "o_kid", nm, ans, [i for k in kids for i in k.turns("name")], kids, xl=True)
        res = self.residences(p)
        f, city, ids, _, _ = res[-1]
        coast = f.v["coast"]
        if coast is not None and ids:
            if L == "en":
                ans = f"{'Yes' if coast else 'No'}: {p.name} lives in {city}{'' if coast else ', which is inland'}."
            else:
                ans = f"{p.name}现在住在{city}，{'是海滨城市，海就在身边' if coast else '是内陆城市，不靠海'}。"
            self.add("open-domain", "o_coast", nm, ans, ids, [f], [city], xl=True)

    def pairs(self) -> None:
        """Questions about both speakers at once."""
        a, b = self.c.a, self.c.b
        sl = {"A": a.name, "B": b.name}
        pa = [f for f in self.of(a, "pet", "adopt") if f.has("name", "breed")]
        pb = [f for f in self.of(b, "pet", "adopt") if f.has("name", "breed")]
        if pa and pb:

            def desc(f: Fact) -> str:
                return f"{f.v['name']} ({f.v['breed']})"

            if self.L == "en":
                ans = f"{a.name}: {self.join([desc(f) for f in pa])}; {b.name}: {self.join([desc(f) for f in pb])}"
            else:
                ans = f"{a.name}：{self.join([desc(f) for f in pa])}；{b.name}：{self.join([desc(f) for f in pb])}"
            ids = [i for f in pa + pb for i in f.turns("name", "breed")]
            self.add("multi-hop", "m_both_pets", sl, ans, ids, pa + pb, [f.v["name"] for f in pa + pb], xl=True)

        def visited(p: Person) -> dict[str, list[Fact]]:
            out: dict[str, list[Fact]] = {}
            for f in self.of(p, "trip", "echo"):
                if f.has("dest"):
                    out.setdefault(f.v["dest"], []).append(f)
            return out

        va, vb = visited(a), visited(b)
        shared = [d for d in va if d in vb]
        if len(shared) == 1:
            d = shared[0]
            fs = va[d] + vb[d]
            self.add("multi-hop", "m_shared_dest", sl, d, [i for f in fs for i in f.turns("dest")], fs, [d], xl=True)
        ha = {f.entry["key"]: f for f in self.of(a, "hobby", "takeup") if f.entry and f.has("hobby")}
        hb = {f.entry["key"]: f for f in self.of(b, "hobby", "takeup") if f.entry and f.has("hobby")}
        common = [k for k in ha if k in hb]
        if len(common) == 1:
            fa, fb = ha[common[0]], hb[common[0]]
            assert fa.entry is not None
            self.add(
                "multi-hop",
                "m_shared_hobby",
                sl,
                fa.entry["noun"],
                fa.turns("hobby") + fb.turns("hobby"),
                [fa, fb],
                xl=True,
            )
        for kind, qtype, attr in (("health", "m_both_health", "event"), ("purchase", "m_both_item", "item")):
            ka = {f.entry["key"]: f for f in self.of(a, kind) if f.entry and f.has(attr)}
            kb = {f.entry["key"]: f for f in self.of(b, kind) if f.entry and f.has(attr)}
            common = [k for k in ka if k in kb]
            if len(common) == 1:
                fa, fb = ka[common[0]], kb[common[0]]
                assert fa.entry is not None
                ans = fa.entry["short"] if kind == "health" else fa.v["item"]
                self.add("multi-hop", qtype, sl, ans, fa.turns(attr) + fb.turns(attr), [fa, fb], xl=True)

    # ---- selection

    def select(self) -> list[Query]:
        """A balanced pick: QUOTA per category, round-robin over question types, least-used facts first."""
        rng, L = self.rng, self.L
        chosen: list[Cand] = []
        used_text: set[str] = set()
        fact_use: Counter[str] = Counter()
        for cat, n in QUOTA.items():
            by_type: dict[str, list[Cand]] = {}
            for c in self.cands:
                if c.cat == cat:
                    by_type.setdefault(c.qtype, []).append(c)
            for lst in by_type.values():
                rng.shuffle(lst)
            types = sorted(by_type)
            got = 0
            while got < n and any(by_type.values()):
                rng.shuffle(types)
                for t in types:
                    lst = by_type[t]
                    if got >= n or not lst:
                        continue
                    lst.sort(key=lambda c: sum(fact_use[k] for k in c.keys))
                    c = lst.pop(0)
                    if c.texts[L] in used_text:
                        continue
                    used_text.add(c.texts[L])
                    fact_use.update(c.keys)
                    chosen.append(c)
                    got += 1
        langs = [L] * len(chosen)
        flippable = [i for i, c in enumerate(chosen) if len(c.texts) == 2]
        lo, hi = CROSS_LINGUAL[L]
        for i in rng.sample(flippable, min(len(flippable), rng.randint(lo, hi))):
            langs[i] = "zh" if L == "en" else "en"
        now = self.c.now.strftime("%Y-%m-%dT%H:%M:%SZ")
        return [
            Query(c.texts[lang], self.c.ns, c.ids, c.cat, lang, now, c.answer, c.qtype, c.checks)
            for c, lang in zip(chosen, langs, strict=True)
        ]


# --------------------------------------------------------------------------------------------------------------
# Generation, validation, output


def pick_speakers(rng: random.Random) -> dict[int, tuple[tuple[str, str], tuple[str, str]]]:
    """Two speakers per conversation, never reused across conversations."""
    pools = {L: {g: list(NAMES[L][g]) for g in "fm"} for L in NAMES}
    for L in pools:
        for g in "fm":
            rng.shuffle(pools[L][g])
    out = {}
    for num in range(1, N_CONVERSATIONS + 1):
        L = "zh" if num in ZH_CONVERSATIONS else "en"
        ga, gb = rng.choice(("fm", "ff", "mm", "mf", "fm", "mf"))
        out[num] = ((pools[L][ga].pop(), ga), (pools[L][gb].pop(), gb))
    return out


def generate() -> tuple[list[Conversation], list[Query]]:
    rng = random.Random(f"{SEED}-long-chat-speakers")
    speakers = pick_speakers(rng)
    taken = {n for pair in speakers.values() for n, _ in pair}
    convs: list[Conversation] = []
    queries: list[Query] = []
    seen_langs: Counter[str] = Counter()
    for num in range(1, N_CONVERSATIONS + 1):
        lang = "zh" if num in ZH_CONVERSATIONS else "en"
        rel = RELATIONSHIPS[lang][seen_langs[lang] % len(RELATIONSHIPS[lang])]
        seen_langs[lang] += 1
        c = Conversation(num, lang, rel, speakers[num], taken)
        c.sample()
        c.render()
        qb = QueryBuilder(c)
        qb.build()
        convs.append(c)
        queries.extend(qb.select())
    return convs, queries


def memory_record(c: Conversation, t: Turn) -> dict[str, Any]:
    return {
        "id": t.tid,
        "content": t.content,
        "type": "episodic",
        "namespace": c.ns,
        "created_at": t.at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "metadata": {"conversation": c.ns, "session": t.session, "turn": t.index, "speaker": t.speaker},
    }


def query_record(q: Query) -> dict[str, Any]:
    return {
        "query": q.query,
        "namespace": q.namespace,
        "expected": {"ids": q.ids},
        "category": q.category,
        "lang": q.lang,
        "now": q.now,
        "answer": q.answer,
        "qtype": q.qtype,
    }


def check(convs: list[Conversation], queries: list[Query]) -> list[str]:
    """Every rule the set must keep; returns the broken ones (empty when all is well)."""
    errors: list[str] = []

    def need(ok: bool, msg: str) -> None:
        if not ok:
            errors.append(msg)

    by_id: dict[str, tuple[Conversation, Turn]] = {}
    for c in convs:
        need(15 <= c.n <= 30, f"{c.ns}: {c.n} sessions")
        span = (c.dates[-1] - c.dates[0]).days
        need(182 <= span <= 548, f"{c.ns}: spans {span} days")
        need(all(a < b for a, b in pairwise(c.dates)), f"{c.ns}: session dates not increasing")
        times = [t.at for t in c.turns]
        need(all(a < b for a, b in pairwise(times)), f"{c.ns}: timestamps not increasing")
        need(c.now > times[-1], f"{c.ns}: now is not after the last turn")
        for t in c.turns:
            need(t.tid not in by_id, f"duplicate turn id {t.tid}")
            by_id[t.tid] = (c, t)
        contents = Counter(t.content for t in c.turns)
        for t in c.turns:
            if t.facts:
                need(contents[t.content] == 1, f"{t.tid}: evidence turn repeated verbatim: {t.content}")
    turns = [t for c in convs for t in c.turns]
    need(len(convs) >= 12, f"only {len(convs)} conversations")
    need(len(turns) >= 3000, f"only {len(turns)} turns")
    filler = sum(not t.facts for t in turns) / len(turns)
    need(filler >= 0.40, f"only {filler:.0%} of turns are filler")
    zh_share = sum(c.lang == "zh" for c in convs) / len(convs)
    need(0.25 <= zh_share <= 0.35, f"{zh_share:.0%} of conversations in Chinese")
    need(len(queries) >= 400, f"only {len(queries)} queries")
    texts = Counter(q.query for q in queries)
    for text, n in texts.items():
        need(n == 1, f"query asked {n} times: {text}")
    per_conv = Counter(q.namespace for q in queries)
    for c in convs:
        need(per_conv[c.ns] >= 25, f"{c.ns}: only {per_conv[c.ns]} queries")
    cats = Counter(q.category for q in queries)
    for cat, share in TARGET_SHARE.items():
        need(abs(cats[cat] / len(queries) - share) <= 0.05, f"{cat}: {cats[cat]} of {len(queries)} queries")
    for q in queries:
        need(bool(q.ids), f"no evidence: {q.query}")
        evidence = ""
        for i in q.ids:
            if i not in by_id:
                errors.append(f"unknown id {i} in: {q.query}")
                continue
            c, t = by_id[i]
            need(c.ns == q.namespace, f"{i} is not in {q.namespace}: {q.query}")
            need(bool(t.facts), f"{i} states no fact: {q.query}")
            evidence += t.content + "\n"
        for value in q.checks:
            need(value in evidence, f"'{value}' not in the evidence of: {q.query}")
        need(
            q.now > max((by_id[i][1].at.strftime("%Y-%m-%dT%H:%M:%SZ") for i in q.ids if i in by_id), default=""),
            f"now before evidence: {q.query}",
        )
        need(q.lang in ("en", "zh"), f"bad lang: {q.query}")
    return errors


def summary(convs: list[Conversation], queries: list[Query], seconds: float) -> str:
    turns = [t for c in convs for t in c.turns]
    facts = sum(len(c.facts) for c in convs)
    filler = sum(not t.facts for t in turns)
    lines = [
        f"long-chat v{GENERATOR_VERSION} (seed {SEED}): {len(convs)} conversations "
        f"({sum(c.lang == 'zh' for c in convs)} Chinese), {sum(c.n for c in convs)} sessions, {len(turns)} turns, "
        f"{facts} facts; {filler / len(turns):.0%} of turns carry no fact",
    ]
    for c in convs:
        nq = sum(q.namespace == c.ns for q in queries)
        lines.append(
            f"  {c.ns} [{c.lang}] {c.a.name} & {c.b.name} ({c.rel}): {c.n} sessions "
            f"{c.dates[0]}..{c.dates[-1]}, {len(c.turns)} turns, {nq} queries"
        )
    cats = Counter(q.category for q in queries)
    langs = Counter(q.lang for q in queries)
    lines.append(f"queries: {len(queries)}")
    for cat in TARGET_SHARE:
        by_lang = Counter(q.lang for q in queries if q.category == cat)
        lines.append(
            f"  {cat:<12} {cats[cat]:>4} ({cats[cat] / len(queries):.0%})  en {by_lang['en']:>3}  zh {by_lang['zh']:>3}"
        )
    lines.append(
        f"  languages: en {langs['en']}, zh {langs['zh']}; cross-lingual "
        f"{sum(q.lang != ('zh' if int(q.namespace[5:]) in ZH_CONVERSATIONS else 'en') for q in queries)}"
    )
    ev = [len(q.ids) for q in queries]
    lines.append(f"  evidence turns per query: min {min(ev)}, mean {sum(ev) / len(ev):.1f}, max {max(ev)}")
    lines.append(f"generated in {seconds:.2f}s")
    return "\n".join(lines)


def write(convs: list[Conversation], queries: list[Query], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "memories.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for c in convs:
            for t in c.turns:
                fh.write(json.dumps(memory_record(c, t), ensure_ascii=False) + "\n")
    with (out / "queries.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
        for q in queries:
            fh.write(json.dumps(query_record(q), ensure_ascii=False) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output directory (default: bench/long-chat)")
    parser.add_argument("--check", action="store_true", help="generate and validate only; write nothing")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    convs, queries = generate()
    errors = check(convs, queries)
    elapsed = time.perf_counter() - started
    print(summary(convs, queries, elapsed))
    if errors:
        print(f"\n{len(errors)} problem(s):", file=sys.stderr)
        for e in errors[:50]:
            print(f"  {e}", file=sys.stderr)
        return 1
    if not args.check:
        write(convs, queries, args.out)
        print(f"wrote {args.out}/memories.jsonl and {args.out}/queries.jsonl")
    return 0


if __name__ == "__main__":
    sys.exit(main())
