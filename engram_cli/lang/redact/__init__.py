"""Secrets and personal data in text: find them, and replace them with ``[REDACTED:<kind>]``.

Detection follows the published format of each credential (an AWS key id is AKIA or ASIA
and 16 more characters; a GitHub token starts with ghp_, gho_, …; Stripe secret keys with
sk_live_ or sk_test_, npm tokens with npm_, Hugging Face tokens with hf_) rather than
guessing from entropy, because a memory store is full of harmless random-looking strings:
commit SHAs, content hashes, UUIDs, build ids. Free-form secrets are recognised only by their
label: ``password=…``, ``"api_key": …``, ``Authorization: Bearer …``, the password part of a
URL, ``AccountKey=`` and ``SharedAccessSignature=``/``sig=`` in Azure connection strings and
SAS URLs, a Chinese label with a colon or 是/为 (``密码：…``, ``口令是…``, ``令牌：…``), and
on command lines a mysql-family client's glued ``-p…``, ``sshpass -p …``, ``--password …``
and an HTTP client's ``-u user:…`` (the user stays). Personal numbers carry their own checks:
a card number must start like a card and pass Luhn; a Chinese resident id must hold a real
birth date and its check digit; a US SSN must be in ``ddd-dd-dddd`` form outside the ranges
that are never issued.

E-mail addresses and phone numbers are personal data too, but found only with
``contact=True``: a phone number must have a shape people write one in (``+`` and a country
code, a Chinese mobile number, a US number with its area code), never a bare run of digits.
:data:`KINDS` are the kinds found by default, :data:`CONTACT_KINDS` the ones ``contact`` adds.

A finding spans the secret *value* only, so ``password=hunter2`` becomes
``password=[REDACTED:password-assignment]`` and the text still says what was there.
Markers are never reported again, which makes :func:`redact` idempotent.

Every pattern runs in linear time: a memory may be 100,000 characters of anything.

The package: :mod:`.checks` holds what a regular expression cannot decide (placeholders, Luhn
and card prefixes, resident ids, SSNs), :mod:`.patterns` the patterns in the order that decides
which finding wins, :mod:`.contact` the e-mail and phone patterns; below, the findings are
resolved, card numbers found, and the text rewritten.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engram_cli.lang.redact.checks import card_ok, cn_id_ok, is_placeholder, luhn_ok, ssn_ok
from engram_cli.lang.redact.contact import _CONTACT_PATTERNS, CONTACT_KINDS
from engram_cli.lang.redact.patterns import _PATTERNS, PERSONAL, SECRET, Check, _rx, secret_name

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "CARD_KIND",
    "CONTACT_KINDS",
    "KINDS",
    "MARKER_RE",
    "PERSONAL",
    "SECRET",
    "Check",
    "Finding",
    "card_ok",
    "category",
    "cn_id_ok",
    "find",
    "is_placeholder",
    "luhn_ok",
    "marker",
    "may_hold",
    "may_hold_many",
    "redact",
    "redact_data",
    "secret_name",
    "ssn_ok",
]

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Finding:
    """One secret or personal value: its kind, its span in the text, "secret" or "personal"."""

    kind: str
    start: int
    end: int
    category: str


# -- finding, resolving overlaps, rewriting the text ---------------------------------------

CARD_KIND = "card-number"
# Card numbers rank last: an 18-digit resident id can pass Luhn too, and so can a phone number.
_CARD_RANK = len(_PATTERNS) + len(_CONTACT_PATTERNS)
_CATEGORIES = {p.kind: p.category for p in _PATTERNS + _CONTACT_PATTERNS} | {CARD_KIND: PERSONAL}
# What find() reports by default; contact=True adds CONTACT_KINDS.
KINDS = tuple(sorted(kind for kind in _CATEGORIES if kind not in CONTACT_KINDS))


def category(kind: str) -> str:
    """The category of a finding's kind: secret or personal (secret for a kind this module does not know)."""
    return _CATEGORIES.get(kind, SECRET)


# Runs of digit groups separated by one space or dash: where card numbers hide. Greedy with
# no look-ahead, so a long run is read once; what follows the run is checked in Python.
_DIGIT_RUN = _rx(r"(?<![A-Za-z0-9_.])\d+(?:[ -]\d+)*")
_DIGITS = _rx(r"\d+")


