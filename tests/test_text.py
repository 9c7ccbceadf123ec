"""Keyword analysis: Chinese bigrams, identifiers, hashing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engram_cli import text


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
    assert text.fts_query('say "hi"') == '"say" OR "hi"'
    assert text.fts_query("   ") is None


def test_content_hash_ignores_case_and_whitespace_only() -> None:
    assert text.content_hash("Use  pnpm\n") == text.content_hash("use pnpm")
    assert text.content_hash("use pnpm") != text.content_hash("use npm")
    assert text.content_hash("use pnpm.") != text.content_hash("use pnpm")


@given(st.text())
def test_analysis_never_fails(value: str) -> None:
    terms = text.analyze(value)
    assert all(t and " " not in t for t in terms)
    text.fts_query(value)
    assert text.estimate_tokens(value) >= 0
