"""The embedding cache: each text is embedded once across calls, files and runs, and the cache never gets in the way."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram_cli import Engram
from engram_cli.embed import load_embedder, load_manifest
from engram_cli.embed.cache import CachedEmbedder, cache_path, model_key, text_digest
from engram_cli.embed.onnx import OnnxEmbedder
from engram_cli.store.embed_cache import VectorCache

AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
TEXTS = [
    "Deploys go through `make release`; never push tags by hand.",
    "短",
    "The staging database is read-only for the payments team, so migrations run against a copy first.",
    "数据库迁移在周五之前完成",
    "ok",
]


class Calls:
    """The texts each call of the real ONNX embedder was given."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    @property
    def texts(self) -> list[str]:
        return [t for batch in self.batches for t in batch]


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    seen = Calls()
    original = OnnxEmbedder.embed_batch

    def counted(self: OnnxEmbedder, texts: Sequence[str], **kwargs: Any) -> np.ndarray:
        seen.batches.append(list(texts))
        return original(self, texts, **kwargs)

    monkeypatch.setattr(OnnxEmbedder, "embed_batch", counted)
    return seen


@pytest.fixture
def cache(tmp_path: Path) -> Iterator[VectorCache]:
    made = VectorCache(tmp_path / "cache" / "embeddings.db", max_entries=1000)
    yield made
    made.close()


def _cached(cache: VectorCache) -> CachedEmbedder:
    embedder = load_embedder()
    return CachedEmbedder(embedder, load_manifest(embedder.model_id), cache)


def _fresh(texts: Sequence[str], kind: str = "passage") -> np.ndarray:
    """Each text embedded on its own, without any cache."""
    embedder = load_embedder()
    return np.stack([embedder.embed_batch([t], kind=kind)[0] for t in texts])  # type: ignore[arg-type]


def test_a_text_is_embedded_once_across_calls_and_cached_vectors_equal_fresh_ones(
    cache: VectorCache, calls: Calls
) -> None:
    embedder = _cached(cache)
    first = embedder.embed_batch([TEXTS[0], TEXTS[1], TEXTS[0]])
    assert calls.batches == [[TEXTS[0], TEXTS[1]]]  # a text repeated in a call is embedded once
    second = embedder.embed_batch([TEXTS[1], TEXTS[2], TEXTS[0]])
    assert calls.batches[1:] == [[TEXTS[2]]]  # only the miss reaches the model
    assert cache.count() == 3
    np.testing.assert_allclose(first, _fresh([TEXTS[0], TEXTS[1], TEXTS[0]]), atol=1e-6)
    np.testing.assert_allclose(second, _fresh([TEXTS[1], TEXTS[2], TEXTS[0]]), atol=1e-6)
    assert second.dtype == np.float32 and second.shape == (3, embedder.dim)


def test_rows_come_back_in_the_order_given_after_the_model_sorts_them_by_length(
    cache: VectorCache, calls: Calls
) -> None:
    embedder = _cached(cache)
    embedder.embed_batch([TEXTS[2], TEXTS[4]])  # two of them cached, the rest not
    mixed = [TEXTS[2], TEXTS[1], TEXTS[4], TEXTS[0], TEXTS[3], TEXTS[1]]
    out = embedder.embed_batch(mixed)
    assert calls.batches[-1] == [TEXTS[1], TEXTS[0], TEXTS[3]]
    np.testing.assert_allclose(out, _fresh(mixed), atol=1e-6)
    # The model itself sorts a call by token count into batches and puts the rows back.
    np.testing.assert_allclose(load_embedder().embed_batch(mixed, batch_size=2), _fresh(mixed), atol=1e-6)


def test_queries_and_passages_are_kept_apart_because_the_model_sees_different_text(
    cache: VectorCache, calls: Calls
) -> None:
    embedder = _cached(cache)
    passage = embedder.embed_batch([TEXTS[0]], kind="passage")
    query = embedder.embed_batch([TEXTS[0]], kind="query")
    assert len(calls.batches) == 2
    np.testing.assert_allclose(query, _fresh([TEXTS[0]], kind="query"), atol=1e-6)
    assert not np.allclose(passage, query)
    with pytest.raises(Exception, match="kind must be"):
        embedder.embed_batch(["x"], kind="question")  # type: ignore[arg-type]


def test_another_model_or_a_rebuilt_one_never_reads_the_old_vectors(cache: VectorCache, calls: Calls) -> None:
    embedder = load_embedder()
    manifest = load_manifest(embedder.model_id)
    CachedEmbedder(embedder, manifest, cache).embed_batch([TEXTS[0]])
    rebuilt = replace(manifest, files={**manifest.files, "model.onnx": "0" * 64})
    assert model_key(rebuilt) != model_key(manifest) and model_key(manifest).startswith(manifest.id + "@")
    CachedEmbedder(embedder, rebuilt, cache).embed_batch([TEXTS[0]])
    assert calls.batches == [[TEXTS[0]], [TEXTS[0]]]
    CachedEmbedder(embedder, manifest, cache).embed_batch([TEXTS[0]])  # the first model's entry is still there
    assert len(calls.batches) == 2