def _cards(text: str) -> Iterator[tuple[int, int]]:
    """Spans of card numbers: the longest Luhn-valid stretch of whole digit groups in each run."""
    for run in _DIGIT_RUN.finditer(text):
        groups = [(run.start() + m.start(), run.start() + m.end()) for m in _DIGITS.finditer(run.group())]
        after = text[run.end() : run.end() + 1]
        if after and (after.isascii() and (after.isalnum() or after == "_")):
            groups.pop()  # the last group is glued to a word: not part of a number
        i = 0
        while i < len(groups):
            digits = ""
            best = -1
            for j in range(i, len(groups)):
                digits += text[groups[j][0] : groups[j][1]]
                if len(digits) > 19:
                    break
                if card_ok(digits):
                    best = j
            if best < 0:
                i += 1
                continue
            yield groups[i][0], groups[best][1]
            i = best + 1


def _candidates(text: str, contact: bool, screen: _Screen) -> Iterator[tuple[int, int, int, str, str, bool]]:
    """(rank, start, end, kind, category, free) for every match of every pattern, overlaps included."""
    for rank, pattern in enumerate(_PATTERNS + _CONTACT_PATTERNS if contact else _PATTERNS):
        if not screen.may_find(pattern.kind):
            continue  # none of what every match of this kind contains
        for match in pattern.regex.finditer(text):
            if match.start("v") == match.end("v"):
                continue
            if pattern.check is not None and not pattern.check(match):
                continue
            yield rank, match.start("v"), match.end("v"), pattern.kind, pattern.category, pattern.free
    if screen.may_find(CARD_KIND):
        for start, end in _cards(text):
            yield _CARD_RANK, start, end, CARD_KIND, PERSONAL, False


def _find_once(text: str, contact: bool, screen: _Screen | None = None) -> list[Finding]:
    # Spans no finding may enter: the markers already in the text, then each finding taken.
    blocked = [(m.start(), m.end()) for m in MARKER_RE.finditer(text)]
    starts = [s for s, _ in blocked]
    found: list[Finding] = []
    for _, start, end, kind, category, free in sorted(
        _candidates(text, contact, screen or _Screen(text)), key=lambda c: (c[0], c[1])
    ):
        k = bisect_left(starts, start)
        if k > 0 and blocked[k - 1][1] > start:
            continue
        if k < len(blocked) and blocked[k][0] < end:
            # A free-form value stops where a marker or a stronger finding begins.
            if not free or is_placeholder(text[start : blocked[k][0]]):
                continue
            end = blocked[k][0]
        starts.insert(k, start)
        blocked.insert(k, (start, end))
        found.append(Finding(kind, start, end, category))
    return sorted(found, key=lambda f: f.start)


def _replace(text: str, findings: list[Finding]) -> tuple[str, list[tuple[int, int]]]:
    """The text with findings replaced by markers, and (offset in output, offset in input) per kept segment."""
    parts: list[str] = []
    segments: list[tuple[int, int]] = []
    pos = out = 0
    for f in findings:
        segments.append((out, pos))
        parts.append(text[pos : f.start])
        out += f.start - pos
        label = marker(f.kind)
        parts.append(label)
        out += len(label)
        pos = f.end
    segments.append((out, pos))
    parts.append(text[pos:])
    return "".join(parts), segments


# -- the screen: most text cannot hold a secret, and a few substring tests show it ----------

# What every match of a pattern contains, by kind, case folded: its published prefix or its label
# (folding only lets more text through). A pattern runs only on text that holds one of its kind's
# words, and text that holds none of any kind is not scanned at all. A new pattern needs its entry
# here or in _MIN_DIGITS (tests/test_text_screens.py fails otherwise).
_TRIGGERS: dict[str, tuple[str, ...]] = {
    "private-key": ("-----begin",),
    "jwt": ("eyj",),
    "anthropic-key": ("sk-",),
    "openai-key": ("sk-",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "gitlab-token": ("glpat-",),
    "slack-token": ("xoxb-", "xoxa-", "xoxp-", "xoxr-", "xoxs-"),
    "google-api-key": ("aiza",),
    "aws-access-key-id": ("akia", "asia"),
    "stripe-key": ("k_live_", "k_test_"),
    "npm-token": ("npm_",),
    "huggingface-token": ("hf_",),
    "azure-key": ("accountkey", "sharedaccesskey"),
    "azure-sas": ("sharedaccesssignature", "sig="),
    "aws-secret-key": ("secret",),
    "bearer-token": ("bearer",),
    "url-password": ("://",),
    "cli-password": ("mysql", "mariadb", "sshpass", "pass"),
    "basic-auth": ("curl", "wget", "http", "xh"),
    "cn-secret": (
        *("密码", "密碼", "口令", "密钥", "密鑰", "秘钥", "秘鑰"),
        *("金鑰", "私钥", "私鑰", "令牌", "權杖", "授权码", "授權碼"),
    ),
    # The label's name: password, passwd, passphrase, pass, pwd, pw, secret, token, credential, any …key.
    "password-assignment": ("pass", "pw", "secret", "token", "key", "credential"),
    "email": ("@",),
}
# Kinds that are runs of digits, by the ASCII digits they hold at least: a resident id 17 and its
# check character, an SSN 9, a card 13 to 19, a phone number 9 with its country code (10 in the
# US, 11 in China).
_MIN_DIGITS: dict[str, int] = {"cn-id-number": 17, "us-ssn": 9, CARD_KIND: 13, "phone": 9}
_DIGIT_BYTES = b"0123456789"
# A resident id, an SSN and a card number are written as one run of digits, joined at most by single
# spaces or dashes (a card's groups, an SSN's dashes): their digits are counted in the text's longest
# such run. A phone number may hold dots and brackets too: its digits are counted in the whole text.
_IN_ONE_RUN = frozenset({"cn-id-number", "us-ssn", CARD_KIND})
_RUN_DIGITS = min(_MIN_DIGITS[kind] for kind in _IN_ONE_RUN)
_JOINED_DIGITS = _rx(r"\d+(?:[ -]\d+)*")


# Each trigger word, and the kinds whose patterns it lets run.
_WORD_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    (word, tuple(kind for kind, words in _TRIGGERS.items() if word in words))
    for word in dict.fromkeys(word for words in _TRIGGERS.values() for word in words)
)


