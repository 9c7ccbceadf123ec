"""forget --hard: the text leaves every place engram copied it to, and only that text leaves."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from engram_cli import Engram
from engram_cli.embed import load_embedder
from engram_cli.memory.manage import without_sentences

E5 = "multilingual-e5-small-q4-v1"
OLD = "2026-11-01T10:00:00Z"
TWO_DAYS_LATER = "2026-11-03T10:00:00Z"
MARKER = "zanzibarquill"
# Two episodes compact puts in one cluster. Its summary is the first sentence of the first one
# (the most shared words), so the new fact quotes the episode that holds the marker.
WITH_MARKER = (
    f"Deploy failed: docker build ran out of disk on the CI runner. The runner was {MARKER}, the cache lived there."
)
OTHER = "CI deploy broke again, runner disk full during docker build. Added a prune step before the build."


def _episodes(engram: Engram, *texts: str) -> list[str]:
    return [engram.add(t, type="episodic", created_at=OLD, no_merge=True).id for t in texts]


def _keyword_hits(engram: Engram, query: str) -> list[str]:
    """What the keyword index alone finds, archived memories included (vectors always return a nearest one)."""
    settings = replace(engram.recall_settings(), vector_weight=0.0, cross_weight=0.0, time_weight=0.0)
    hits = engram.recall(query, settings=settings, include_archived=True, bump=False)
    return [h.memory.id for h in hits]


def _tables_holding(engram: Engram, needle: str) -> list[str]:
    """Every table (the index and vector tables included) with a value that contains ``needle``."""
    found = []
    for (table,) in engram.store.rows("SELECT name FROM sqlite_master WHERE type = 'table'"):
        for row in engram.store.rows(f'SELECT * FROM "{table}"'):
            if any(
                (isinstance(v, str) and needle.lower() in v.lower()) or (isinstance(v, bytes) and needle.encode() in v)
                for v in row
            ):
                found.append(table)
                break
    return found


def _file_bytes(db_path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in db_path.parent.glob(db_path.name + "*") if p.is_file())


def test_forgetting_a_compacted_episode_removes_it_from_the_fact(engram: Engram, db_path: Path) -> None:
    marked, other = _episodes(engram, WITH_MARKER, OTHER)
    report = engram.compact(now=TWO_DAYS_LATER)
    (cluster,) = report.clusters
    fact_id = cluster.memory_id
    assert fact_id not in (marked, other) and not cluster.promoted
    assert WITH_MARKER.split(". ")[0] in engram.get(fact_id).content
    assert set(_keyword_hits(engram, MARKER)) == {fact_id, marked}

    (result,) = engram.forget(marked, hard=True)
    assert (result.action, result.edited, result.consolidated) == ("purged", [fact_id], [])

    assert _keyword_hits(engram, MARKER) == []
    assert _tables_holding(engram, MARKER) == []
    assert MARKER.encode() not in _file_bytes(db_path)  # forget merged the keyword index and checkpointed the WAL
    # The fact no longer quotes the purged episode; it was summarised again from the one it still carries.
    fact = engram.get(fact_id)
    assert "Deploy failed" not in fact.content and fact.content in OTHER
    assert [(s.kind, s.ref, s.content) for s in fact.sources] == [("compact", other, OTHER)]
    assert set(_keyword_hits(engram, "prune step")) == {fact_id, other}
    stored = engram.store.vectors.get(E5, [fact.pk])[fact.pk]
    expected = load_embedder(E5).embed_batch([fact.content], kind="passage")[0]
    assert float(np.dot(stored, expected)) > 0.99
    assert engram.history(fact_id)[1][-1].note == (
        f"wording rewritten without the words of {marked[:8]}, purged with forget --hard"
    )
    assert engram.audit().problems == []


def test_a_fact_made_only_of_purged_words_goes_with_them(engram: Engram, rows: Any) -> None:
    marked, other = _episodes(engram, WITH_MARKER, OTHER)
    fact_id = engram.compact(now=TWO_DAYS_LATER).clusters[0].memory_id
    (first,) = engram.forget(other, hard=True)  # the fact never quoted it: only its source goes
    assert first.edited == [fact_id] and engram.get(fact_id).content == WITH_MARKER.split(" The runner")[0]

    results = engram.forget(marked, hard=True)
    assert [(r.id, r.action) for r in results] == [(marked, "purged"), (fact_id, "purged")]
    assert results[1].note == f"its wording was {marked[:8]}'s words only" and results[0].edited == []
    assert rows("SELECT count(*) FROM memories") == [(0,)]
    assert rows("SELECT note FROM events WHERE memory_id = ? ORDER BY pk DESC LIMIT 1", (fact_id,)) == [
        (f"purged with forget --hard; content removed; its wording was {marked[:8]}'s words only",)
    ]


def test_purging_a_promoted_episode_leaves_the_others_their_own_text(engram: Engram, rows: Any) -> None:
    texts = [
        "Fixed the flaky upload test by pinning the S3 mock clock",
        "The upload test was flaky again; the S3 mock clock drifted, pinned it in conftest",
        "Upload test flakiness came back after the boto upgrade; re-pinned the S3 mock clock",
    ]
    ids = _episodes(engram, *texts)
    (cluster,) = engram.compact(now=TWO_DAYS_LATER).clusters
    assert cluster.promoted and cluster.memory_id == ids[0]

    (result,) = engram.forget(ids[0], hard=True)
    # The fact was the promoted episode itself: it goes. The others stay archived (a purge must not bring
    # similar words back into recall) and no longer point at it.
    assert result.consolidated == ids[1:] and result.edited == []
    for memory_id, text in zip(ids[1:], texts[1:], strict=True):
        memory = engram.get(memory_id)
        assert (memory.content, memory.status, memory.consolidated_into) == (text, "archived", None)
        last = engram.history(memory_id)[1][-1]
        assert (last.before, last.after) == ({"consolidated_into": ids[0]}, {"consolidated_into": None})
    assert rows("SELECT count(*) FROM sources WHERE ref = ? OR content = ?", (ids[0], texts[0])) == [(0,)]


def test_supplements_and_history_that_quote_the_text_lose_it(engram: Engram, rows: Any) -> None:
    wording = "The lab door code is 4417, ask facilities for a badge"
    survivor = engram.add(wording, importance=0.3).memory
    merged = engram.add("The lab door code is 4417, ask facilities for a new badge", importance=0.6)
    assert merged.action == "merged" and merged.id == survivor.id  # it took the new wording...
    assert engram.history(survivor.id)[1][-1].before == {
        "importance": 0.3, "access_count": 0, "status": "active", "content": wording,
    }  # fmt: skip
    # ...and the old one, remembered again under another agent, is a memory of its own.
    twin = engram.add(wording, agent="ci-bot").memory
    unrelated = engram.add("Staging runs on port 5433").memory
    with engram.store.write():
        engram.store.events.add(survivor.id, "updated", OLD, note=f"the user pasted: {wording}", actor="cli")

    (result,) = engram.forget(twin.id, hard=True)
    assert result.edited == [survivor.id]
    assert rows("SELECT count(*) FROM sources WHERE content = ?", (wording,)) == [(0,)]
    (merge,) = [e for e in engram.history(survivor.id)[1] if e.kind == "merged"]
    assert merge.before == {"importance": 0.3, "access_count": 0, "status": "active", "content": None}
    assert engram.get(survivor.id).content.endswith("a new badge")  # its own wording stays
    assert engram.get(unrelated.id).version == 1
    assert engram.history(survivor.id)[1][-1].note == "the user pasted: [forgotten]"
    assert all(wording not in json.dumps(row) for row in rows("SELECT before, after, note FROM events"))


def test_a_neighbour_whose_context_quoted_the_text_is_embedded_again(engram: Engram) -> None:
    turn = "use the blue deploy key for staging"
    gone = engram.add(turn, no_merge=True).memory
    neighbour = engram.add(
        "which key was it again?", metadata={"context": f"{turn} thanks", "turn": 2}, no_merge=True
    ).memory

    (result,) = engram.forget(gone.id, hard=True)
    assert result.edited == [neighbour.id]
    kept = engram.get(neighbour.id)
    assert kept.metadata == {"context": "thanks", "turn": 2}
    stored = engram.store.vectors.get(E5, [kept.pk])[kept.pk]
    expected = load_embedder(E5).embed_batch(["which key was it again?\nthanks"], kind="passage")[0]
    assert float(np.dot(stored, expected)) > 0.99


def test_the_cli_says_which_other_memories_it_edited(cli: Any) -> None:
    first = cli("add", "The release train leaves on Thursdays", "--importance", "0.3").stdout.strip()
    cli("add", "The release train leaves on Thursdays at noon", "--importance", "0.3")  # kept as a supplement
    twin = cli("add", "The release train leaves on Thursdays at noon", "--agent", "ci-bot").stdout.strip()
    out = cli("forget", twin, "--hard").stdout.splitlines()
    assert out == [f"{twin}\tpurged", f"  removed its text from 1 other memory: {first[:8]}"]
    listed = json.loads(cli("forget", first, "--hard", "--json").stdout)
    assert listed == [{"id": first, "action": "purged", "edited": [], "consolidated": [], "note": None}]


def test_without_sentences_keeps_what_another_text_also_says() -> None:
    purged = "Build broke on the runner. The token was rotated. 部署失败了。"
    assert without_sentences("Build broke on the runner. The token was rotated.", purged, []) == ""
    shared = ["Build broke on the runner. Cleaned the cache."]
    assert without_sentences("Build broke on the runner. The token was rotated.", purged, shared) == (
        "Build broke on the runner."
    )
    assert without_sentences("Build broke on the runner. 部署失败了。 Other words.", purged, shared) == (
        "Build broke on the runner. Other words."
    )
    # compact clips a long summary at a word: a clipped last sentence is the start of one of them.
    assert without_sentences("Cleaned the cache. The token was…", purged, []) == "Cleaned the cache."
    assert without_sentences("Cleaned the cache. Something else…", purged, []) == "Cleaned the cache. Something else…"
    assert without_sentences("Nothing of it here.", purged, []) == "Nothing of it here."
