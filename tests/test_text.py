"""Keyword analysis: Chinese bigrams, identifiers, hashing."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from engram_cli.lang import text
from engram_cli.store.keywords import match_expression


def test_chinese_runs_become_bigrams() -> None:
    assert text.analyze("数据库迁移") == ["数据", "据库", "库迁", "迁移"]
    assert text.analyze("库") == ["库"]


def test_two_character_query_matches_a_longer_run() -> None:
    assert set(text.query_terms("迁移")) <= set(text.analyze("我们明天做数据库迁移吧"))


def test_identifiers_are_kept_whole_and_split() -> None:
    terms = text.analyze("call parseHttpRequest in src/engram/db.py with max_retry_count")
    for term in ("parsehttprequest", "parse", "http", "request", "src", "engram", "db", "py",
                 "max_retry_count", "max", "retry", "count"):  # fmt: skip
        assert term in terms


def test_mixed_script_text() -> None:
    terms = text.analyze("用 pnpm 安装依赖")
    assert "pnpm" in terms and "安装" in terms and "依赖" in terms


def test_stop_words_leave_the_query_unless_nothing_else_remains() -> None:
    assert text.query_terms("how do I send the weekly report") == ["send", "weekly", "report"]
    assert text.query_terms("the") == ["the"]


def test_fts_query_quotes_terms() -> None:
    assert match_expression(text.query_terms('say "hi"')) == '"say" OR "hi"'
    assert match_expression(text.query_terms("   ")) is None


def test_content_hash_ignores_case_and_whitespace_only() -> None:
    assert text.content_hash("Use  pnpm\n") == text.content_hash("use pnpm")
    assert text.content_hash("use pnpm") != text.content_hash("use npm")
    assert text.content_hash("use pnpm.") != text.content_hash("use pnpm")


@given(st.text())
def test_analysis_never_fails(value: str) -> None:
    terms = text.analyze(value)
    assert all(t and " " not in t for t in terms)
    match_expression(text.query_terms(value))
    assert text.estimate_tokens(value) >= 0


# The identifier pattern before it was guarded against restarts inside a run (quadratic on one long
# word); the guarded one must find exactly the same identifiers.
UNGUARDED_IDENT = re.compile(
    r"[A-Za-z0-9]+(?:[_\-./:][A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"
)


@given(st.text(alphabet="aAbBzZ019_-./: '中", max_size=40))
def test_identifiers_are_the_ones_the_unguarded_pattern_finds(value: str) -> None:
    assert [m.span() for m in text._ident().finditer(value)] == [m.span() for m in UNGUARDED_IDENT.finditer(value)]


def _two_pass_terms(chunk: str) -> list[str]:
    """The terms of a chunk as the identifiers' terms, then the words of the chunk with each identifier a space."""
    out: list[str] = []
    for ident in text._ident().finditer(chunk):
        out.append(re.sub(r"[_\-./:]+", "_", ident.group()).lower())
        out.extend(p.lower() for p in text._identifier_parts(ident.group()))
    out.extend(w.lower() for w in text._WORD.findall(text._ident().sub(" ", chunk)))
    return out


@given(st.one_of(st.text(alphabet="aAbBzZ019_-./: '’İé中", max_size=60), st.text(max_size=60)))
def test_the_words_between_identifiers_are_read_in_one_pass(value: str) -> None:
    assert text._latin_terms(value) == _two_pass_terms(value)


def test_identifiers_inside_a_run_of_letters_and_digits_are_still_found() -> None:
    # "BcD" starts after the A of "ABcD" and "abC" after the 1 of "1abC": the guards skip only
    # restarts that cannot match, never these. Identifiers come first, then the other words.
    assert text.analyze("see ABcD and 1abC") == ["bcd", "bc", "d", "abc", "ab", "c", "see", "a", "and", "1"]


def test_a_term_longer_than_the_limit_stays_out_of_the_keyword_index() -> None:
    assert text.MAX_TERM_CHARS == 64
    sha256 = "ab" * 32
    assert text.index_text(f"commit {sha256}") == f"commit {sha256}"
    assert text.index_text("x" * 65) == "" and text.query_terms("x" * 65) == []
    assert match_expression(text.query_terms("x" * 100_000)) is None
    # A long path is not searched for whole, but its parts still are.
    path = "/usr/local/lib/python3.12/site-packages/engram_cli/memory/similarity_guard.py"
    terms = text.keyword_terms(path)
    assert all(len(t) <= 64 for t in terms)
    assert {"site", "packages", "engram", "cli", "similarity", "guard", "py"} <= set(terms)
    # Everything else reads the long term as a word: two different blobs are different texts.
    assert text.analyze("token " + "a" * 80) != text.analyze("token " + "b" * 80)


def test_script_counts_ascii_letters_against_cjk_characters() -> None:
    assert text.script_of("用 pnp") == "cjk"  # one CJK character weighs three letters
    assert text.script_of("用 pnpm") == "latin"
    assert text.script_of("ÉÉÉÉ 用") == "cjk"  # only ASCII letters count as Latin
    assert text.script_of("12345") == "latin"
