"""When two similar texts are the same memory: the lexical guard that backs the cosine threshold.

Small embedding models place "the user prefers pnpm" and "the user prefers npm" at
cosine ~0.97: the sentences share everything but the one word that matters. Merging
such a pair would fold two different facts into one, so a merge needs both a cosine
at or above the model's calibrated threshold *and* no lexical sign of a different
fact. The signs are deliberately simple and explainable:

- different numbers (ports, versions, counts, times);
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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from engram_cli import text as textmod

_NUMBER = re.compile(r"\d+(?:[.:]\d+)*")
_NEGATION_EN = re.compile(
    r"\b(?:not|never|no|none|nothing|neither|nor|without|avoid|stop|cannot)\b|n't\b|\bdont\b", re.IGNORECASE
)
_NEGATION_ZH = re.compile("不|没|别|勿|无需|禁止|避免|未")
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
# Words that flip a fact although they are stop words elsewhere.
_POLAR_WORDS = frozenset(
    {"on", "off", "no", "not", "never", "more", "less", "before", "after", "up", "down", "in", "out"}
)
# A two-sided difference counts as a swap when the texts share at least this much.
SWAP_OVERLAP = 0.4


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


def _negation_term(term: str) -> bool:
    if term.isascii():
        return term in _NEGATION_TERMS or term.endswith("n't")
    return _NEGATION_ZH.search(term) is not None


def topic_terms(words: Sequence[str]) -> frozenset[str]:
    """What analysed text is about: its stemmed content words, polarity and negation words aside."""
    return frozenset(t for t in _terms_of(words) - _POLAR_WORDS if not _negation_term(t))


def negates(text: str) -> bool:
    return bool(_NEGATION_EN.search(text) or _NEGATION_ZH.search(text))


def change_marker(text: str) -> str | None:
    """The first change marker in ``text`` ("from now on", "改用" …), if any."""
    match = _CHANGE.search(text)
    return match.group(0) if match else None


@dataclass(frozen=True)
class Profile:
    """What the lexical guard reads from one text, computed once so many pairs can share it."""

    numbers: tuple[tuple[str, int], ...]
    negates: bool
    changes: bool
    terms: frozenset[str]
    words: tuple[str, ...]
    topic: frozenset[str]  # the terms without polarity and negation words: what the text is about


def profile(text: str) -> Profile:
    words = tuple(textmod.analyze(text))
    return Profile(
        numbers=tuple(sorted(Counter(_NUMBER.findall(text)).items())),
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


def merge_decision(existing: str, new: str, cosine: float, threshold: float) -> tuple[bool, list[str]]:
    """Whether ``new`` folds into ``existing``, and the blockers when similar but different.

    Texts with the same words merge whatever the model says (a trailing "!" moves an
    int8 e5 vector by ~0.04); otherwise the cosine must reach the model's threshold
    and no lexical blocker may apply.
    """
    if same_words(existing, new):
        return True, []
    if cosine < threshold:
        return False, []
    blockers = merge_blockers(existing, new)
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
