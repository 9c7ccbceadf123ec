"""redact: secrets and personal data are found by their real formats, and only those are replaced."""

from __future__ import annotations

from datetime import date
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram_cli.redact import (
    KINDS,
    MARKER_RE,
    Finding,
    card_ok,
    cn_id_ok,
    find,
    is_placeholder,
    luhn_ok,
    redact,
    redact_data,
    secret_name,
)

# Fake credentials in the published formats. None of them was ever issued.
AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
GITHUB = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY2zA4"
GITHUB_PAT = "github_pat_11ABCDEFG0aB3dE5fG7hJ9kL1mN3pQ5r_S7tU9vW1xY2zA4bC6dE8fG0hJ2kL4mN6pQ8rS0tU2vW4xY6zA8bC0dE2fG4h"
GITLAB = "glpat-Xy7Zq2Wv9Tr4Sp6Nm8Lk"
OPENAI = "sk-" + "T3BlbkFJ" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY2zA4bC6d"
OPENAI_PROJECT = "sk-proj-" + "Qw3-Er5_Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5Op7"
ANTHROPIC = "sk-ant-api03-" + "Zx8Cv6Bn4Mq2Wl0Ek8Rj6Th4Yg2Uf0Id8Os6Pa4Sd2Fh0Gk8Lz6Xc4Vb2Nm0Qw8Er6Ty4Ui2Op0As8D-AA"
GOOGLE = "AIzaSyD3x9Kq2Lm8Np4Rs6Tu1Vw5Xy7Za0Bc3De"
SLACK = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkFkYSJ9"
    ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
)
PRIVATE_KEY = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\n"
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACB8Zm9vYmFyYmF6cXV4cXV1eHh5enp5enp5enp5enp5enp5enp5AAAAkA==\n"
    "-----END OPENSSH PRIVATE KEY-----"
)
CN_ID = "11010519491231002X"
VISA = "4111 1111 1111 1111"

