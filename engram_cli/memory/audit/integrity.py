"""The integrity check: SQLite's integrity (or quick) check and its foreign key check."""

from __future__ import annotations

from pathlib import Path

from engram_cli.errors import DatabaseDamaged
from engram_cli.memory.audit.report import ERROR, Check
from engram_cli.store.database import damaged
from engram_cli.store.maintenance import Maintenance


def _integrity(maintenance: Maintenance, path: Path, quick: bool, limit: int) -> tuple[Check, DatabaseDamaged | None]:
    """The integrity check, and the error to fail with when it found the file damaged."""
    mode = "quick_check" if quick else "integrity_check"
    messages = maintenance.integrity_problems(quick)
    damage = damaged(path, f"{mode} found {len(messages)} problems") if messages else None
    try:
        for table, rowid, parent in maintenance.foreign_key_problems():
            messages.append(f"{table} row {rowid} points at a missing row of {parent}")
    except DatabaseDamaged as exc:
        messages.append(f"the foreign key check stopped: {exc.message}")
        damage = exc
    check = Check(
        "integrity",
        "SQLite integrity and foreign keys",
        ERROR,
        count=len(messages),
        examples=[{"detail": m} for m in messages[:limit]],
        details={"mode": mode},
        hint="the file is damaged: `engram recover` copies what can still be read into a new database; "
        "or restore a backup",
    )
    if damage is not None:
        check.details["damaged"] = True
    return check, damage


def _unreadable(check: Check, exc: DatabaseDamaged) -> None:
    """The integrity check after the other checks could not read what they need."""
    check.count += 1
    check.examples.append({"detail": f"the other checks were skipped: {exc.message}"})
    check.details["damaged"] = True
