"""The per-prompt hook's warm path: the service answers exactly as the cold command would, or not at all."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from warm_service import serving, socket_for, wait_for

from engram_cli import launch
from engram_cli.config import Paths
from engram_cli.warm import client, locate, protocol, server
from engram_cli.warm.protocol import Reply, Request, Stream

pytestmark = pytest.mark.skipif(not locate.supported(), reason="the warm path needs Linux")

REPO_ROOT = Path(__file__).resolve().parent.parent
DEPLOY = "Deploys of the webshop go through make release after a green CI run"
PREFERENCE = "Answer in British English"
HOOK = ["--hook", "claude-code:UserPromptSubmit", "hooks", "prompt"]
STARTUP_S = 120.0  # a service loads the model before it listens; generous for a busy machine


@pytest.fixture(autouse=True)
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private runtime directory (socket paths must stay under ~100 bytes), and no service left behind."""
    path = Path(tempfile.mkdtemp(prefix="ew-", dir="/tmp"))
    path.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])))
    yield path
    for pid in _services(path):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while _services(path) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in _services(path):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(path, ignore_errors=True)


def _services(runtime: Path) -> list[int]:
    """The pids of warm services started from this test (they carry its runtime directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if b"hooks\0serve" in cmdline and f"XDG_RUNTIME_DIR={runtime}\0".encode() in environ:
            found.append(int(entry.name))
    return found


@pytest.fixture
def shop(cli: Any, git_repo: Any) -> Path:
    repo: Path = git_repo("webshop")
    cli("add", DEPLOY, "-n", "webshop")
    cli("add", PREFERENCE, "-g", "-i", "0.8")
    cli("add", "Billing exports run nightly at two", "-n", "billing")
    return repo


def _payload(repo: Path, prompt: str) -> bytes:
    event = {"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": prompt, "cwd": str(repo)}
    return json.dumps(event).encode()


def _run(argv: list[str], stdin: bytes, *, cold: bool, cwd: Path, env: dict[str, str] | None = None,
         python: tuple[str, ...] = ()) -> tuple[int, bytes, bytes]:  # fmt: skip
    """A whole hook process: through the console entry (warm when it can be), or the full CLI only (cold)."""
    entry = ["-c", "from engram_cli.cli import main; main()"] if cold else ["-m", "engram_cli"]
    done = subprocess.run(
        [sys.executable, *python, *entry, *argv], input=stdin, capture_output=True, cwd=cwd,
        env={**os.environ, **(env or {})}, timeout=300,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def _start(db: Path) -> str:
    path = socket_for(db)
    assert client.start_service(locate.database(str(db), os.environ), path)
    assert wait_for(lambda: os.path.exists(path), STARTUP_S), "the service did not start"
    return path


# -- the service answers exactly as the command would ------------------------------------------------------


def test_warm_and_cold_hooks_print_the_same_bytes_and_count_the_same_accesses(
    cli: Any, shop: Path, db_path: Path, tmp_path: Path
) -> None:
    cli("config", "set", "hooks.warm_idle_s", "600")
    cold_db, warm_db = tmp_path / "cold.db", tmp_path / "warm.db"
    shutil.copyfile(db_path, cold_db)
    shutil.copyfile(db_path, warm_db)
    path = _start(warm_db)
    cases: list[tuple[list[str], bytes, dict[str, str]]] = [
        (["claude-code"], _payload(shop / "src", "how do we deploy the webshop?"), {}),
        (["gemini-cli"], _payload(shop, "how do we deploy the webshop?"), {}),
        # Plain text, not UTF-8: a note on stderr; the project from the assistant's variable.
        (["claude-code"], b"how do we deploy the webshop? \xff", {"CLAUDE_PROJECT_DIR": str(shop)}),
        (["claude-code", "--dir", str(shop)], b"/clear", {}),
        (["vim"], b"anything", {}),  # an error: its message and exit code
    ]
    outputs = []
    for args, stdin, env in cases:
        cold = _run(["--db", str(cold_db), *HOOK, *args], stdin, cold=True, cwd=tmp_path, env=env)
        warm = _run(["--db", str(warm_db), *HOOK, *args], stdin, cold=False, cwd=tmp_path, env=env)
        assert warm == cold, args
        outputs.append(cold)
    assert DEPLOY.encode() in outputs[0][1] and b"hookSpecificOutput" in outputs[1][1]
    assert b"U+FFFD" in outputs[2][2] and b"[scope: project]" in outputs[2][1]
    assert outputs[3] == (0, b"", b"") and outputs[4][0] == 2 and b"vim" in outputs[4][2]
    counts = "SELECT content, access_count FROM memories ORDER BY content"
    from engram_cli.store import connect

    def accesses(db: Path) -> list[tuple[Any, ...]]:
        store = connect(db)
        try:
            return [tuple(r) for r in store.rows(counts)]
        finally:
            store.close()

    assert accesses(warm_db) == accesses(cold_db)
    assert dict(accesses(warm_db))[DEPLOY] == 3  # the three prompts that found it, warm as cold
    # The warm hook really was answered by the service, without loading the CLI or the engine.
    code, out, err = _run(["--db", str(warm_db), *HOOK, "claude-code"], _payload(shop, "how do we deploy?"),
                          cold=False, cwd=tmp_path, python=("-X", "importtime"))  # fmt: skip
    imported = {line.split("|")[-1].strip() for line in err.decode().splitlines() if line.startswith("import time:")}
    assert code == 0 and DEPLOY.encode() in out
    assert "engram_cli.warm.client" in imported
    assert not imported & {"typer", "rich", "click", "numpy", "onnxruntime", "apsw", "engram_cli.cli", "engram_cli.api"}
    assert os.path.exists(path)


def test_the_cold_path_starts_the_service_once_and_it_stops_when_idle(
    cli: Any, shop: Path, db_path: Path, tmp_path: Path, runtime_dir: Path
) -> None:
    cli("config", "set", "hooks.warm_idle_s", "8")
    path = socket_for(db_path)
    # No service: the hook answers itself and starts one for next time.
    code, out, _ = _run([*HOOK, "claude-code"], _payload(shop, "how do we deploy the webshop?"), cold=False,
                        cwd=tmp_path)  # fmt: skip
    assert code == 0 and DEPLOY.encode() in out
    assert wait_for(lambda: os.path.exists(path), STARTUP_S), "the hook did not start the service"
    assert len(_services(runtime_dir)) == 1
    # Hooks arriving together while the lock is held start nothing more.
    with ThreadPool(4) as started:
        assert started(lambda: client.start_service(locate.database(None, os.environ), path)) == [False] * 4
    assert len(_services(runtime_dir)) == 1
    assert wait_for(lambda: not _services(runtime_dir), 60), "the service did not stop when idle"
    assert not os.path.exists(path)


def test_concurrent_hooks_start_exactly_one_service(shop: Path, db_path: Path, runtime_dir: Path) -> None:
    path = socket_for(db_path)
    with ThreadPool(4) as started:
        results = started(lambda: client.start_service(locate.database(None, os.environ), path))
    assert sorted(results) == [False, False, False, True]
    assert wait_for(lambda: os.path.exists(path), STARTUP_S)
    assert len(_services(runtime_dir)) == 1


class ThreadPool:
    """Runs one function in several threads released at the same moment."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __enter__(self) -> Callable[[Callable[[], Any]], list[Any]]:
        def run(fn: Callable[[], Any]) -> list[Any]:
            gate = threading.Barrier(self.n)
            results: list[Any] = [None] * self.n

            def one(i: int) -> None:
                gate.wait()
                results[i] = fn()

            threads = [threading.Thread(target=one, args=(i,)) for i in range(self.n)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            return results

        return run

    def __exit__(self, *exc: object) -> None:
        return None


def test_warm_idle_s_zero_turns_the_warm_path_off(cli: Any, shop: Path, db_path: Path, runtime_dir: Path) -> None:
    cli("config", "set", "hooks.warm_idle_s", "0")
    launch._start_service(None)
    assert not any(runtime_dir.rglob("*")), "nothing is started, not even a lock file"
    path = socket_for(db_path)
    answered: list[Request] = []
    reason = server.serve(path, str(db_path), _answering(answered), lambda: 0.0)
    assert "off" in reason and not os.path.exists(path)


def test_the_service_for_a_missing_database_does_not_start(tmp_path: Path) -> None:
    path = socket_for(tmp_path / "none.db")
    assert server.serve(path, str(tmp_path / "none.db"), _answering([]), lambda: 60.0) == "no database"
    assert not os.path.exists(path)


# -- the client falls back on every failure ---------------------------------------------------------------


def _request(prompt: bytes = b"how do we deploy?") -> Request:
    utf8 = Stream("utf-8", "strict")
    return Request([*HOOK, "claude-code"], "engram", "/", {"NO_COLOR": "1"}, prompt, utf8, utf8,
                   Stream("utf-8", "backslashreplace"))  # fmt: skip


def _answering(seen: list[Request]) -> Callable[[Request], Reply]:
    def answer(request: Request) -> Reply:
        seen.append(request)
        return Reply(0, b"card for " + request.stdin, b"")

    return answer


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    db = tmp_path / "stand-in.db"
    db.write_bytes(b"not opened by the stand-in service")
    return db


def test_a_request_round_trips_byte_for_byte(db_file: Path) -> None:
    seen: list[Request] = []
    odd = "caf\udcc3-\ud800"  # lone surrogates, as Python decodes a path that is not UTF-8
    with serving(db_file, _answering(seen)) as (path, _):
        request = _request("é \xff".encode("latin-1"))
        request.argv.append(odd)
        reply = client.ask(path, request)
    assert reply is not None and (reply.code, reply.stdout, reply.stderr) == (0, b"card for \xe9 \xff", b"")
    (got,) = seen
    assert got.argv == request.argv and got.env == {"NO_COLOR": "1"} and got.stdin == request.stdin
    assert got.stderr_stream.errors == "backslashreplace"


def test_a_request_its_hook_gave_up_on_is_not_run(db_file: Path) -> None:
    """A hook that stopped waiting has run the command itself: running it again would count accesses twice."""
    seen: list[Request] = []
    with serving(db_file, _answering(seen)) as (path, _):
        late = _request()
        late.deadline = time.time() - 1
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        conn.sendall(protocol.encode_request(late))
        conn.shutdown(socket.SHUT_WR)
        conn.settimeout(5)
        assert conn.recv(1) == b""  # closed without a reply
        conn.close()
        assert client.ask(path, _request()) is not None
    assert len(seen) == 1


def test_no_service_and_a_dead_one_are_no_answer(db_file: Path) -> None:
    path = socket_for(db_file)
    assert client.ask(path, _request()) is None  # nothing there
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(path)
    dead.close()  # the file stays: a crashed service's socket
    assert client.ask(path, _request()) is None
    seen: list[Request] = []
    with serving(db_file, _answering(seen)) as (path, _):  # the next service removes the stale file
        assert client.ask(path, _request()) is not None


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\n\r\n",
        protocol.MAGIC + b"\xff\xff\xff\xff",
        protocol.pack([b"0", b"out"]),
        protocol.pack([b"999", b"", b""]),
        protocol.pack([b"zero", b"", b""]),
        protocol.MAGIC + b"\x00\x00\x00\x09\x00\x00\x00\x05ab",
        b"",
    ],
    ids=["http", "huge", "two-items", "bad-code", "not-a-number", "truncated", "nothing"],
)
def test_garbage_from_the_socket_is_no_answer(db_file: Path, reply: bytes) -> None:
    with _fake_service(db_file, lambda conn: conn.sendall(reply)) as path:
        assert client.ask(path, _request()) is None


