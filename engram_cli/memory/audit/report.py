"""What an audit is asked and what it answers: severities, a check's result, the report, the settings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engram_cli.errors import DatabaseDamaged
from engram_cli.lang import redact as redactmod
from engram_cli.memory.repair import Action
from engram_cli.serialize import to_json
from engram_cli.store.memories import MemoryRow

INFO, WARNING, ERROR = "info", "warning", "error"
EXCERPT = 90


# -- what the report is made of ---------------------------------------------------------------


@dataclass
class Check:
    """One check's result: how many, a few examples, and what to do."""

    name: str
    title: str
    severity: str
    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    hint: str | None = None
    found: int | None = None  # before --fix repaired anything
    fixed: int = 0
    skipped: str | None = None

    @property
    def problem(self) -> bool:
        return self.severity != INFO and self.count > 0

    def json_form(self, **options: Any) -> dict[str, Any]:
        # "found" is the count before --fix, whether or not it ran; a hint only for a check that found something.
        return {
            "name": self.name,
            "title": self.title,
            "severity": self.severity,
            "problem": self.problem,
            "count": self.count,
            "found": self.count if self.found is None else self.found,
            "fixed": self.fixed,
            "skipped": self.skipped,
            "hint": self.hint if self.count else None,
            "details": self.details,
            "examples": self.examples,
        }


@dataclass
class AuditReport:
    database: str
    now: str
    namespaces: list[str] | None
    fix: bool
    quick: bool
    checks: list[Check]
    actions: list[Action] = field(default_factory=list)
    # Set when the file is damaged: the integrity check says what was found, and the caller
    # should fail with this error once the report is shown.
    damage: DatabaseDamaged | None = None

    @property
    def problems(self) -> list[Check]:
        return [c for c in self.checks if c.problem]

    def check(self, name: str) -> Check:
        return next(c for c in self.checks if c.name == name)

    def left_for_a_person(self) -> list[Check]:
        """What is still there after any fixes: problems first, then memories to review."""
        remaining = [c for c in self.checks if c.count]
        return sorted(remaining, key=lambda c: (not c.problem, self.checks.index(c)))

    def json_form(self, **options: Any) -> dict[str, Any]:
        # A verdict (ok, the names of the problems) before the checks; what is left, with its hints, last.
        return {
            "database": self.database,
            "now": self.now,
            "namespaces": self.namespaces,
            "fix": self.fix,
            "quick": self.quick,
            "ok": not self.problems,
            "problems": [c.name for c in self.problems],
            "checks": to_json(self.checks, **options),
            "actions": to_json(self.actions, **options),
            "left_for_a_person": [
                {"check": c.name, "count": c.count, "problem": c.problem, "hint": c.hint}
                for c in self.left_for_a_person()
            ],
        }

    def to_dict(self) -> dict[str, Any]:
        """The JSON form, as `audit --json` prints it."""
        return self.json_form()


@dataclass(frozen=True)
class AuditSettings:
    """Thresholds (config ``audit.*``, whose defaults live in the settings) and what the engine needs
    to know about models."""

    active_model: str
    # model id -> (merge threshold, supersede min similarity)
    thresholds: Callable[[str], tuple[float, float]]
    stale_days: float
    stale_decay: float
    low_confidence: float
    never_accessed_days: float
    examples: int
    quick: bool
    contact: bool  # also e-mail addresses and phone numbers (redact.contact_details)


# -- what is audited, and how an example shows a memory ----------------------------------


@dataclass
class _Scope:
    namespaces: list[str] | None


def excerpt(text: str, width: int = EXCERPT) -> str:
    """A one-line excerpt that never shows a secret: redacted, and centred on the first marker if any."""
    redacted, _ = redactmod.redact(text)
    flat = " ".join(redacted.split())
    if len(flat) <= width:
        return flat
    first = redactmod.MARKER_RE.search(flat)
    start = 0 if first is None else max(0, min(first.start() - width // 3, len(flat) - width))
    clipped = flat[start : start + width - 2]
    return ("…" if start else "") + clipped + ("…" if start + width - 2 < len(flat) else "")


def _example(row: MemoryRow, **extra: Any) -> dict[str, Any]:
    return {"id": row.id[:8], "text": excerpt(row.content), **extra}