POSITIVE = [
    ("aws-access-key-id", f"the deploy user key is {AWS_ID} (rotated in May)", AWS_ID),
    ("aws-access-key-id", "temporary creds ASIAY34FZKBOKMUTVV7A expire hourly", "ASIAY34FZKBOKMUTVV7A"),
    ("aws-secret-key", f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    ("aws-secret-key", f'"SecretAccessKey": "{AWS_SECRET}"', AWS_SECRET),
    ("github-token", f"export GH={GITHUB}", GITHUB),
    ("github-token", f"fine-grained: {GITHUB_PAT}", GITHUB_PAT),
    ("github-token", "app token ghs_" + "Ab1" * 12 + " for the bot", "ghs_" + "Ab1" * 12),
    ("gitlab-token", f"CI uses {GITLAB} to push tags", GITLAB),
    ("openai-key", f"OPENAI key {OPENAI}", OPENAI),
    ("openai-key", f"project key {OPENAI_PROJECT}.", OPENAI_PROJECT),
    ("anthropic-key", f"ANTHROPIC_API_KEY is {ANTHROPIC}", ANTHROPIC),
    ("google-api-key", f"maps key {GOOGLE} restricted to our domain", GOOGLE),
    ("slack-token", f"the bot posts with {SLACK}", SLACK),
    ("jwt", f"session cookie {JWT}", JWT),
    ("private-key", f"deploy key:\n{PRIVATE_KEY}\nkeep it safe", PRIVATE_KEY),
    ("url-password", "DATABASE_URL=postgres://app:Tr0ub4dor@db.internal:5432/app", "Tr0ub4dor"),
    ("url-password", "clone https://bot:p@ss:w0rd@git.example.com/repo.git", "p@ss:w0rd"),
    ("url-password", "REDIS_URL=redis://:n0tguessable@cache:6379/0", "n0tguessable"),
    ("password-assignment", "mysql -u root password=hunter2", "hunter2"),
    ("password-assignment", "mysqldump --password=Sup3r.S3cret db > dump.sql", "Sup3r.S3cret"),
    ("password-assignment", "export GITHUB_TOKEN=abc123def456", "abc123def456"),
    ("password-assignment", "DB_PASSWORD = 'correct horse battery staple'", "correct horse battery staple"),
    ("password-assignment", '{"user": "ada", "password": "s3cr3t!"}', "s3cr3t!"),
    ("password-assignment", "db:\n  passwd: Winter2026!\n  host: localhost", "Winter2026!"),
    ("password-assignment", "client_secret=abc123xyz&grant_type=client_credentials", "abc123xyz"),
    ("password-assignment", "set api_key: 'q8w7e6r5t4'", "q8w7e6r5t4"),
    ("bearer-token", "curl -H 'Authorization: Bearer abc123.def456-ghi789' https://api", "abc123.def456-ghi789"),
    ("card-number", f"card {VISA}, exp 12/29", VISA),
    ("card-number", "amex 3782-822463-10005 on file", "3782-822463-10005"),
    ("card-number", "paid with 5555555555554444.", "5555555555554444"),
    ("cn-id-number", f"身份证 {CN_ID}", CN_ID),
    ("us-ssn", "SSN 078-05-1121 on the W-2", "078-05-1121"),
]

NEGATIVE = [
    "md5 9e107d9d372bb6826bd81d3542a419d6, sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "fixed in commit 4f1c2d9e8b7a6c5d4e3f2a1b0c9d8e7f6a5b4c3d and 4f1c2d9",
    "request 3f2a9c1e-7d4b-4c1a-9e8f-0a1b2c3d4e5f failed",
    "order 1234567890123456 and 98765432109876543210",  # fail Luhn or too long
    "at 1732890000000 ms, 20261129154438, 2026-11-29T15:44:38.000000Z",
    "upgrade to 2.13.0, then 10.0.19045.3693",
    "password= is empty, password=*** is masked, password=<password> is a template",
    'password=${PASSWORD} and pwd=$DB_PASS and password: null and "password": ""',
    "Keep the token secret: never share it. Token: we rotate them weekly.",
    "the secret to good tests is isolation; tokens are counted per request",
    "already clean: password=[REDACTED:password-assignment] and [REDACTED:github-token]",
    "PWD=/home/ada/src and max_tokens=512 and tokenizer=unigram",
    "if password == expected: return True",
    "pip install sk-learn-pipeline-helpers",
    "the bearer of bad news arrived on time",
    "SSNs 000-12-3456, 666-12-3456, 912-34-5678, 123-00-4567, 123-45-0000 are never issued",
    "ids 110105194912310021 (bad check digit) and 110105194902300021 (no Feb 30)",
    "phone +86 138 0013 8000, zip 94105",
    "see https://docs.example.com:8443/path?q=1 and ssh://git@github.com:22/org/repo",
]


@pytest.mark.parametrize(("kind", "text", "secret"), POSITIVE, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(POSITIVE)])
def test_each_format_is_found_and_only_its_value_replaced(kind: str, text: str, secret: str) -> None:
    (finding,) = find(text)
    assert finding.kind == kind
    assert text[finding.start : finding.end] == secret
    assert finding.category == ("personal" if kind in ("card-number", "cn-id-number", "us-ssn") else "secret")
    redacted, findings = redact(text)
    assert findings == [finding]
    assert secret not in redacted
    assert redacted == text[: finding.start] + f"[REDACTED:{kind}]" + text[finding.end :]


def test_every_kind_has_a_case() -> None:
    assert {kind for kind, _, _ in POSITIVE} == set(KINDS)


@pytest.mark.parametrize("text", NEGATIVE)
def test_harmless_text_is_left_alone(text: str) -> None:
    assert find(text) == []
    assert redact(text) == (text, [])


@pytest.mark.parametrize("text", [t for _, t, _ in POSITIVE])
def test_redaction_is_idempotent(text: str) -> None:
    once, _ = redact(text)
    assert redact(once) == (once, [])


def test_chinese_text_around_secrets() -> None:
    text = f"部署用的密钥是{GITHUB}，数据库密码 password=hunter2，卡号{VISA}。别外传。"
    redacted, findings = redact(text)
    assert [f.kind for f in findings] == ["github-token", "password-assignment", "card-number"]
    assert redacted == (
        "部署用的密钥是[REDACTED:github-token]，数据库密码 password=[REDACTED:password-assignment]，"
        "卡号[REDACTED:card-number]。别外传。"
    )