def test_a_slow_service_is_no_answer(db_file: Path) -> None:
    with _fake_service(db_file, lambda conn: time.sleep(1.0)) as path:
        assert client.ask(path, _request(), read_timeout=0.2) is None


@contextlib.contextmanager
def _fake_service(db: Path, behave: Callable[[socket.socket], None]) -> Iterator[str]:
    """A socket at the service's place that reads a request and then does ``behave``; holds the service's lock."""
    path = socket_for(db)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    lock = server.take_lock(path, None)
    assert lock is not None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    listener.settimeout(0.2)
    stop = threading.Event()

    def loop() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn, contextlib.suppress(OSError, protocol.ProtocolError):
                protocol.receive(conn)
                behave(conn)

    thread = threading.Thread(target=loop)
    thread.start()
    try:
        yield path
    finally:
        stop.set()
        thread.join(10)
        listener.close()
        os.unlink(path)
        os.close(lock)


def test_a_hook_whose_service_answers_garbage_answers_itself(shop: Path, tmp_path: Path, db_path: Path) -> None:
    with _fake_service(db_path, lambda conn: conn.sendall(b"garbage")):
        code, out, err = _run([*HOOK, "claude-code"], _payload(shop, "how do we deploy the webshop?"), cold=False,
                              cwd=tmp_path)  # fmt: skip
    assert (code, err) == (0, b"") and DEPLOY.encode() in out


