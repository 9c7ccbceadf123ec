"""Reliability: many writers alongside maintenance, kill -9 at any moment, hostile input, secrets anywhere.

`pytest` runs the short variant; `nox -s reliability` (ENGRAM_RELIABILITY=long) runs the same tests with
8 writer processes × 150 adds, 50 kill -9 trials per command, every hostile input as its own process and
20 random corruptions of every sample log. Each test prints its figures (`-s` shows them).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import pytest
from reliability import (
    SAMPLES,
    SCALE,
    TARGET_NAMES,
    Planter,
    all_text,
    copy_sample,
    db_bytes,
    engram,
    files_under,
    hostile_payloads,
    integrity,
    kill_after,
    mutations,
    plant_file,
    rows,
    special_files,
    start,
    timed,
)
from typer.testing import CliRunner

from engram_cli import Engram
from engram_cli.cli import app
from engram_cli.ingest import importer
from engram_cli.store.vectors import table_name

MINILM = "all-minilm-l6-v2-q8-v1"
EXIT_OK_OR_ERROR = (0, 1)


def _env(home: Path, **extra: str) -> dict[str, str]:
    """A process environment with its own engram home and user home (both created)."""
    (home / "user").mkdir(parents=True, exist_ok=True)
    return {**os.environ, "ENGRAM_HOME": str(home), "HOME": str(home / "user"), **extra}


# -- many writers alongside compact, decay and ingest ------------------------------------------------

WRITER = """
import sys
from engram_cli import Engram
writer, count = int(sys.argv[1]), int(sys.argv[2])
with Engram.open() as mem:
    for i in range(count):
        mem.add(f"Writer {writer} note {i}: job {writer * 1000 + i} finished on host h{i % 5}", type="episodic")
"""

MAINTENANCE = """
import os, subprocess, sys, time
stop, args = sys.argv[1], sys.argv[2:]
codes = []
while not codes or not os.path.exists(stop):  # at least once, then until the writers are done
    codes.append(subprocess.run([sys.executable, "-m", "engram_cli", *args], capture_output=True).returncode)
