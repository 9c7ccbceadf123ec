"""What the extractor hands the loader: one memory drawn from a session, and the id of the message it came from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from engram_cli.ingest.base import Message
from engram_cli.lang.text import clean


@dataclass
class Item:
    """One memory drawn from a session, with where it came from."""

    key: str  # stable across re-reads: "episode", "pref:<id>", "decision:<id>", "remember:<id>", "fix:<id>"
    type: str  # "episodic" | "semantic" | "procedural"
    content: str
    importance: float  # 0..1
    message_id: str | None  # the message it came from (provenance), None for the episode
    at: str | None  # ISO time of that message (the session's last time for the episode)
    tags: list[str]  # "preference" | "decision" | "remember" | "fix" | "session", plus the source name
    # Whose it is: "person" (true in every project, stored in the global scope) or "project".
    scope: str = "project"


def _message_id(message: Message) -> str:
    """The message's id; for formats without one, a hash of what it says (the same on every re-read)."""
    if message.id:
        return message.id
    digest = hashlib.sha1(clean(f"{message.role}\0{message.at}\0{message.text}").encode(), usedforsecurity=False)
    return "h" + digest.hexdigest()[:16]
