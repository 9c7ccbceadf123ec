"""When two similar texts are the same memory: the lexical guard that backs the cosine threshold.

Small embedding models place "the user prefers pnpm" and "the user prefers npm" at
cosine ~0.97: the sentences share everything but the one word that matters. Merging
such a pair would fold two different facts into one, so a merge needs both a cosine
at or above the model's calibrated threshold *and* no lexical sign of a different
fact. The signs are deliberately simple and explainable:

- different numbers (ports, versions, counts, times), or the same numbers in another order;
- opposite polarity (one side negates: not / never / 不 / 别 …);
- a change marker on one side only ("from now on", "instead of", 以后, 改用 …): that
  is a correction of the old fact, handled as supersession, never as a merge;
- a word swap: both texts have terms the other lacks while sharing most of the rest
  (pnpm vs npm, Tuesday vs Thursday, 杭州 vs 北京).

Precision comes first: a wrong merge hides a fact, a missed merge only leaves a
near-duplicate that compaction can fold later.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from engram_cli.lang import text as textmod

_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")
_NEGATION_EN = re.compile(
    r"\b(?:not|never|no|none|nothing|neither|nor|without|avoid|stop|cannot)\b|n't\b|\bdont\b", re.IGNORECASE
)
# Chinese negation is read word by word: 不, 没, 别 and 未 also start or end many words that negate
# nothing (不同 "different", 未来 "future", 特别 "especially"). Each entry below is one such word;
# the lookarounds keep out the longer words that do negate (不同意 "disagree", 不同步 "not in sync",
# 没错误 "no errors", 没收到 "did not receive") and the splits where 别 begins an order (这部分别提交,
# "don't commit this part"). Hedges stay negations: 不一定 and 未必 ("not necessarily") weaken a fact.
_ZH_NOT_NEGATING = (
    "不错(?![过误])",  # good
    "不仅", "不但", "不只", "不光(?!滑)",  # not only
    "(?<![\u4e00-\u9fff])不过(?!期)", "只不过",  # but; merely (通不过 "does not pass" negates)
    "不管(?![用理])", "不论",  # no matter, regardless
    "不然",  # otherwise
    "不久", "不时",  # soon, now and then
    "不断(?!开)", "不停(?![止用])",  # continuously
    "不同(?![意步时])", "不一样",  # different
    "不少",  # quite a few
    "差不多",  # almost
    "不得不",  # have to
    "不稳定",  # unstable: a word of its own, like English "unstable"
    "不妨",  # might as well
    "说不定",  # maybe
    "了不起", "不得了",  # remarkable, extremely
    "对不起", "不好意思",  # sorry
    "不可或缺",  # indispensable
    "不可避免", "无法避免", "难以避免", "避免不了",  # unavoidable
    "不外乎", "不亚于",  # nothing but, no less than
    "不知不觉",  # without noticing
    "没错(?!误)",  # right
    "没准",  # maybe
    "淹没", "沉没", "吞没", "埋没", "出没", "没收(?![到拾])",  # 没 read mò: flood, sink, swallow, bury, haunt, seize
    "别的", "别人", "别处", "别名", "别称",  # other, others, elsewhere, alias
    "特别", "区别", "差别", "(?<!部)分别", "识别", "辨别", "鉴别", "判别",  # especially, difference, tell apart
    "级别", "(?<![这那此该])类别", "性别", "告别",  # level, category, gender, farewell
    "(?<![这那哪一每某各])个别",  # a few (not 这个别…, "don't … this one")
    "未来", "未知", "未免",  # future, unknown, rather
    "(?P<a>[\u4e00-\u9fff])[不没](?P=a)",  # a question, not a denial: 是不是, 要不要, 有没有
)  # fmt: skip
_NEGATION_ZH = re.compile("(?:" + "|".join(_ZH_NOT_NEGATING) + ")|(?P<neg>不|没|别|勿|无需|禁止|避免|未)")
CHANGE_MARKERS_EN = (
    "from now on", "no longer", "instead of", "instead", "not anymore", "any more", "anymore", "switch to",
    "switched to", "stop using", "going forward", "replaced with", "replace it with", "rather than",
)  # fmt: skip
CHANGE_MARKERS_ZH = (
    "以后",
    "今后",
    "从现在起",
    "从现在开始",
    "不再",
    "改用",
    "改成",
    "改为",
    "换成",
    "不要再",
    "别再",
    "取代",
    "代替",
)
_CHANGE = re.compile(
    "|".join(
        [r"\b" + re.escape(m).replace(r"\ ", r"\s+") + r"\b" for m in CHANGE_MARKERS_EN]
        + [re.escape(m) for m in CHANGE_MARKERS_ZH]
    ),
    re.IGNORECASE,
)
# A word of every English change marker, and every Chinese one: a text holding none of them,
# case folded, has no marker, which one scan for each tells faster than the expression above.
# (Case folding matches what IGNORECASE matches, except that the expression also matches a
# dotless ı to i: it is folded to i here.)
_CHANGE_WORDS = ("now", "longer", "instead", "any", "switch", "stop", "forward", "replace", "rather")
_CHANGE_SCREEN = tuple(dict.fromkeys(_CHANGE_WORDS + CHANGE_MARKERS_ZH))
# The characters a Chinese negation word starts with (see _NEGATION_ZH's "neg" group).
_ZH_NEGATION_START = re.compile("[不没别勿无禁避未]")
# Words that flip a fact although they are stop words elsewhere.
_POLAR_WORDS = frozenset(
    {"on", "off", "no", "not", "never", "more", "less", "before", "after", "up", "down", "in", "out"}
)
# A two-sided difference counts as a swap when the texts share at least this much.
SWAP_OVERLAP = 0.4


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light English suffix strip: enough to see 'pinned' and 'pinning' as one word."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > 4 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _terms(text: str) -> set[str]:
    return _terms_of(textmod.analyze(text))


def _terms_of(words: Sequence[str]) -> set[str]:
    return {stem(t) for t in words if t not in textmod.STOPWORDS or t in _POLAR_WORDS}


# The English negations as single analysed terms (what _NEGATION_EN finds inside one word).
_NEGATION_TERMS = frozenset(
    {"not", "never", "no", "none", "nothing", "neither", "nor", "without", "avoid", "stop", "cannot", "dont"}
)


def _negates_zh(text: str) -> bool:
    if text.isascii() or _ZH_NEGATION_START.search(text) is None:
        return False
    return any(match.group("neg") for match in _NEGATION_ZH.finditer(text))


@lru_cache(maxsize=1 << 16)
def _negation_term(term: str) -> bool:
    if term.isascii():
        return term in _NEGATION_TERMS or term.endswith("n't")
    return _negates_zh(term)


def topic_terms(words: Sequence[str]) -> frozenset[str]:
    """What analysed text is about: its stemmed content words, polarity and negation words aside."""
    return frozenset(t for t in _terms_of(words) - _POLAR_WORDS if not _negation_term(t))


def negates(text: str) -> bool:
    """Whether ``text`` says no: not / never / don't …, or a Chinese negation word (不要, 没有, 别 …)."""
    return bool(_NEGATION_EN.search(text)) or _negates_zh(text)


