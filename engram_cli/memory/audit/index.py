"""The index checks: memories missing their vector or keyword row, index rows whose memory is gone,
and vectors from another model than the one in use or being migrated to."""

from __future__ import annotations

from collections import Counter
from typing import Any

from engram_cli.memory.audit.report import ERROR, WARNING, Check, _example
from engram_cli.memory.repair import Work
from engram_cli.store.db import Store
from engram_cli.store.memories import MemoryRow


def _index(store: Store, rows: list[MemoryRow], limit: int, work: Work) -> tuple[Check, Check]:
    vector_rows = {model_id: store.vectors.filters_of(model_id) for model_id, _ in store.vectors.in_use()}
    fts_ids = store.keywords.pks()

    missing: list[tuple[MemoryRow, list[str]]] = []
    for row in rows:
        gaps: list[str] = []
        held = vector_rows.get(row.model or "")
        if held is None or row.pk not in held:
            gaps.append("vector")
            work.missing_vectors.append(row.pk)
        elif held[row.pk] != (row.namespace, row.status, row.type, row.agent):
            gaps.append("outdated vector filters")
            work.outdated_vectors.append(row.pk)
        if row.pk not in fts_ids:
            gaps.append("keyword row")
            work.missing_fts.append(row.pk)
        if gaps:
            missing.append((row, gaps))
    missing_check = Check(
        "missing_index",
        "memories missing their vector or keyword row",
        ERROR,
        count=len(missing),
        examples=[_example(row, missing=gaps) for row, gaps in missing[:limit]],
        details={
            "vectors": len(work.missing_vectors),
            "keyword_rows": len(work.missing_fts),
            "outdated_vector_filters": len(work.outdated_vectors),
        },
        hint="`engram audit --fix` rebuilds them",
    )

    # Orphans are a property of the file, whatever namespaces are audited.
    model_of = store.memories.models_by_pk()
    orphan_examples: list[dict[str, Any]] = []
    for model_id, held in vector_rows.items():
        stray = sorted(pk for pk in held if pk not in model_of or model_of[pk] != model_id)
        if stray:
            work.orphan_vectors[model_id] = stray
            orphan_examples.extend({"index": f"vectors of {model_id}", "rowid": pk} for pk in stray)
    work.orphan_fts = sorted(pk for pk in fts_ids if pk not in model_of)
    orphan_examples.extend({"index": "keyword", "rowid": pk} for pk in work.orphan_fts)
    vector_orphans = sum(len(v) for v in work.orphan_vectors.values())
    orphan_check = Check(
        "orphan_index",
        "index rows whose memory is gone",
        ERROR,
        count=vector_orphans + len(work.orphan_fts),
        examples=orphan_examples[:limit],
        details={"vectors": vector_orphans, "keyword_rows": len(work.orphan_fts)},
        hint="`engram audit --fix` removes them",
    )
    return missing_check, orphan_check


def _other_model(rows: list[MemoryRow], active: str, target: str | None) -> Check:
    # While a reembed is unfinished the old model stays active; progress is towards its target.
    goal = target or active
    counts = Counter(r.model for r in rows if r.model is not None)
    total = sum(counts.values())
    done = counts.get(goal, 0)
    details: dict[str, Any] = {
        "active_model": active,
        "target_model": goal,
        "models": dict(sorted(counts.items())),
        "migrated": done,
        "total": total,
        "percent_migrated": round(100.0 * done / total, 1) if total else 100.0,
    }
    return Check(
        "other_model",
        "memories whose vector comes from another model than the one in use or being migrated to",
        WARNING,
        count=total - done,
        examples=[{"model": m, "count": n} for m, n in sorted(counts.items()) if m != goal],
        details=details,
        hint=f"`engram reembed --model {goal}` finishes the migration",
    )