class _Screen:
    """What the screen reads of a text once: the kinds whose words it holds (case folded) or enough digits for."""

    __slots__ = ("kinds",)

    def __init__(self, text: str) -> None:
        folded = _folded(text)
        self.kinds = {kind for word, kinds in _WORD_KINDS if word in folded for kind in kinds}
        data = text.encode("utf-8", "surrogatepass")  # an ASCII digit is one byte, never part of another character
        digits = len(data) - len(data.translate(None, _DIGIT_BYTES))
        run = 0
        if digits >= _RUN_DIGITS:
            run = max(len(g) - g.count(" ") - g.count("-") for g in _JOINED_DIGITS.findall(text))
        self.kinds.update(
            kind for kind, least in _MIN_DIGITS.items() if (run if kind in _IN_ONE_RUN else digits) >= least
        )

    def may_find(self, kind: str) -> bool:
        """False when no pattern of ``kind`` can match the text."""
        return kind in self.kinds

    def may_find_any(self, contact: bool) -> bool:
        return not self.kinds.isdisjoint(_ALL_KINDS if contact else _DEFAULT_KINDS)


_ALL_KINDS = tuple(dict.fromkeys([p.kind for p in _PATTERNS + _CONTACT_PATTERNS] + [CARD_KIND]))
_DEFAULT_KINDS = tuple(k for k in _ALL_KINDS if k not in CONTACT_KINDS)


def may_hold(text: str, *, contact: bool = False) -> bool:
    """False when :func:`find` surely finds nothing in ``text``: none of the prefixes and labels, too few digits.

    A few substring tests, much cheaper than the patterns; True says nothing.
    """
    return _Screen(text).may_find_any(contact)


def _folded(text: str) -> str:
    # IGNORECASE also matches a dotless ı to i, which case folding keeps apart.
    return text.casefold().replace("ı", "i")


@functools.cache
def _batch_screen(contact: bool) -> tuple[tuple[str, ...], int | None]:
    """For may_hold_many: every trigger word of the kinds, and the fewest digits in the whole text any of them
    needs (None when all are counted in runs)."""
    kinds = _ALL_KINDS if contact else _DEFAULT_KINDS
    words = tuple(dict.fromkeys(word for kind in kinds if kind in _TRIGGERS for word in _TRIGGERS[kind]))
    anywhere = [_MIN_DIGITS[kind] for kind in kinds if kind in _MIN_DIGITS and kind not in _IN_ONE_RUN]
    return words, min(anywhere, default=None)


def may_hold_many(texts: Sequence[str], *, contact: bool = False) -> npt.NDArray[np.bool_]:
    """:func:`may_hold` of each text, as a boolean array: the same verdicts, at a fraction of the cost.

    The texts are folded and joined, every trigger word is searched for in the whole, and the
    words found and the ASCII digits are counted back to the texts they fall in.
    """
    import numpy as np

    out = np.zeros(len(texts), dtype=bool)
    first = size = 0
    for i, text in enumerate(texts):
        if size and size + len(text) > _BATCH_CHARS:
            out[first:i] = _screen_joined(texts[first:i], contact)
            first, size = i, 0
        size += len(text) + 1
    if first < len(texts):
        out[first:] = _screen_joined(texts[first:], contact)
    return out


# How much text may_hold_many joins at once: its copies and arrays take about a dozen bytes a character.
_BATCH_CHARS = 1 << 20


