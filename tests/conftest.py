"""Every test runs against its own ENGRAM_HOME, with the real store and the real bundled model."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from engram_cli.cli import app
from engram_cli.store import connect
from engram_cli.timeutil import normalize_iso

ENV_VARS = ("ENGRAM_HOME", "ENGRAM_DB", "ENGRAM_NAMESPACE", "ENGRAM_AGENT", "ENGRAM_MODEL", "NO_COLOR")


@pytest.fixture(autouse=True)
def engram_home(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    home = tmp_path / "engram-home"
    monkeypatch.setenv("ENGRAM_HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    # Nothing of the developer's own machine may leak in: no logs under ~/.claude, no global git identity.
    user_home = tmp_path_factory.mktemp("user-home")
    monkeypatch.setenv("HOME", str(user_home))
    for name in ("GIT_AUTHOR", "GIT_COMMITTER"):
        monkeypatch.setenv(f"{name}_NAME", "engram tests")
        monkeypatch.setenv(f"{name}_EMAIL", "tests@engram.invalid")
    # Commands default to the git project of the current directory: the checkout the tests run from
    # must not decide where their memories go. Outside a repository that is the global scope.
    monkeypatch.chdir(tmp_path)
    return home


@pytest.fixture
def db_path(engram_home: Path) -> Path:
    return engram_home / "engram.db"


@pytest.fixture
def rows(db_path: Path) -> Callable[..., list[tuple[Any, ...]]]:
    """Query the test database directly, the way a person with sqlite3 would."""

    def query(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        store = connect(db_path)
        try:
            return [tuple(r) for r in store.rows(sql, params)]
        finally:
            store.close()

    return query


@pytest.fixture
def backdate(db_path: Path) -> Callable[..., None]:
    """Pretend engram learned memories (all, or those of ``ids``) at ``at``, as if stored back then.

    Decay and audit count a memory's age from when it was learned, not from when it happened
    (`--at`), so a test that needs an old memory says so here.
    """

    def learned(at: str, *ids: str) -> None:
        at = normalize_iso(at)
        store = connect(db_path)
        try:
            with store.write():
                if ids:
                    for memory_id in ids:
                        store.execute("UPDATE memories SET learned_at = ? WHERE id = ?", (at, memory_id))
                else:
                    store.execute("UPDATE memories SET learned_at = ?", (at,))
        finally:
            store.close()

    return learned


@pytest.fixture
def git_repo(tmp_path: Path) -> Callable[[str], Path]:
    """Makes a real git repository ``tmp_path/NAME`` (with an empty ``src/app`` inside) and returns it.

    Commands inside one default to its project's namespace; the tests otherwise run outside any.
    """

    def make(name: str) -> Path:
        repo = tmp_path / name
        (repo / "src" / "app").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=30, capture_output=True)
        return repo

    return make


class Cli:
    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | bytes | None = None, ok: bool = True) -> Any:
        result = self.runner.invoke(app, list(args), input=input, catch_exceptions=False)
        if ok and result.exit_code != 0:
            raise AssertionError(
                f"engram {' '.join(args)} exited {result.exit_code}:\n{result.output}\n{result.stderr}"
            )
        return result


@pytest.fixture
def cli() -> Cli:
    return Cli()


@pytest.fixture
def engram(engram_home: Path) -> Iterator[Any]:
    from engram_cli import Engram

    with Engram.open() as mem:
        yield mem


def pytest_report_header() -> str:
    return f"ENGRAM test models dir: {os.environ.get('ENGRAM_MODELS_DIR', '(bundled)')}"


@pytest.fixture(params=["every pair", "cell search"])
def pair_search(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """How compact and audit find similar pairs: every pair (small groups), or the cell search that
    large groups use, forced onto a small store with one row per cell."""
    from engram_cli.memory import neighbours

    if request.param == "cell search":
        monkeypatch.setattr(neighbours, "EXACT_ROWS", 0)
        monkeypatch.setattr(neighbours, "CELL", 1)
    return str(request.param)
