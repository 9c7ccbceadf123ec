"""Memories to review, not problems: stale, low confidence, never accessed."""

from __future__ import annotations

from datetime import datetime, timedelta

from engram_cli.memory.audit.report import INFO, AuditSettings, Check, _example
from engram_cli.store.memories import MemoryRow
from engram_cli.timeutil import to_iso


def _age_checks(rows: list[MemoryRow], settings: AuditSettings, moment: datetime) -> list[Check]:
    stale_before = to_iso(moment - timedelta(days=settings.stale_days))
    never_before = to_iso(moment - timedelta(days=settings.never_accessed_days))
    active = [r for r in rows if r.status == "active"]
    stale = sorted(
        (r for r in active if r.decay_start < stale_before and r.decay_score < settings.stale_decay),
        key=lambda r: (r.decay_start, r.pk),
    )
    low = sorted((r for r in active if r.confidence < settings.low_confidence), key=lambda r: (r.confidence, r.pk))
    never = sorted(
        (r for r in active if r.access_count == 0 and r.learned_at < never_before), key=lambda r: (r.learned_at, r.pk)
    )
    n = settings.examples
    return [
        Check(
            "stale",
            f"active memories not accessed for {settings.stale_days:g} days that decayed below "
            f"{settings.stale_decay:g}",
            INFO,
            count=len(stale),
            examples=[_example(r, last_access=r.decay_start, decay_score=round(r.decay_score, 3)) for r in stale[:n]],
            details={"days": settings.stale_days, "decay_below": settings.stale_decay},
            hint="`engram touch ID` keeps what still matters, `engram forget ID` drops the rest; "
            "decay archives them in time",
        ),
        Check(
            "low_confidence",
            f"active memories with confidence below {settings.low_confidence:g}",
            INFO,
            count=len(low),
            examples=[_example(r, confidence=round(r.confidence, 3)) for r in low[:n]],
            details={"below": settings.low_confidence},
            hint="confirm them with `engram touch ID` or drop them with `engram forget ID`",
        ),
        Check(
            "never_accessed",
            f"active memories never recalled in the {settings.never_accessed_days:g} days since they were added",
            INFO,
            count=len(never),
            examples=[_example(r, learned_at=r.learned_at) for r in never[:n]],
            details={"days": settings.never_accessed_days},
            hint="for review only: nothing is wrong with them",
        ),
    ]
