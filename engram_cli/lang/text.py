"""Text handling shared by the engine: normalisation, hashing and keyword analysis.

FTS5's own tokenizers cannot find two-character Chinese words (unicode61 sees a whole
run of Han characters as one token; trigram needs three characters), so text is
analysed here before it reaches the keyword index: runs of CJK characters become
overlapping character bigrams, code identifiers are split into their words as well as
kept whole, and the result is handed to FTS5 as space-separated terms. Queries go
through the same analysis, so both sides agree.
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from typing import Any

# Han ideographs (with extension A and compatibility), kana, hangul.
_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?|[A-Za-z0-9_]+", re.UNICODE)


# Code identifiers: joined by _ - . / : (src/db.py, max_retry), camelCase, PascalCase. Every alternative
# must cost time in proportion to what it reads, or one long run of letters becomes quadratic: a scan
# that failed at the start of a run of letters fails at every later letter of that run too, so the
# lookbehinds skip those restarts, and the possessive quantifiers never give back what they matched.
# The matches are the ones the unguarded pattern finds (tests/test_text.py checks it against that pattern).
# Compiled on first use, like the classes below: it takes milliseconds.
@functools.cache
def _ident() -> re.Pattern[str]:
    return re.compile(
        r"(?<![A-Za-z0-9])[A-Za-z0-9]++(?:[_\-./:][A-Za-z0-9]++)+"
        r"|(?<![a-z])[a-z]++[A-Z][A-Za-z0-9]*+"
        r"|[A-Z][a-z0-9]++[A-Z][A-Za-z0-9]*+"
    )


_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_JOINERS = re.compile(r"[_\-./:]+")
_SPACE = re.compile(r"\s+")


# The character classes with wide ranges take milliseconds each to compile, which every command
# would pay on import; they are compiled the first time text needs them.
@functools.cache
def _cjk_run() -> re.Pattern[str]:
    return re.compile(f"[{_CJK}]+")


# A UTF-16 surrogate on its own: JSON may escape one (`"\ud800"`) and a file name that is not UTF-8
# decodes into them, but UTF-8 cannot encode them, so SQLite and every encoder refuse the text.
@functools.cache
def _surrogate() -> re.Pattern[str]:
    return re.compile("[\ud800-\udfff]")


# A longer term is a blob (base64, a key, a minified line, a long path joined into one term), not a word
# anyone types into a search, so the keyword index and queries leave it out; the parts of a long
# identifier or path still count. 64 keeps a SHA-256 in hex and any identifier people write by hand.
MAX_TERM_CHARS = 64

# Function words that only add noise to an OR query. Kept short on purpose: BM25's
# idf already discounts common words; these are the ones that carry no topic at all.
STOPWORDS = frozenset(
    [
        "a", "an", "the", "and", "or", "but", "if", "then", "of", "to", "in", "on", "at", "by", "for", "with",
        "from", "as", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "doing", "have",
        "has", "had", "i", "me", "my", "we", "our", "you", "your", "he", "she", "it", "its", "they", "them",
        "their", "this", "that", "these", "those", "what", "which", "who", "whom", "how", "when", "where",
        "why", "can", "could", "should", "would", "will", "shall", "may", "might", "must", "not", "no", "so",
        "than", "too", "very", "just", "about", "into", "over", "under", "again", "there", "here", "all",
        "any", "both", "each", "few", "more", "most", "other", "some", "such", "only", "own", "same", "s",
        "t", "don",
        "的", "了", "是", "在", "和", "与", "或", "我", "你", "他", "她", "它", "们", "这", "那", "吗", "呢",
        "吧", "啊", "也", "都", "就", "把", "被", "给", "对", "从", "到", "怎么", "什么", "如何",
        "哪", "哪里", "为什么",
    ]
)  # fmt: skip


def clean(text: str) -> str:
    """``text`` safe to store and encode: each lone surrogate becomes U+FFFD; unchanged (and quick) when none."""
    if text.isascii() or _surrogate().search(text) is None:
        return text
    return _surrogate().sub("\ufffd", text)


def clean_data(value: Any) -> Any:
    """Decoded JSON (dicts, lists, strings at any depth, keys too) with every string made safe by :func:`clean`."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: clean_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_data(v) for v in value]
    return value