def test_several_findings_are_sorted_and_do_not_overlap() -> None:
    text = f"token={GITHUB} then Authorization: Bearer {JWT} and {AWS_ID}"
    findings = find(text)
    assert [f.kind for f in findings] == ["github-token", "jwt", "aws-access-key-id"]
    assert all(a.end <= b.start for a, b in pairwise(findings))


def test_a_value_that_runs_into_a_marker_is_cut_there() -> None:
    text = "password=hunter2[REDACTED:github-token]"
    assert find(text) == [Finding("password-assignment", 9, 16, "secret")]
    assert redact(redact(text)[0])[1] == []


def test_a_truncated_private_key_is_still_redacted() -> None:
    text = "key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7\nQ2hlY2s=\n"
    (finding,) = find(text)
    assert finding.kind == "private-key" and "MIIEow" in text[finding.start : finding.end]


def test_card_numbers_need_luhn_a_card_prefix_and_13_to_19_digits() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert card_ok("378282246310005") and card_ok("6011111111111117")
    assert not card_ok("4111111111111112")  # Luhn
    assert not card_ok("0000000000000000")  # one digit repeated
    assert not card_ok("1234567812345670")  # Luhn-valid, but no network starts with 1
    assert not card_ok("411111111111")  # 12 digits
    # A card followed by a year is found without the year.
    text = f"{VISA} 2029"
    (finding,) = find(text)
    assert text[finding.start : finding.end] == VISA


def test_cn_ids_need_a_real_birth_date_and_their_check_digit() -> None:
    assert cn_id_ok(CN_ID) and cn_id_ok(CN_ID.lower())
    assert not cn_id_ok("110105194912310021")
    assert not cn_id_ok("11010520991231002X", today=date(2026, 1, 1))  # born in the future


def test_placeholders_and_secret_names() -> None:
    for value in ("", "***", "xxxx", "<password>", "${DB_PASS}", "$DB_PASS", "%s", "{{ token }}", "null", "…"):
        assert is_placeholder(value), value
    assert not is_placeholder("hunter2")
    for name in ("password", "DB_PASSWORD", "client_secret", "x-api-key", "GITHUB_TOKEN", "pwd", "db.pass"):
        assert secret_name(name), name
    for name in ("tokens", "tokenizer", "secretary", "bypass", "keyboard", "compass"):
        assert not secret_name(name), name


def test_redact_data_walks_json_and_redacts_whole_values_under_secret_names() -> None:
    data = {
        "token": "abc",
        "nested": [{"note": f"uses {AWS_ID}"}, {"password": "***"}],
        "count": 3,
        "name": "ada",
    }
    redacted, kinds = redact_data(data)
    assert redacted == {
        "token": "[REDACTED:password-assignment]",
        "nested": [{"note": "uses [REDACTED:aws-access-key-id]"}, {"password": "***"}],
        "count": 3,
        "name": "ada",
    }
    assert sorted(kinds) == ["aws-access-key-id", "password-assignment"]
    assert redact_data(redacted) == (redacted, [])


FRAGMENTS = [t for _, t, _ in POSITIVE] + NEGATIVE + ["[REDACTED:jwt]", "password=", "://", "@", "-", " ", "\n", "密码"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=30)), max_size=8).map("".join))
def test_redact_never_raises_and_leaves_nothing_to_find(text: str) -> None:
    findings = find(text)
    assert all(0 <= f.start < f.end <= len(text) for f in findings)
    assert all(a.end <= b.start for a, b in pairwise(findings))
    redacted, _ = redact(text)
    assert find(redacted) == []
    assert MARKER_RE.sub("", redacted) == MARKER_RE.sub("", redact(redacted)[0])


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_never_crashes(text: str) -> None:
    redacted, _ = redact(text)
    assert find(redacted) == []


@pytest.mark.parametrize(
    "text",
    ["1 " * 50_000 + "x", "a" * 100_000, "password=" * 10_000, "https://a:" + "b" * 100_000, "eyJ" * 30_000,
     "-----BEGIN RSA PRIVATE KEY-----\n" * 3_000, "password: a\n" * 10_000],
    ids=["digit-groups", "letters", "labels", "url", "jwt-prefixes", "key-headers", "yaml"],
)  # fmt: skip
def test_long_hostile_input_is_scanned_in_linear_time(text: str) -> None:
    import time

    started = time.perf_counter()
    redact(text)
    assert time.perf_counter() - started < 5