def _vec(i: int) -> np.ndarray:
    return np.full(4, float(i), dtype=np.float32)


def test_the_cache_keeps_at_most_its_size_dropping_the_least_recently_used(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "c.db", max_entries=3)
    keys = [hashlib.sha256(bytes([i])).digest() for i in range(5)]
    cache.put("m", [(keys[i], _vec(i)) for i in range(3)])
    assert set(cache.get("m", [keys[0]], 4)) == {keys[0]}  # reading 0 makes it the most recently used
    cache.put("m", [(keys[3], _vec(3))])
    cache.put("m", [(keys[4], _vec(4))])
    assert cache.count() == 3
    found = cache.get("m", keys, 4)
    assert set(found) == {keys[0], keys[3], keys[4]}
    assert found[keys[4]].tolist() == [4.0] * 4
    assert cache.get("m", keys, 8) == {}  # a vector of another length is no hit
    cache.close()


def test_a_size_of_zero_turns_the_cache_off(tmp_path: Path) -> None:
    cache = VectorCache(tmp_path / "c.db", max_entries=0)
    cache.put("m", [(b"k" * 32, _vec(1))])
    assert cache.get("m", [b"k" * 32], 4) == {} and not cache.usable
    assert not (tmp_path / "c.db").exists()


def test_a_damaged_cache_file_is_replaced_and_embedding_goes_on(cache: VectorCache, calls: Calls) -> None:
    cache.path.parent.mkdir(parents=True)
    cache.path.write_bytes(b"this is not a database" * 500)
    out = _cached(cache).embed_batch([TEXTS[0]])
    np.testing.assert_allclose(out, _fresh([TEXTS[0]]), atol=1e-6)
    assert cache.count() == 1  # made again, and holding the new vector
    assert cache.path.read_bytes().startswith(b"SQLite format 3\x00")


def test_a_cache_that_cannot_be_written_costs_only_speed(tmp_path: Path, calls: Calls) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be", encoding="utf-8")
    cache = VectorCache(blocker / "embeddings.db", max_entries=10)
    embedder = _cached(cache)
    expected = _fresh([TEXTS[0]])
    calls.batches.clear()
    for _ in range(2):
        np.testing.assert_allclose(embedder.embed_batch([TEXTS[0]]), expected, atol=1e-6)
    assert len(calls.batches) == 2 and cache.count() == 0


def test_the_cache_is_emptied_when_its_file_has_another_layout(tmp_path: Path) -> None:
    import apsw

    path = tmp_path / "c.db"
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE vectors (whatever TEXT); PRAGMA user_version = 99")
    conn.close()
    cache = VectorCache(path, max_entries=10)
    cache.put("m", [(b"k" * 32, _vec(1))])
    assert cache.get("m", [b"k" * 32], 4)[b"k" * 32].tolist() == [1.0] * 4
    cache.close()


WRITER = """
import sys
import numpy as np
from pathlib import Path
from engram_cli.store.embed_cache import VectorCache

cache = VectorCache(Path(sys.argv[1]), max_entries=100000)
me = int(sys.argv[2])
for round in range(40):
    rows = [(bytes([me, round, i]) * 8 + bytes(8), np.full(384, me + round, dtype=np.float32)) for i in range(25)]
    cache.put("m", rows)
    got = cache.get("m", [key for key, _ in rows], 384)
    assert len(got) == len(rows), (me, round, len(got))
print("done")
"""


def test_two_processes_share_the_cache(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(me)], stdout=subprocess.PIPE, text=True)
        for me in (1, 2)
    ]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0] and outs == ["done\n", "done\n"]
    cache = VectorCache(path, max_entries=100000)
    assert cache.count() == 2 * 40 * 25
    cache.close()


# -- through engram ---------------------------------------------------------------------------


def test_add_many_embeds_each_distinct_text_once_in_one_call_and_keeps_the_order(engram: Engram, calls: Calls) -> None:
    items = [{"content": f"Service {i % 50} listens on port {7000 + i % 50}"} for i in range(130)]
    results = engram.add_many(items, batch_size=16, no_merge=True)
    assert len(calls.batches) == 1 and len(calls.texts) == len(set(calls.texts)) == 50
    assert [r.memory.content for r in results] == [i["content"] for i in items]
    assert [r.action for r in results[:50]] == ["created"] * 50 and {r.action for r in results[50:]} == {"duplicate"}