def normalize(text: str) -> str:
    """Canonical form of a memory's text: NFC, trimmed, inner whitespace kept."""
    return unicodedata.normalize("NFC", text).strip()


def content_hash(text: str) -> str:
    """Hash that identifies exact duplicates: case and whitespace differences do not count."""
    canonical = _SPACE.sub(" ", unicodedata.normalize("NFKC", text)).strip().casefold()
    import hashlib  # its OpenSSL start-up is paid by the commands that hash text, not by every import

    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _identifier_parts(token: str) -> list[str]:
    parts: list[str] = []
    for piece in _JOINERS.split(token):
        if not piece:
            continue
        sub = _CAMEL.findall(piece)
        parts.extend(sub if len(sub) > 1 else [piece])
    return parts


def analyze(text: str) -> list[str]:
    """The terms of a text, lower-cased, order and repeats kept (BM25 counts them).

    Time is linear in the length of ``text``, whatever it holds. The keyword index and
    queries use :func:`keyword_terms`, which leaves out terms too long to be searched for.
    """
    text = unicodedata.normalize("NFKC", text)
    terms: list[str] = []
    pos = 0
    for match in _cjk_run().finditer(text):
        terms.extend(_latin_terms(text[pos : match.start()]))
        terms.extend(_cjk_terms(match.group()))
        pos = match.end()
    terms.extend(_latin_terms(text[pos:]))
    return terms


def _latin_terms(chunk: str) -> list[str]:
    out: list[str] = []
    # The text between identifiers, read for words as if each identifier were a space.
    rest: list[str] = []
    pos = 0
    for ident in _ident().finditer(chunk):
        token = ident.group()
        # The whole identifier (joined) and its words both become terms.
        out.append(_JOINERS.sub("_", token).lower())
        out.extend(map(str.lower, _identifier_parts(token)))
        rest.append(chunk[pos : ident.start()])
        pos = ident.end()
    rest.append(chunk[pos:])
    out.extend(map(str.lower, _WORD.findall(" ".join(rest))))
    return out


def keyword_terms(text: str) -> list[str]:
    """The terms of ``text`` that go into the keyword index: those of at most MAX_TERM_CHARS characters."""
    return [t for t in analyze(text) if len(t) <= MAX_TERM_CHARS]


def index_text(*parts: str) -> str:
    """The string stored in the FTS5 column for a memory."""
    return " ".join(t for part in parts if part for t in keyword_terms(part))


def query_terms(text: str) -> list[str]:
    """Distinct terms of a query, stop words dropped unless nothing else is left."""
    seen: dict[str, None] = {}
    for term in keyword_terms(text):
        seen.setdefault(term, None)
    terms = list(seen)
    meaningful = [t for t in terms if t not in STOPWORDS]
    return meaningful or terms


SCRIPTS = ("latin", "cjk")


def script_of(text: str) -> str:
    """``cjk`` when CJK characters carry the text (one counts as much as three Latin letters), else ``latin``.

    Embedding models place texts of one script closer together than texts across
    scripts, so similarity thresholds are calibrated per pair of scripts.
    """
    cjk = _cjk_chars(text)
    if not cjk:
        return "latin"
    # In UTF-8 every byte of a non-ASCII character is >= 0x80, so the ASCII letters are exactly
    # the bytes deleted here: one pass in C instead of one per letter.
    data = text.encode("utf-8", "surrogatepass")
    letters = len(data) - len(data.translate(None, _ASCII_LETTERS))
    return "cjk" if cjk * 3 >= letters else "latin"


_ASCII_LETTERS = string.ascii_letters.encode("ascii")


def _cjk_chars(text: str) -> int:
    return 0 if text.isascii() else sum(map(len, _cjk_run().findall(text)))


def estimate_tokens(text: str) -> int:
    """Rough token count for prompt budgets: a CJK character ~1 token, ~4 other characters a token."""
    cjk = _cjk_chars(text)
    other = len(text) - cjk
    return cjk + (other + 3) // 4