def change_marker(text: str) -> str | None:
    """The first change marker in ``text`` ("from now on", "改用" …), if any."""
    folded = text.casefold().replace("ı", "i")
    if not any(word in folded for word in _CHANGE_SCREEN):
        return None
    match = _CHANGE.search(text)
    return match.group(0) if match else None


@dataclass(frozen=True)
class Profile:
    """What the lexical guard reads from one text, computed once so many pairs can share it."""

    numbers: tuple[str, ...]  # in the order written: "worker 0, round 5" is not "worker 5, round 0"
    negates: bool
    changes: bool
    terms: frozenset[str]
    words: tuple[str, ...]
    topic: frozenset[str]  # the terms without polarity and negation words: what the text is about


def profile(text: str) -> Profile:
    """The lexical signals of ``text``, in time linear in its length."""
    words = tuple(textmod.analyze(text))
    return Profile(
        numbers=tuple(_NUMBER.findall(text)),
        negates=negates(text),
        changes=change_marker(text) is not None,
        terms=frozenset(_terms_of(words)),
        words=words,
        topic=topic_terms(words),
    )


def profile_blockers(a: Profile, b: Profile) -> list[str]:
    """:func:`merge_blockers` for texts already profiled."""
    reasons: list[str] = []
    if a.numbers != b.numbers:
        reasons.append("different numbers")
    if a.negates != b.negates:
        reasons.append("opposite polarity")
    if a.changes != b.changes:
        reasons.append("one side states a change")
    ta, tb = a.terms, b.terms
    only_a, only_b = ta - tb, tb - ta
    if only_a and only_b and ta | tb and len(ta & tb) / len(ta | tb) >= SWAP_OVERLAP:
        reasons.append("a word was swapped: " + ", ".join(sorted(only_a)[:3]) + " / " + ", ".join(sorted(only_b)[:3]))
    return reasons


def merge_blockers(a: str, b: str) -> list[str]:
    """Reasons why two similar texts are different memories; empty when they may merge."""
    return profile_blockers(profile(a), profile(b))


def topic_overlap(a: Profile, b: Profile) -> float:
    """Share of content words two texts have in common, polarity words aside (Jaccard)."""
    union = len(a.topic | b.topic)
    return len(a.topic & b.topic) / union if union else 0.0


def same_words(a: str, b: str) -> bool:
    """The same words in the same order: only case, punctuation or spacing differ."""
    return textmod.analyze(a) == textmod.analyze(b)


def merge_decision(
    existing: str | Profile, new: str | Profile, cosine: float, threshold: float
) -> tuple[bool, list[str]]:
    """Whether ``new`` folds into ``existing``, and the blockers when similar but different.

    Texts with the same words merge whatever the model says (a trailing "!" moves an
    int8 e5 vector by ~0.04); otherwise the cosine must reach the model's threshold
    and no lexical blocker may apply. A text compared with several others may be passed
    profiled, so it is read once.
    """
    a = existing if isinstance(existing, Profile) else profile(existing)
    b = new if isinstance(new, Profile) else profile(new)
    if a.words == b.words:
        return True, []
    if cosine < threshold:
        return False, []
    blockers = profile_blockers(a, b)
    return not blockers, blockers


# How far below the merge threshold a correction may sit and still replace an older memory.
SUPERSEDE_MARGIN = 0.125


def supersedes(old: str, new: str, cosine: float, min_similarity: float) -> str | None:
    """Why ``new`` replaces ``old`` ("change marker 'from now on'"), or None.

    The rule: the new text carries a change marker, the old one does not, the two are
    similar (cosine >= ``min_similarity``) and they share at least one content word.
    """
    marker = change_marker(new)
    if marker is None or change_marker(old) is not None or cosine < min_similarity:
        return None
    shared = (_terms(old) & _terms(new)) - _terms(marker)
    if not shared:
        return None
    return f"change marker {marker!r}, cosine {cosine:.3f}, shared: {', '.join(sorted(shared)[:3])}"
