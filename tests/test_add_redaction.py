"""`engram add` stores no secret unless told to: text, summary, tags, metadata and source are redacted first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
AWS = "AKIA" + "Z7QX3PLM9RTV2WYB"


def test_add_redacts_and_says_so(cli: Any, rows: Any, db_path: Path) -> None:
    result = cli("add", f"Deploy with the token {TOKEN} from the vault", "--meta", f"note=password={AWS}x1")
    assert "redacted 2 secret(s)" in result.stderr and "github-token" in result.stderr
    assert "--keep-secrets" in result.stderr
    [(content, metadata)] = rows("SELECT content, metadata FROM memories")
    assert content == "Deploy with the token [REDACTED:github-token] from the vault"
    assert TOKEN not in metadata and AWS not in metadata
    wal = Path(str(db_path) + "-wal")
    raw = db_path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    assert TOKEN.encode() not in raw and AWS.encode() not in raw


def test_add_json_lists_the_kinds(cli: Any) -> None:
    data = json.loads(cli("add", f"aws key id {AWS} for the backup job", "--json").stdout)
    assert data["redacted"] == ["aws-access-key-id"]
    assert AWS not in data["content"]


def test_every_field_is_redacted(engram: Any, rows: Any) -> None:
    result = engram.add(
        "The release checklist lives in the wiki",
        summary=f"token {TOKEN}",
        tags=[f"k-{AWS}"],
        session=f"sess-{TOKEN}",
        metadata={"api_key": "plain-looking-value", "nested": [f"Bearer {TOKEN}"]},
        source={"kind": "file", "ref": f"https://deploy:{TOKEN}@example.com/x", "metadata": {"token": "s3cr3tvalue"}},
    )
    assert len(result.redacted) >= 5
    dump = json.dumps(rows("SELECT * FROM memories") + rows("SELECT * FROM sources") + rows("SELECT * FROM tags"))
    for secret in (TOKEN, AWS, "plain-looking-value", "s3cr3tvalue"):
        assert secret.lower() not in dump.lower()


def test_keep_secrets_stores_the_text_as_given(cli: Any, rows: Any) -> None:
    result = cli("add", f"Deploy with the token {TOKEN}", "--keep-secrets")
    assert "redacted" not in result.stderr
    assert rows("SELECT content FROM memories") == [(f"Deploy with the token {TOKEN}",)]


def test_a_text_without_secrets_is_untouched(cli: Any, rows: Any) -> None:
    text = "Commit 3f2a9c1e7b41 fixed the build; the cache key is sha256 of the lockfile"
    result = cli("add", text)
    assert "redacted" not in result.stderr
    assert rows("SELECT content FROM memories") == [(text,)]


def test_contact_details_are_redacted_only_when_configured(cli: Any, rows: Any) -> None:
    text = "Escalations go to oncall@corp-mail.io or +49 30 1234 5678"
    cli("add", text)
    cli("config", "set", "redact.contact_details", "true")
    cli("add", "Billing questions go to billing@corp-mail.io", "-n", "other")
    contents = [r[0] for r in rows("SELECT content FROM memories ORDER BY pk")]
    assert contents[0] == text
    assert contents[1] == "Billing questions go to [REDACTED:email]"


def test_lone_surrogates_are_repaired_in_every_field(engram: Any, rows: Any) -> None:
    engram.add("broken \ud800 text", summary="sum \udfff", tags=["t\ud800"], metadata={"k\ud800": "v\udc00"})
    [(content, summary, metadata)] = rows("SELECT content, summary, metadata FROM memories")
    assert content == "broken \ufffd text" and summary == "sum \ufffd"
    assert json.loads(metadata) == {"k\ufffd": "v\ufffd"}
    assert rows("SELECT tag FROM tags") == [("t\ufffd",)]