# -- who may talk to whom -------------------------------------------------------------------------------------


def test_the_service_refuses_another_user(db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Request] = []
    with serving(db_file, _answering(seen)) as (path, _):
        monkeypatch.setattr(server, "peer_uid", lambda sock: os.getuid() + 1)
        assert client.ask(path, _request()) is None
        monkeypatch.undo()
        assert client.ask(path, _request()) is not None
    assert len(seen) == 1  # the refused prompt never reached the command


def test_the_client_refuses_a_service_of_another_user(db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Request] = []
    with serving(db_file, _answering(seen)) as (path, _):
        monkeypatch.setattr(client, "peer_uid", lambda sock: os.getuid() + 1)
        assert client.ask(path, _request()) is None
    assert seen == []  # the prompt was never sent


def test_a_directory_others_may_enter_is_not_used(db_file: Path, runtime_dir: Path) -> None:
    path = socket_for(db_file)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(path), 0o755)
    assert not locate.private_dir(os.path.dirname(path), create=True)
    assert server.serve(path, str(db_file), _answering([]), lambda: 60.0).endswith("not a private directory")
    assert not client.start_service(None, path)


def test_the_socket_and_its_directory_are_private(db_file: Path) -> None:
    with serving(db_file, _answering([])) as (path, _):
        assert os.stat(path).st_mode & 0o777 == 0o600
        assert os.stat(os.path.dirname(path)).st_mode & 0o777 == 0o700


