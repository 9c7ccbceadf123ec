"""reembed: progressive migration to another bundled model; nothing becomes unrecallable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.errors import ModelError

E5 = "multilingual-e5-small-q4-v1"
MINILM = "all-minilm-l6-v2-q8-v1"
FACTS = [
    "The staging database runs on port 5433",
    "Deploys go through make release",
    "Always run alembic upgrade head after pulling",
    "The CI pipeline runs on GitHub Actions",
    "Use ruff for linting Python code",
]


def _models(rows: Any) -> dict[str, int]:
    return dict(rows("SELECT embedding_model, count(*) FROM memories GROUP BY 1"))


def test_partial_run_keeps_every_memory_recallable_then_completes(engram: Engram, rows: Any) -> None:
    ids = [r.id for r in engram.add_many([{"content": f} for f in FACTS])]
    report = engram.reembed(MINILM, batch=2, limit=3)
    assert (report.done, report.remaining, report.active) == (3, 2, False)
    assert _models(rows) == {MINILM: 3, E5: 2}
    assert engram.active_model == E5
    # Every row has exactly one vector, in its own model's table.
    tables = dict(rows("SELECT model_id, vec_table FROM embedding_models"))
    assert sum(rows(f"SELECT count(*) FROM {t}")[0][0] for t in tables.values()) == len(FACTS)
    for fact, memory_id in zip(FACTS, ids, strict=True):
        hits = engram.recall(fact, k=len(FACTS), bump=False)
        assert memory_id in [h.memory.id for h in hits], fact
    finished = engram.reembed(MINILM)
    assert (finished.done, finished.remaining, finished.active) == (2, 0, True)
    assert engram.active_model == MINILM and _models(rows) == {MINILM: 5}
    assert rows(f"SELECT count(*) FROM {tables[E5]}")[0][0] == 0
    assert engram.recall("which port does staging use", k=1)[0].memory.id == ids[0]
    kinds = [r[0] for r in rows("SELECT kind FROM events WHERE memory_id = ? ORDER BY pk", (ids[0],))]
    assert kinds == ["created", "reembedded"]


def test_rerun_when_done_changes_nothing(engram: Engram) -> None:
    engram.add(FACTS[0])
    report = engram.reembed(E5)
    assert (report.done, report.remaining, report.active) == (0, 0, True)


def test_unknown_model(engram: Engram) -> None:
    engram.add(FACTS[0])
    with pytest.raises(ModelError):
        engram.reembed("no-such-model")


def test_cli_reembed(cli: Any) -> None:
    cli("add", FACTS[0])
    cli("add", FACTS[1])
    summary = json.loads(cli("reembed", "--model", MINILM, "--json").stdout)
    assert summary == {"model": MINILM, "reembedded": 2, "remaining": 0, "active": True}
    models = {m["id"]: m for m in json.loads(cli("models", "--json").stdout)}
    assert models[MINILM]["active"] and models[MINILM]["vectors"] == 2
    assert cli("reembed", "--model", MINILM, "--batch", "0", ok=False).exit_code == 2


def test_killed_midway_then_rerun_leaves_every_row_whole(tmp_path: Any) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from engram_cli.store import connect

    db = tmp_path / "kill.db"
    with Engram.open(db) as mem:
        mem.add_many([{"content": f"Service number {i} listens on port {7000 + i} in rack {i % 7}"} for i in range(60)])
    code = "from engram_cli.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--db", str(db), "reembed", "--model", MINILM, "--batch", "1"],
        env={**os.environ}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    moved = 0
    while time.monotonic() < deadline and proc.poll() is None:
        store = connect(db)
        try:
            moved = int(store.scalar("SELECT count(*) FROM memories WHERE embedding_model = ?", (MINILM,)) or 0)
        finally:
            store.close()
        if moved >= 3:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.05)
    proc.wait(30)
    assert moved >= 3, "the run was not caught half-way"

    def check(store: Any) -> dict[str, int]:
        tables = dict(store.rows("SELECT model_id, vec_table FROM embedding_models"))
        counts: dict[str, int] = {}
        for pk, model in store.rows("SELECT pk, embedding_model FROM memories"):
            holders = [
                m for m, t in tables.items() if store.scalar(f"SELECT count(*) FROM {t} WHERE memory_pk = ?", (pk,))
            ]
            assert holders == [model], (pk, model, holders)  # exactly one vector, in its own model's table
            counts[model] = counts.get(model, 0) + 1
        return counts

    store = connect(db)
    try:
        half = check(store)
    finally:
        store.close()
    assert 0 < half.get(MINILM, 0) < 60
    with Engram.open(db) as mem:
        report = mem.reembed(MINILM)
        assert report.active and report.done == 60 - half[MINILM]
        assert check(mem.store) == {MINILM: 60}
