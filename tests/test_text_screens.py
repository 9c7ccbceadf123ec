"""The cheap screens in front of the secret patterns and the change markers: they only skip text
that the full expressions would find nothing in."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_cli.lang import redact
from engram_cli.lang.redact.contact import _CONTACT_PATTERNS
from engram_cli.lang.redact.patterns import _PATTERNS
from engram_cli.memory import repair, similarity
from engram_cli.memory.audit.secrets import _may_hold as column_may_hold
from engram_cli.memory.audit.secrets import _may_hold_column as column_may_hold_all
from tests.test_redact import FRAGMENTS

TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=8).map("".join)


def test_every_pattern_has_a_screen() -> None:
    kinds = {p.kind for p in _PATTERNS + _CONTACT_PATTERNS} | {redact.CARD_KIND}
    assert kinds == set(redact._TRIGGERS) | set(redact._MIN_DIGITS)


@pytest.mark.parametrize("text", FRAGMENTS)
def test_every_known_secret_passes_the_screen(text: str) -> None:
    for contact in (False, True):
        if redact._find_once(text, contact):
            assert redact.may_hold(text, contact=contact)


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_the_screen_changes_no_finding(text: str) -> None:
    for contact in (False, True):
        assert redact.find(text, contact=contact) == _unscreened(text, contact)


def _unscreened(text: str, contact: bool) -> list[Any]:
    screen = redact._Screen
    original = screen.may_find, screen.may_find_any
    screen.may_find = lambda self, kind: True  # type: ignore[method-assign]
    screen.may_find_any = lambda self, contact: True  # type: ignore[method-assign]
    try:
        return redact.find(text, contact=contact)
    finally:
        screen.may_find, screen.may_find_any = original  # type: ignore[method-assign]


def test_text_without_labels_prefixes_or_nine_digits_is_skipped() -> None:
    assert not redact.may_hold("Fixed the flaky upload test; 12 of 40 runs failed")
    assert redact.may_hold("ssn 123 45 6789")  # nine digits: maybe an SSN
    # Digits scattered over the text are no resident id, SSN or card (those are one run of digits
    # joined by single spaces or dashes), but they can still be a phone number written with dots.
    scattered = "on 2024-03-15 at 10:30, 3 of 12 runs"
    assert not redact.may_hold(scattered) and redact.may_hold(scattered, contact=True)
    assert not redact.may_hold("1234  56789") and redact.may_hold("1234 5678-9")
    assert redact.may_hold("mail bob@corp.io", contact=True) and not redact.may_hold("mail bob@corp.io")
    assert redact.may_hold("Authorization: BEARER abc")


def test_every_english_change_marker_holds_a_screened_word() -> None:
    for marker in similarity.CHANGE_MARKERS_EN:
        assert any(word in marker for word in similarity._CHANGE_WORDS), marker


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.sampled_from([*similarity.CHANGE_MARKERS_EN, *similarity.CHANGE_MARKERS_ZH, "ı", "ſ", "İ", "K", " "]),
            st.text(max_size=12),
        ),
        max_size=6,
    ).map("".join)
)
def test_the_change_marker_screen_changes_no_answer(text: str) -> None:
    match = similarity._CHANGE.search(text)
    assert similarity.change_marker(text) == (match.group(0) if match else None)


def test_case_variants_of_a_marker_are_still_found() -> None:
    assert similarity.change_marker("FROM NOW ON use pnpm") == "FROM NOW ON"
    assert similarity.change_marker("ſtop uſing yarn") == "ſtop uſing"
    assert similarity.change_marker("swıtch to uv") is not None
    assert re.compile("(?i)i").fullmatch("ı")  # why the screen folds a dotless ı to i


def test_chinese_negation_screen_keeps_negations() -> None:
    assert similarity.negates("不要用 npm") and similarity.negates("没有测试")
    assert not similarity.negates("用 pnpm 安装依赖") and not similarity.negates("不同的端口")


JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.integers(), TEXTS),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(["token", "api_key", "pw", "note", "密码"]), st.text(max_size=8)),
                        inner, max_size=4),
    ),
    max_leaves=8,
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(JSON_VALUES, st.booleans(), st.booleans())
def test_a_column_the_audit_skips_holds_nothing_to_redact(value: Any, ascii_only: bool, contact: bool) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only)
    for column_kind, text in ((repair.JSON, raw), (repair.TEXT, raw)):
        if not column_may_hold(text, column_kind, contact):
            assert repair.redact_value(text, column_kind, contact=contact)[1] == []


def test_a_secret_name_in_json_is_not_skipped() -> None:
    raw = json.dumps({"api_key": "plain words here"})
    assert repair.redact_value(raw, repair.JSON)[1] == ["password-assignment"]
    assert column_may_hold(raw, repair.JSON, False)
    assert column_may_hold(json.dumps({"密码": "x"}), repair.JSON, False)  # escaped: decoded and scanned


# Pieces that test the batch screen where it could differ from the one-text screen: characters whose
# case folding grows or meets a trigger (ß, ﬁ, ſ, the Kelvin sign, dotless ı, İ), the separator it
# joins texts with, Chinese labels, and runs of digits on both sides of the thresholds.
EDGES = [
    *("ß", "ﬁ", "ſ", "\u212a", "ı", "İ", "\x00", "\x00\x00", "PASS", "pAsS", "Tok", "en", "sk", "-", "xH"),
    *("密码", "口令是", "令牌：", "中文的说明", "1", "12345678", "123456789", "1234567890123", "12345678901234567"),
    *("123-45-6789", "4111 1111 1111 1111", "1234  5678", "11010519491231002X", "2024-03-15 10:30", " ", "-"),
]
BATCH_TEXTS = st.lists(st.one_of(st.sampled_from(FRAGMENTS + EDGES), st.text(max_size=20)), max_size=6).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(BATCH_TEXTS, max_size=12), st.booleans())
def test_the_batch_screen_gives_each_text_its_own_verdict(texts: list[str], contact: bool) -> None:
    verdicts = redact.may_hold_many(texts, contact=contact)
    assert verdicts.shape == (len(texts),)
    assert verdicts.tolist() == [redact.may_hold(t, contact=contact) for t in texts]
    for text, verdict in zip(texts, verdicts.tolist(), strict=True):
        if not verdict:
            assert _unscreened(text, contact) == []


def test_the_batch_screen_reads_texts_split_across_its_joins(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = ["plain words", "", "pass", "ß" * 30 + "token", "12345678", "x" * 50, "1234 5678 9", "\x00key", "密码"]
    expected = [redact.may_hold(t) for t in texts]
    assert expected == [False, False, True, True, False, False, True, True, True]
    for size in (1, 10, 40, 1000):
        monkeypatch.setattr(redact, "_BATCH_CHARS", size)
        assert redact.may_hold_many(texts).tolist() == expected, size
    assert redact.may_hold_many([]).tolist() == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.just(""), st.integers(), JSON_VALUES.map(json.dumps)), max_size=10), st.booleans()
)
def test_a_column_screened_in_one_batch_gets_each_value_s_verdict(values: list[Any], contact: bool) -> None:
    for column_kind in (repair.JSON, repair.TEXT):
        assert column_may_hold_all(values, column_kind, contact) == [
            column_may_hold(v, column_kind, contact) for v in values
        ]