# -- when the service stops ----------------------------------------------------------------------------------


def test_the_service_stops_when_its_database_is_replaced(db_file: Path, tmp_path: Path) -> None:
    with serving(db_file, _answering([])) as (_path, stopped):
        replacement = tmp_path / "restored.db"
        replacement.write_bytes(b"a restored backup")
        os.replace(replacement, db_file)
        assert wait_for(lambda: bool(stopped), 10)
    assert stopped == ["the database file was deleted or replaced"]


def test_the_service_stops_when_its_database_is_deleted(db_file: Path) -> None:
    with serving(db_file, _answering([])) as (path, stopped):
        db_file.unlink()
        assert wait_for(lambda: bool(stopped), 10)
        assert not os.path.exists(path)
    assert stopped == ["the database file was deleted or replaced"]


def test_the_service_stops_when_engram_is_upgraded(
    db_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = tmp_path / "_version.py"
    version.write_text('__version__ = "1"\n')
    monkeypatch.setattr(locate, "version_file", lambda: str(version))
    with serving(db_file, _answering([])) as (_path, stopped):
        new = tmp_path / "new_version.py"
        new.write_text('__version__ = "2"\n')
        os.replace(new, version)
        assert wait_for(lambda: bool(stopped), 10)
    assert stopped == ["engram was upgraded"]


def test_the_service_stops_when_idle(db_file: Path) -> None:
    with serving(db_file, _answering([]), idle=0.5) as (path, stopped):
        assert wait_for(lambda: bool(stopped), 10)
        assert not os.path.exists(path)
    assert stopped == ["idle"]


# -- the launcher recognises the hook's command line, and only it -------------------------------------------


@pytest.mark.parametrize(
    ("argv", "db"),
    [
        (["--hook", "claude-code:UserPromptSubmit", "hooks", "prompt", "claude-code"], None),
        (["--db", "/x/e.db", "--hook", "codex:UserPromptSubmit", "hooks", "prompt", "codex"], "/x/e.db"),
        (["--hook=a:b", "--db=rel.db", "hooks", "prompt", "codex", "--dir", "/p"], "rel.db"),
        (["hooks", "prompt", "--dir=/p", "gemini-cli"], None),
    ],
)
def test_the_hooks_command_lines_are_prompts(argv: list[str], db: str | None) -> None:
    assert launch.prompt_database(argv) == db


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["recall", "hooks", "prompt"],
        ["hooks", "context", "claude-code"],
        ["hooks", "prompt"],
        ["hooks", "prompt", "a", "b"],
        ["-v", "hooks", "prompt", "claude-code"],
        ["--verbose", "hooks", "prompt", "claude-code"],
        ["--version", "hooks", "prompt", "claude-code"],
        ["--db", "a", "--db", "b", "hooks", "prompt", "claude-code"],
        ["--db", "--hook", "x", "hooks", "prompt", "claude-code"],
        ["--db=", "hooks", "prompt", "claude-code"],
        ["--db"],
        ["hooks", "prompt", "claude-code", "--help"],
        ["hooks", "prompt", "claude-code", "--dir"],
        ["hooks", "prompt", "claude-code", "--dir", "a", "--dir", "b"],
        ["hooks", "prompt", "--", "claude-code"],
        ["hooks", "prompt", "claude-code", "-k", "3"],
    ],
)
def test_anything_else_goes_to_the_cli(argv: list[str]) -> None:
    assert launch.prompt_database(argv) == launch._NOT_A_PROMPT


