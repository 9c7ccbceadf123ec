"""The ingest lock: a dead holder never blocks, a busy message says who holds it and for how long, and no
child process keeps it alive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engram_cli.store.lock import exclusive, lock_path
from engram_cli.timeutil import iso_now

HOLD = """
import sys, time
from pathlib import Path
from engram_cli.store.lock import exclusive
db = Path(sys.argv[1])
db.parent.mkdir(parents=True, exist_ok=True)
with exclusive(db, "ingest"):
    print("locked", flush=True)
    time.sleep(300)
"""

OPEN_FILES = "import os; print('\\n'.join(os.path.realpath(f'/proc/self/fd/{n}') for n in os.listdir('/proc/self/fd')))"


def test_a_holder_killed_with_sigkill_never_blocks_the_next_ingest(db_path: Path, cli: Any) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(db_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        busy = cli("ingest", ok=False)
        said = " ".join(busy.stderr.split())  # the message is wrapped to the terminal's width
        assert busy.exit_code == 75
        assert f"another `engram ingest` is running on {db_path} (pid {holder.pid}, running for " in said
        holder.kill()  # SIGKILL: no cleanup code runs
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
    assert lock_path(db_path, "ingest").exists()  # the file is left behind; the lock is not
    assert cli("ingest").exit_code == 0


@pytest.mark.skipif(sys.platform == "win32", reason="flock and pids as on POSIX")
def test_a_lock_held_after_its_process_died_says_so_and_how_to_clear_it(db_path: Path, cli: Any) -> None:
    import fcntl

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    path = lock_path(db_path, "ingest")
    path.parent.mkdir(parents=True, exist_ok=True)
    # As a child that inherited the lock's descriptor would: the lock is held, the recorded pid is gone.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.write(fd, json.dumps({"pid": dead, "started": iso_now(), "task": "ingest"}).encode())
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        busy = cli("ingest", ok=False)
    finally:
        os.close(fd)
    said = " ".join(busy.stderr.split())  # the message is wrapped to the terminal's width
    assert busy.exit_code == 75
    assert f"(pid {dead}) no longer exists" in said
    assert f"fuser -v {path}" in said and f"delete {path}" in said
    assert cli("ingest").exit_code == 0  # once the holder is gone


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists open files through /proc")
def test_no_child_process_inherits_the_lock(db_path: Path, tmp_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(db_path, "ingest"):
        # close_fds=False hands over every inheritable descriptor: the lock's must not be one.
        child = subprocess.run(
            [sys.executable, "-c", OPEN_FILES], capture_output=True, text=True, close_fds=False, check=True
        )
    assert str(lock_path(db_path, "ingest")) not in child.stdout.splitlines()


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists open files through /proc")
def test_the_extract_command_runs_without_the_lock(
    db_path: Path, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / ".claude" / "projects" / "p"
    folder.mkdir(parents=True)
    record = {
        "type": "user", "uuid": "u1", "sessionId": "s", "cwd": "/home/dev/webshop",
        "timestamp": "2026-11-02T09:00:00.000Z", "message": {"role": "user", "content": "Deploy the shop."},
    }  # fmt: skip
    (folder / "s.jsonl").write_text(json.dumps(record) + "\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    script = tmp_path / "extract.py"
    script.write_text(
        "import json, os, sys\n"
        "sys.stdin.read()\n"
        "held = sorted(os.path.realpath(f'/proc/self/fd/{n}') for n in os.listdir('/proc/self/fd'))\n"
        "print(json.dumps({'content': 'open files: ' + ' '.join(held)}))\n"
    )
    cli("config", "set", "extract.command", f"{sys.executable} {script}")
    cli("ingest", "claude-code")
    from engram_cli import Engram

    with Engram.open() as engram:
        contents = [r[0] for r in engram.store.rows("SELECT content FROM memories")]
    assert len(contents) == 1 and contents[0].startswith("open files:")
    assert str(lock_path(db_path, "ingest")) not in contents[0]
