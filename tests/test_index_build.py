"""A process that may not build the vector index (the per-prompt hook) searches sqlite-vec until a file exists.

Building the index reads every vector of the database: minutes at a million memories, far past a
prompt's time limit. So the hook never builds it: it uses a usable file when there is one, and
sqlite-vec's exact search otherwise, with the same answers; the warm service builds the file in a
background thread on a connection of its own, answering prompts all the while.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from warm_service import serving, wait_for

from engram_cli import Engram
from engram_cli.store import connect
from engram_cli.store.db import Store
from engram_cli.store.knn import IndexOptions
from engram_cli.store.vector_index import index_file
from engram_cli.warm import client, locate
from engram_cli.warm.protocol import Reply, Request, Stream

MODEL = "test-model"
DIM = 32
NAMESPACES = ["alpha", "beta", "gamma"]
DEPLOY = "Deploys of the webshop go through make release after a green CI run"
PREFERENCE = "Answer in British English"
WAIT_S = 60.0  # only a bound on waiting for a thread on a busy machine; nothing is timed


def _open(path: Path, cache: Path, *, build: bool) -> Store:
    return connect(path, create_dirs=True, index=IndexOptions(cache_dir=cache, build=build))


def _fill(store: Store, n: int, start: int = 1, seed: int = 1) -> None:
    vectors = np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)
    with store.write():
        for i, vector in enumerate(vectors):
            store.vectors.put(
                MODEL, start + i, vector, namespace=NAMESPACES[i % 3], status="active" if i % 4 else "archived",
                memory_type="semantic", agent="user",
            )  # fmt: skip


FILTERS: list[dict[str, Any]] = [
    {},
    {"namespaces": ["beta"]},
    {"namespaces": ["alpha", "gamma"]},
    {"namespaces": ["alpha", "beta", "gamma"], "statuses": ["active"]},
]


def _answers(store: Store, k: int = 10) -> list[list[int]]:
    queries = np.random.default_rng(99).normal(size=(4, DIM)).astype(np.float32)
    return [[pk for pk, _ in hits] for f in FILTERS for hits in store.vectors.knn_many(MODEL, queries, k, **f)]


def _files(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.idx")) if cache.exists() else []


# -- the store -----------------------------------------------------------------------------------------------


def test_without_a_file_searches_run_on_sqlite_vec_and_write_no_file(db_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    quick = _open(db_path, cache, build=False)
    builder = _open(db_path, tmp_path / "elsewhere", build=True)
    try:
        _fill(quick, 300)
        assert quick.vectors.index(MODEL) is None
        # The true top k over all the namespaces asked for, as the index answers (vec0 answers k per namespace).
        assert _answers(quick) == _answers(builder)
        assert all(len(hits) == 10 for hits in _answers(quick))
        assert _files(cache) == []
    finally:
        quick.close()
        builder.close()


def test_a_file_built_meanwhile_is_used_and_kept_up_with_but_not_rewritten(db_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    quick = _open(db_path, cache, build=False)
    builder = _open(db_path, cache, build=True)
    try:
        _fill(quick, 300)
        assert quick.vectors.index(MODEL) is None
        builder.vectors.warm(MODEL)
        (file,) = _files(cache)
        written = file.read_bytes()
        index = quick.vectors.index(MODEL)  # the same store object picks the new file up
        assert index is not None and index.saved
        assert _answers(quick) == _answers(builder)
        # Changes since the file are caught up with from the log, in memory: the file is left as it was.
        _fill(quick, 400, start=301, seed=2)
        assert quick.vectors.index(MODEL) is not None
        caught_up = _answers(quick)
        assert file.read_bytes() == written
        assert max(pk for hits in caught_up for pk in hits) > 300
        with contextlib.closing(_open(db_path, tmp_path / "elsewhere", build=True)) as reference:
            assert caught_up == _answers(reference)
    finally:
        quick.close()
        builder.close()


def test_a_file_of_another_database_is_not_used_nor_rebuilt(db_path: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    other = tmp_path / "other.db"
    with contextlib.closing(_open(other, cache, build=True)) as foreign:
        _fill(foreign, 50, seed=3)
        foreign.vectors.warm(MODEL)
    (built,) = _files(cache)
    with contextlib.closing(_open(db_path, cache, build=False)) as quick:
        _fill(quick, 200)
        table = quick.vectors.table_for(MODEL)
        assert table is not None
        mine = index_file(cache, db_path, table)
        mine.parent.mkdir(parents=True)
        shutil.copyfile(built, mine)
        assert quick.vectors.index(MODEL) is None
        with contextlib.closing(_open(db_path, tmp_path / "fresh", build=True)) as builder:
            assert _answers(quick) == _answers(builder)
        assert mine.read_bytes() == built.read_bytes()


# -- the hook's cold path -------------------------------------------------------------------------------------


def _prompt(cli: Any, repo: Path, prompt: str) -> Any:
    payload = json.dumps({"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": prompt,
                          "cwd": str(repo)})  # fmt: skip
    return cli("hooks", "prompt", "claude-code", input=payload)


def test_the_prompt_hook_builds_no_index_and_answers_as_with_one(
    cli: Any, git_repo: Any, engram_home: Path, rows: Any
) -> None:
    repo: Path = git_repo("webshop")
    cli("add", DEPLOY, "-n", "webshop")
    cli("add", PREFERENCE, "-g", "-i", "0.8")
    cli("add", "Billing exports run nightly at two", "-n", "billing")
    vectors = engram_home / "cache" / "vectors"
    assert _files(vectors)  # writing built it
    shutil.rmtree(vectors)  # always safe: it is a cache
    # Each prompt counts its memories as accessed: they are put back after the first, so both rank the same rows.
    kept = rows("SELECT access_count, last_access_at, decay_score, pk FROM memories")
    without = _prompt(cli, repo, "how do we deploy the webshop?")
    assert DEPLOY in without.stdout
    assert _files(vectors) == []
    with Engram.open() as mem:
        mem.build_vector_index()
    assert _files(vectors)
    with Engram.open() as mem, mem.store.write():
        for row in kept:
            mem.store.execute(
                "UPDATE memories SET access_count = ?, last_access_at = ?, decay_score = ? WHERE pk = ?", row
            )
    with_index = _prompt(cli, repo, "how do we deploy the webshop?")
    assert with_index.stdout == without.stdout


# -- the warm service ------------------------------------------------------------------------------------------


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="ei-", dir="/tmp"))  # socket paths must stay short
    path.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _request() -> Request:
    utf8 = Stream("utf-8", "strict")
    return Request(["hooks", "prompt", "claude-code"], "engram", "/", {}, b"how do we deploy?", utf8, utf8, utf8)


@pytest.mark.skipif(not locate.supported(), reason="the warm path needs Linux")
def test_the_service_answers_while_it_builds_the_index_and_from_the_index_after(
    engram_home: Path, db_path: Path, runtime_dir: Path
) -> None:
    with Engram.open() as mem:
        mem.add(DEPLOY, namespace="webshop")
        mem.add(PREFERENCE, global_scope=True)
    vectors = engram_home / "cache" / "vectors"
    shutil.rmtree(vectors)
    go, done = threading.Event(), threading.Event()

    def build() -> None:
        assert go.wait(WAIT_S)
        with Engram.open() as mem:  # a connection of the thread's own
            mem.build_vector_index()
        done.set()

    def answer(request: Request) -> Reply:
        # What a prompt does in the service: open the store without building, recall.
        with Engram.open(build_index=False) as mem:
            hits = mem.recall("how do we deploy the webshop?", namespace="webshop", k=1, bump=False)
            ((model, _),) = mem.store.vectors.in_use()
            used = mem.store.vectors.index(model) is not None
        return Reply(0, f"{used} {hits[0].memory.content}".encode(), b"")

    with serving(db_path, answer, background=build, within=WAIT_S) as (path, _):
        before = client.ask(path, _request())
        assert before is not None and before.stdout == f"False {DEPLOY}".encode()
        assert _files(vectors) == []
        go.set()
        assert wait_for(done.is_set, WAIT_S)
        after = client.ask(path, _request())
        assert after is not None and after.stdout == f"True {DEPLOY}".encode()
        assert _files(vectors)


@pytest.mark.skipif(not locate.supported(), reason="the warm path needs Linux")
def test_a_failed_background_build_leaves_the_service_answering(db_path: Path, runtime_dir: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    db_path.write_bytes(b"a stand-in: the answer below does not open it")
    failed = threading.Event()

    def build() -> None:
        failed.set()
        raise RuntimeError("the disk is full")

    with serving(db_path, lambda request: Reply(0, b"answered", b""), background=build, within=WAIT_S) as (path, _):
        assert wait_for(failed.is_set, WAIT_S)
        for _ in range(2):
            reply = client.ask(path, _request())
            assert reply is not None and reply.stdout == b"answered"