def test_the_cache_spans_databases_and_runs(engram_home: Path, tmp_path: Path, calls: Calls) -> None:
    items = [{"content": t} for t in TEXTS]
    with Engram.open(tmp_path / "one.db") as mem:
        mem.add_many(items)
    with Engram.open(tmp_path / "two.db") as mem:
        mem.add_many(items)
        assert mem.embedding_cache().path == cache_path(engram_home / "cache")
        stored = {r.memory.content: r.memory for r in mem.add_many(items)}
    assert len(calls.texts) == len(TEXTS)  # the second database's texts all came from the cache
    assert set(stored) == set(TEXTS)


def test_only_redacted_text_is_hashed_and_no_text_is_stored(engram: Engram, engram_home: Path) -> None:
    secret_text = f"The staging key is aws_secret_access_key = {AWS_SECRET} for deploys"
    result = engram.add(secret_text)
    assert AWS_SECRET not in result.memory.content
    engram.embedding_cache().close()
    raw = b"".join(p.read_bytes() for p in (engram_home / "cache").glob("embeddings.db*"))
    assert b"staging" not in raw and AWS_SECRET.encode() not in raw
    manifest = load_manifest(engram.active_model)
    cache = VectorCache(cache_path(engram_home / "cache"), max_entries=10)
    key = model_key(manifest)
    prefix = manifest.prefix("passage")
    assert cache.get(key, [text_digest(prefix, result.memory.content)], manifest.dim)
    assert not cache.get(key, [text_digest(prefix, secret_text)], manifest.dim)
    cache.close()


def _line(kind: str, uuid: str, at: str, text: str, cwd: str, session: str) -> str:
    message: dict[str, Any] = {"role": kind, "content": text if kind == "user" else [{"type": "text", "text": text}]}
    if kind == "assistant":
        message["id"] = f"msg_{session}_{uuid}"
    return json.dumps(
        {"type": kind, "uuid": f"{session}-{uuid}", "sessionId": session, "cwd": cwd, "timestamp": at,
         "message": message}
    )  # fmt: skip


def _logs(home: Path, sessions: int) -> None:
    """Claude Code sessions that all repeat one instruction and each add one of their own."""
    project = home / ".claude" / "projects" / "-src-webshop"
    project.mkdir(parents=True)
    for n in range(sessions):
        session = f"s-{n}"
        lines = [
            _line("user", "u1", f"2026-11-0{1 + n}T09:00:00.000Z",
                  "Remember that we always deploy with `make release`.", "/src/webshop", session),
            _line("assistant", "a1", f"2026-11-0{1 + n}T09:00:05.000Z", "Noted.", "/src/webshop", session),
            _line("user", "u2", f"2026-11-0{1 + n}T09:01:00.000Z",
                  f"Remember that service {n} runs on port {8000 + n}.", "/src/webshop", session),
            _line("assistant", "a2", f"2026-11-0{1 + n}T09:01:05.000Z", "I will keep that in mind.",
                  "/src/webshop", session),
        ]  # fmt: skip
        (project / f"{session}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_ingest_of_several_files_embeds_each_distinct_text_once(
    tmp_path: Path, engram_home: Path, calls: Calls
) -> None:
    home = tmp_path / "home"
    _logs(home, 5)
    with Engram.open() as mem:
        report = mem.ingest("claude-code", env={}, home=home)
    part = report.sources[0]
    assert part.files == 5 and not part.errors and part.count("created") >= 5
    assert calls.texts and len(calls.texts) == len(set(calls.texts))
    assert len(calls.batches) == 1  # the five files' texts went to the model together
    with Engram.open(tmp_path / "again.db") as mem:  # another database: everything comes from the cache
        again = mem.ingest("claude-code", env={}, home=home)
        assert again.sources[0].count("created") == part.count("created")
    assert len(calls.batches) == 1


def test_embed_cache_entries_zero_turns_the_cache_off(engram: Engram, engram_home: Path, calls: Calls) -> None:
    s = engram.config.settings
    engram.config = replace(engram.config, settings=replace(s, embed=replace(s.embed, cache_entries=0)))
    engram.add_many([{"content": TEXTS[0]}])
    engram.add_many([{"content": TEXTS[0]}], no_merge=True)
    assert not cache_path(engram_home / "cache").exists()
    assert engram.embedding_cache().max_entries == 0


def test_embed_cache_entries_bounds_the_cache_engram_uses(engram: Engram, calls: Calls) -> None:
    s = engram.config.settings
    engram.config = replace(engram.config, settings=replace(s, embed=replace(s.embed, cache_entries=2)))
    engram.add_many([{"content": t} for t in TEXTS], no_merge=True)
    assert engram.embedding_cache().count() == 2