print(" ".join(map(str, codes)))
"""


def test_writers_lose_nothing_while_compact_decay_and_ingest_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    logs = tmp_path / "logs"
    copy_sample(SAMPLES["claude-code"][0], logs)
    env = _env(home)
    with Engram.open(home / "engram.db"):
        pass
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(w), str(SCALE.adds)], env=env, stderr=subprocess.PIPE)
        for w in range(SCALE.writers)
    ]
    stop = tmp_path / "writers-done"
    maintenance = [
        subprocess.Popen([sys.executable, "-c", MAINTENANCE, str(stop), *args], env=env, stdout=subprocess.PIPE)
        for args in (["compact"], ["decay"], ["ingest", "claude-code", "--path", str(logs), "--quiet"])
    ]
    errors = [w.communicate(timeout=1800)[1].decode() for w in writers]
    stop.touch()
    codes = [m.communicate(timeout=1800)[0].decode().split() for m in maintenance]
    assert errors == [""] * SCALE.writers
    for runs in codes:
        assert runs and set(runs) <= {"0", "75"}, runs  # success, or another one was busy
    db = home / "engram.db"
    stored = {r[0] for r in rows(db, "SELECT content FROM memories WHERE content LIKE 'Writer %'")}
    assert len(stored) == SCALE.writers * SCALE.adds
    assert integrity(db) == "ok"
    print(f"\n{SCALE.writers} writers x {SCALE.adds} adds with compact/decay/ingest runs {[len(c) for c in codes]}:")
    print(f"  {len(stored)} of {SCALE.writers * SCALE.adds} memories present, integrity ok")


# -- kill -9 at any moment -----------------------------------------------------------------------


def _transcripts(home: Path, sessions: int) -> None:
    project = home / "user" / ".claude" / "projects" / "-src-webshop"
    project.mkdir(parents=True, exist_ok=True)
    cwd = str(home / "user" / "src" / "webshop")
    for n in range(sessions):
        key = f"0b0e2a6c-{n:04d}-4a2b-9c3d-5e6f7a8b9c0d"
        lines = []
        for turn, (role, text) in enumerate(
            [
                ("user", f"Remember that service {n} listens on port {8000 + n} behind the proxy."),
                ("assistant", f"Noted: service {n} is on {8000 + n}."),
                ("user", f"We decided to deploy service {n} with blue-green releases from now on."),
                ("assistant", "Understood."),
            ]
        ):
            content: Any = text if role == "user" else [{"type": "text", "text": text}]
            lines.append(
                json.dumps(
                    {
                        "type": role,
                        "uuid": f"{key}-{turn}",
                        "sessionId": key,
                        "cwd": cwd,
                        "timestamp": f"2026-11-0{1 + n % 9}T10:0{turn}:00.000Z",
                        "message": {"role": role, "content": content},
                    }
                )
            )
        (project / f"{key}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _ingest_state(db: Path) -> list[tuple[Any, ...]]:
    return sorted(
        rows(db, "SELECT namespace, memory_type, content, status FROM memories")
        + rows(db, "SELECT 'item', source, session_key, item_key FROM ingest_items")
        + [
            ("cursor", Path(p).name, offset, size)
            for p, offset, size in rows(db, "SELECT path, byte_offset, size FROM ingest_cursors")
        ]
    )


def _compact_state(db: Path) -> list[tuple[Any, ...]]:
    return sorted(rows(db, "SELECT memory_type, status, content FROM memories"))


def _episodes(db: Path) -> None:
    topics = [
        "the upload test failed because the S3 mock returned 503",
        "the nightly backup job ran out of disk on db-2",
        "CORS preflight requests were blocked by the gateway",
        "上传测试失败，因为 S3 模拟服务返回 503",
    ]
    with Engram.open(db) as mem:
        mem.add_many(
            {"content": f"Again {topic} (run {r})", "type": "episodic", "created_at": f"2026-10-{1 + r:02d}T08:00:00Z"}
            for topic in topics
            for r in range(6)
        )
        mem.add_many({"content": f"Fact {i}: service {i} uses port {7000 + i}"} for i in range(30))


@pytest.mark.parametrize("command", ["ingest", "compact", "reembed"])
def test_kill_minus_nine_at_any_moment_then_a_rerun_ends_as_one_clean_run(command: str, tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    if command == "ingest":
        _transcripts(base, 16)
        args: tuple[str, ...] = ("ingest", "claude-code", "--quiet")
        state = _ingest_state
    elif command == "compact":
        _episodes(base / "engram.db")
        args = ("compact", "--now", "2026-11-20T00:00:00Z")
        state = _compact_state
    else:
        with Engram.open(base / "engram.db") as mem:
            mem.add_many({"content": f"Service {i} listens on port {7000 + i} in rack {i % 7}"} for i in range(90))
        args = ("reembed", "--model", MINILM, "--batch", "3")

        def state(db: Path) -> list[tuple[Any, ...]]:
            return sorted(rows(db, "SELECT id, content, embedding_model FROM memories"))

    reference = tmp_path / "reference"
    shutil.copytree(base, reference)
    done, seconds = timed(lambda: engram(*args, env=_env(reference)))
    assert done.returncode == 0, done.stderr
    expected = state(reference / "engram.db")

    rng = random.Random(f"kill-{command}")
    trials = []
    for n in range(SCALE.kill_trials):
        home = tmp_path / f"trial-{n}"
        shutil.copytree(base, home)
        trial = kill_after(start(*args, env=_env(home)), rng.uniform(0.05, seconds))
        trials.append(trial)
        db = home / "engram.db"
        assert integrity(db) == "ok", (n, trial)
        again = engram(*args, env=_env(home))
        assert again.returncode == 0, (n, trial, again.stderr)
        assert state(db) == expected, (n, trial)
        if command == "reembed":
            table = table_name(MINILM)
            missing = (
                f"SELECT count(*) FROM memories m WHERE NOT EXISTS (SELECT 1 FROM {table} v WHERE v.memory_pk = m.pk)"
            )
            assert rows(db, missing) == [(0,)]
        shutil.rmtree(home)
    mid = sum(t.mid_run for t in trials)
    print(f"\nkill -9 during {command}: {len(trials)} trials ({mid} mid-run), clean run {seconds:.1f} s; all equal")


# -- hostile input ---------------------------------------------------------------------------------


def _run_cli(args: list[str], tmp: Path) -> tuple[int, str]:
    """One engram command, as configured: in this process (fast) or as a real process."""
    if SCALE.in_process:
        result = CliRunner().invoke(app, args, catch_exceptions=True)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception  # a traceback would have reached the person
        return result.exit_code, result.stderr
    done = engram(*args, env={**os.environ, "HOME": str(tmp)}, timeout=300)
    return done.returncode, done.stderr


@pytest.mark.parametrize("source", sorted(TARGET_NAMES))
def test_every_importer_survives_every_hostile_input(source: str, tmp_path: Path) -> None:
    name = TARGET_NAMES[source]
    cases = dict(hostile_payloads())
    sample = files_under(SAMPLES[source][0])[0]
    cases.update(mutations(sample.read_bytes(), SCALE.mutations, seed=zlib.crc32(source.encode())))
    for case, payload in cases.items():
        folder = tmp_path / case / ("tasks/1700000000000" if source in ("cline", "roo-code") else "")
        folder.mkdir(parents=True)
        target = folder / name
        target.write_bytes(payload)
        assert importer(source).files(target) == [target], f"{source} does not take {name}"
        code, err = _run_cli(["ingest", source, "--path", str(target)], tmp_path)
        assert code in EXIT_OK_OR_ERROR, (source, case, code, err)
        assert "Traceback" not in err, (source, case, err)
        assert code == 0 or "Error:" in err, (source, case, err)
    specials = tmp_path / "specials"
    made = special_files(specials, name)
    shutil.copyfile(sample, specials / name)
    code, err = _run_cli(["ingest", source, "--path", str(specials), "--json"], tmp_path)
    assert code in EXIT_OK_OR_ERROR and "Traceback" not in err, (source, err)
    print(f"\n{source}: {len(cases)} hostile files and {len(made)} special files, no traceback, no hang")


def test_import_add_and_arguments_survive_hostile_input(cli: Any, tmp_path: Path, rows: Any) -> None:
    lines = tmp_path / "hostile.jsonl"
    lines.write_bytes(b"\n".join(p.replace(b"\n", b" ") for p in hostile_payloads().values() if p) + b"\n")
    result = cli("import", str(lines), ok=False)
    assert result.exit_code == 1 and "Traceback" not in result.stderr and "line " in result.stderr
    good = json.dumps({"content": "Deploys go through make release"}).encode()
    lines.write_bytes(lines.read_bytes() + good + b"\n")
    assert cli("import", str(lines), ok=False).exit_code == 0
    for text, code in [
        ("x" * 100_000, 0), ("bad \ud800 surrogate", 0), ("nul \x00 inside", 1), ("", 1), ("   ", 1), ("x" * 100_001, 1)
    ]:  # fmt: skip
        outcome = cli("add", text, "--no-merge", ok=False)
        assert outcome.exit_code == code, (text[:20], outcome.stderr)
        assert "Traceback" not in outcome.stderr
    for args, code in [
        (["recall"], 2), (["recall", "x", "-k", "0"], 2), (["recall", "x", "-k", "many"], 2),
        (["list", "--limit", "-1"], 2), (["forget", "zz"], 1), (["forget", "0000"], 1), (["inspect", "#$%^"], 1),
        (["add", "x", "--importance", "nan"], 1), (["add", "x", "--type", "dream"], 1), (["decay", "--now", "soon"], 1),
        (["recall", "x", "--since", "last tuesday-ish"], 1), (["export", "-n", "a", "-A"], 2), (["nosuchcommand"], 2),
        (["config", "set", "no.such.key", "1"], 2), (["ingest", "nosuchsource"], 2), (["recall", "x", "-n", "\x07"], 1),
    ]:  # fmt: skip
        outcome = cli(*args, ok=False)
        assert outcome.exit_code == code, (args, outcome.exit_code, outcome.stderr)
        assert "Traceback" not in outcome.stderr
    assert rows("SELECT count(*) FROM memories")[0][0] == 3


def test_arguments_that_are_not_utf8_are_repaired_in_a_real_process(tmp_path: Path) -> None:
    env = _env(tmp_path / "home")
    done = subprocess.run(
        [sys.executable, "-m", "engram_cli", "add", b"caf\xe9 \xff ok".decode("utf-8", "surrogateescape")],
        env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert rows(tmp_path / "home" / "engram.db", "SELECT content FROM memories") == [("caf\ufffd \ufffd ok",)]


# -- secrets planted in every position of every source ---------------------------------------------


def test_secrets_planted_everywhere_in_every_source_never_reach_the_disk(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = _env(home)
    planter = Planter()
    stored: dict[str, int] = {}
    for source, samples in SAMPLES.items():
        for n, sample in enumerate(samples):
            copy = copy_sample(sample, tmp_path / "planted" / f"{source}-{n}")
            before = len(planter.raw)
            for path in files_under(copy):
                plant_file(path, planter)
            assert len(planter.raw) > before, f"nothing planted in {sample}"
            assert importer(source).files(copy), f"{source} no longer sees {copy}"
            done = engram("ingest", source, "--path", str(copy), "--json", env=env)
            assert done.returncode in EXIT_OK_OR_ERROR and "Traceback" not in done.stderr, (source, done.stderr)
            if done.returncode == 0:
                report = json.loads(done.stdout)["sources"][0]
                stored[source] = stored.get(source, 0) + report["created"] + report["merged"] + report["updated"]
    export = tmp_path / "export.jsonl"
    assert engram("export", str(export), "--all-namespaces", "--vectors", env=env).returncode == 0
    db = home / "engram.db"
    with Engram.open(db) as mem:
        mem.store.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    text = all_text(db)
    raw = db_bytes(db) + export.read_bytes()
    leaks = [value for value in planter.raw if value in text or value.encode() in raw]
    assert leaks == [], f"{len(leaks)} of {len(planter.raw)} planted secrets reached the disk: {leaks[:5]}"
    assert sum(stored.values()) > 20 and "[REDACTED:" in text
    print(f"\n{len(planter.raw)} secrets planted in {len(SAMPLES)} sources; memories stored per source: {stored}")
    print("  none in any table, the database and WAL bytes, or the export")
