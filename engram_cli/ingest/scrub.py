"""What every batch goes through before the loader uses it: text safe to store, and secrets out.

It runs once per file, between the importer and everything after it (extraction, the digest,
the ``extract.command`` payload, the database), so that no importer has to get either right on
its own:

- every text field of the sessions, messages, records and cursor is made safe to encode (a
  lone surrogate, which JSON can escape and UTF-8 cannot hold, becomes U+FFFD; see
  :func:`engram_cli.lang.text.clean`);
- messages, titles, summaries, session keys, records and the cursor's state are redacted, so
  that whatever is drawn from them (an episode quoting the first prompt, a failing ``curl`` kept
  in the digest until its fix comes) starts from redacted text.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from engram_cli.ingest.base import Batch, Message
from engram_cli.lang import redact
from engram_cli.lang.text import clean, clean_data


def secret_free(text: str, contact: bool = False) -> str:
    """``text`` made safe to encode, then redacted (``contact``: e-mail addresses and phone numbers too)."""
    return redact.redact(clean(text), contact=contact)[0]


def _optional(text: str | None) -> str | None:
    return None if text is None else clean(text)


def _markers(text: str | None) -> Counter[str]:
    return Counter(m[len("[REDACTED:") : -1] for m in redact.MARKER_RE.findall(text or ""))


def _message(message: Message, contact: bool) -> Counter[str]:
    message.text = secret_free(message.text, contact)
    message.command = None if message.command is None else secret_free(message.command, contact)
    message.id, message.at, message.tool = _optional(message.id), _optional(message.at), _optional(message.tool)
    # The command is usually also the text (or holds it): a secret in both is one secret. Markers
    # are counted rather than findings, so that what an importer redacted before cutting counts too.
    return _markers(message.text) | _markers(message.command)


def scrub(batch: Batch, *, contact: bool = False) -> Counter[str]:
    """Make ``batch`` safe to store, in place; returns how many secrets of each kind it held.

    ``contact`` also redacts e-mail addresses and phone numbers (the ``redact.contact_details`` setting).
    """
    found: Counter[str] = Counter()
    for session in batch.sessions:
        session.key = secret_free(session.key, contact)
        session.path = clean(session.path)
        session.project = _optional(session.project)
        session.title = None if session.title is None else secret_free(session.title, contact)
        session.summary = None if session.summary is None else secret_free(session.summary, contact)
        session.started_at, session.updated_at = _optional(session.started_at), _optional(session.updated_at)
        session.model = _optional(session.model)
        found += _markers(session.title) + _markers(session.summary)
        for message in session.messages:
            found += _message(message, contact)
        records: list[dict[str, Any]] = []
        for record in session.records:
            safe, kinds = redact.redact_data(clean_data(record), contact=contact)
            records.append(safe)
            found.update(kinds)
        session.records = records
    cursor = batch.cursor
    cursor.path = clean(cursor.path)
    cursor.last_id, cursor.last_at = _optional(cursor.last_id), _optional(cursor.last_at)
    # The importer has used its state for this read; the stored copy is what the next read starts from.
    cursor.state = redact.redact_data(clean_data(cursor.state), contact=contact)[0]
    batch.notes = [clean(note) for note in batch.notes]
    batch.skipped = Counter({clean(reason): n for reason, n in batch.skipped.items()})
    return found
