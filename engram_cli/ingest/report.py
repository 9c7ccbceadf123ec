"""What an ingest did, per source and in all: the result objects the loader returns and render prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from engram_cli.lang import redact
from engram_cli.lang.text import clean
from engram_cli.serialize import to_json

# Notes kept per source for --verbose; past this the count in ``skipped`` still says how many.
MAX_NOTES = 1000


def describe(exc: BaseException) -> str:
    """An exception for a message: its type and text, which may quote the input, so redacted."""
    return redact.redact(clean(f"{type(exc).__name__}: {exc}"))[0]


@dataclass
class Planned:
    """One memory the loader would store (dry run) or stored."""

    source: str
    session: str
    key: str
    namespace: str
    type: str
    importance: float
    content: str
    action: str = "new"  # new | updated | unchanged | created | merged | duplicate
    memory_id: str | None = None


@dataclass
class SourceReport:
    name: str
    files: int = 0
    changed: int = 0
    sessions: int = 0
    evidence: int = 0  # turns kept as evidence (that a dry run would keep)
    memories: list[Planned] = field(default_factory=list)
    redacted: Counter[str] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def count(self, *actions: str) -> int:
        return sum(1 for m in self.memories if m.action in actions)

    def skip(self, reason: str, note: str) -> None:
        """A whole file (or part of one) left out: counted under ``reason``, ``note`` shown with -v."""
        self.skipped[reason] += 1
        if len(self.notes) < MAX_NOTES:
            self.notes.append(clean(note))

    def error(self, message: str) -> None:
        """A file that could not be ingested this time (it is read again on the next run)."""
        self.errors.append(clean(message))

    def json_form(self, **options: Any) -> dict[str, Any]:
        # Counts by outcome rather than the list of actions; the memories that stayed unchanged are left out.
        return {
            "source": self.name,
            "files": self.files,
            "changed_files": self.changed,
            "sessions": self.sessions,
            "evidence": self.evidence,
            "created": self.count("created", "new"),
            "merged": self.count("merged", "duplicate"),
            "updated": self.count("updated"),
            "redacted": dict(self.redacted),
            "skipped": dict(self.skipped),
            "errors": self.errors,
            "memories": to_json([m for m in self.memories if m.action != "unchanged"], **options),
        }


@dataclass
class IngestReport:
    json_keys: ClassVar[tuple[str, ...]] = (
        "dry_run",
        "stopped_early",
        "abandoned",
        "found_nothing",
        "looked",
        "sources",
    )

    dry_run: bool
    sources: list[SourceReport] = field(default_factory=list)
    stopped_early: bool = False  # --max-seconds ran out; the next run continues
    # Files given up on past --max-seconds and its grace period: nothing of them was written.
    abandoned: list[str] = field(default_factory=list)
    # When no source found any file: what each looked for ({"source", "reads"}) and the --path it
    # looked in ("path", None for the default places), for the person to check.
    looked: list[dict[str, str | None]] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        return [f"{s.name}: {e}" for s in self.sources for e in s.errors]

    @property
    def found_nothing(self) -> bool:
        return bool(self.looked)