def _screen_joined(texts: Sequence[str], contact: bool) -> npt.NDArray[np.bool_]:
    import numpy as np

    words, min_digits = _batch_screen(contact)
    n = len(texts)
    # A separator between texts, so no trigger word (none holds it) can start in one text and end in
    # the next; a text holding it is harmless, since texts are told apart by their offsets.
    joined = "\x00".join(texts)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, texts), dtype=np.int64, count=n)[:-1] + 1, out=starts[1:])
    folded = _folded(joined)
    # Case folding maps each character to one or more, whatever surrounds it: when it expanded
    # none, each folded text starts where the text did; otherwise count its folded length.
    fstarts = starts
    if len(folded) != len(joined):
        fstarts = np.zeros(n, dtype=np.int64)
        lengths = np.fromiter((len(t.casefold()) for t in texts), dtype=np.int64, count=n)
        np.cumsum(lengths[:-1] + 1, out=fstarts[1:])
    # Each word is looked for as a substring, as _Screen does, with the string search of str.find
    # (much faster than one expression of all the words); once a text holds it, the search goes
    # on from the next text.
    ends = [*fstarts[1:].tolist(), len(folded) + 1]
    held = [False] * n
    for word in words:
        at = folded.find(word)
        while at >= 0:
            i = bisect_right(ends, at)
            held[i] = True
            at = folded.find(word, ends[i])
    out = np.array(held, dtype=bool)
    # ASCII digits: per text (for a phone number), and in runs joined by single spaces or
    # dashes (the separator between texts ends a run), as _Screen counts them.
    codes = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    digit = (codes >= 0x30) & (codes <= 0x39)
    counted = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(digit, out=counted[1:])
    if min_digits is not None:
        text_ends = np.append(starts[1:] - 1, len(codes))
        out |= counted[text_ends] - counted[starts] >= min_digits
    joins = np.zeros(len(codes) + 2, dtype=bool)
    joins[1:-1] = digit
    joins[2:-2] |= ((codes[1:-1] == 0x20) | (codes[1:-1] == 0x2D)) & digit[:-2] & digit[2:]
    edges = np.flatnonzero(joins[1:] != joins[:-1])  # where each run starts, then where it ends
    run_starts, run_ends = edges[::2], edges[1::2]
    long = run_starts[counted[run_ends] - counted[run_starts] >= _RUN_DIGITS]
    out[np.searchsorted(starts, long, side="right") - 1] = True
    return out


def find(text: str, *, contact: bool = False) -> list[Finding]:
    """Secrets and personal data in ``text``: non-overlapping, sorted by start; markers are skipped.

    ``contact=True`` also finds e-mail addresses and phone numbers (:data:`CONTACT_KINDS`).
    """
    screen = _Screen(text)
    if not screen.may_find_any(contact):
        return []
    findings = _find_once(text, contact, screen)
    # A scan reads each pattern's matches left to right without overlap, so a match that
    # swallowed a neighbour and lost to a stronger finding can hide that neighbour until
    # the stronger one is a marker. Scan the redacted text again until nothing new turns
    # up; anything new lies in text copied verbatim from the input, so it maps back.
    while findings:
        redacted, segments = _replace(text, findings)
        more = _find_once(redacted, contact)
        if not more:
            break
        out_starts = [o for o, _ in segments]
        for f in more:
            i = bisect_left(out_starts, f.start + 1) - 1
            shift = segments[i][1] - segments[i][0]
            findings.append(Finding(f.kind, f.start + shift, f.end + shift, f.category))
        findings.sort(key=lambda f: f.start)
    return findings


def redact(text: str, *, contact: bool = False) -> tuple[str, list[Finding]]:
    """``text`` with every finding replaced by ``[REDACTED:<kind>]``, and the findings (spans in the input)."""
    findings = find(text, contact=contact)
    if not findings:
        return text, findings
    return _replace(text, findings)[0], findings


def redact_data(value: Any, *, contact: bool = False) -> tuple[Any, list[str]]:
    """Redact decoded JSON (metadata, event payloads): every string, and whole strings under secret names.

    Returns the new value and the kinds found. ``{"token": "abc"}`` has no label inside the
    string itself, so a string stored under a secret-holding key is redacted whole.
    """
    kinds: list[str] = []

    def walk(node: Any, key: str | None) -> Any:
        if isinstance(node, str):
            if key is not None and secret_name(key) and not is_placeholder(MARKER_RE.sub("", node)):
                kinds.append("password-assignment")
                return marker("password-assignment")
            text, found = redact(node, contact=contact)
            kinds.extend(f.kind for f in found)
            return text
        if isinstance(node, dict):
            return {k: walk(v, str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, None) for v in node]
        return node

    return walk(value, None), kinds