@pytest.mark.parametrize(
    ("argv0", "package"),
    [
        ("/venv/bin/engram", None),
        ("/x/engram_cli/__main__.py", "engram_cli"),
        ("/x/engram_cli/launch.py", "engram_cli"),
    ],
)
def test_the_program_is_named_as_click_names_it(argv0: str, package: str | None) -> None:
    from types import SimpleNamespace

    from click.core import _detect_program_name

    main = SimpleNamespace(__package__=package)
    assert launch.program_name(argv0, package) == _detect_program_name(argv0, _main=main)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("db", "env"),
    [
        ("rel/e.db", {}),
        ("~/e.db", {}),
        (None, {"ENGRAM_DB": "/tmp/other/e.db"}),
        (None, {"ENGRAM_HOME": "/tmp/h"}),
        ("/abs/e.db", {"ENGRAM_DB": "/tmp/other/e.db", "ENGRAM_HOME": "/tmp/h"}),
    ],
)
def test_the_launcher_finds_the_database_the_cli_opens(
    db: str | None, env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ENGRAM_DB", "ENGRAM_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert locate.database(db, os.environ) == os.path.realpath(Paths.resolve(db).db)


def test_a_service_key_changes_with_what_changes_the_output() -> None:
    base = {"HOME": "/h", "CLAUDE_PROJECT_DIR": "/p", "OPENAI_API_KEY": "sk-secret"}
    key = locate.service_key("/d.db", base)
    assert locate.service_key("/d.db", {**base, "CLAUDE_PROJECT_DIR": "/q"}) == key  # travels with each request
    assert locate.service_key("/d.db", {**base, "OPENAI_API_KEY": "other"}) == key  # never read, never sent
    assert locate.service_key("/d.db", {**base, "ENGRAM_NAMESPACE": "x"}) != key
    assert locate.service_key("/d.db", {**base, "NO_COLOR": "1"}) != key
    assert locate.service_key("/e.db", base) != key
    assert "OPENAI_API_KEY" not in locate.forwarded_env(base)
