"""edit: text, importance, type, tags and namespace changed in place, in one transaction with one event."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.errors import ConflictError, InvalidInput, NotFound, UnknownNamespace, UsageError


def _keyword_only(engram: Engram) -> Any:
    return replace(engram.recall_settings(), vector_weight=0.0, cross_weight=0.0)


def test_new_text_is_embedded_and_indexed_again_and_the_event_holds_before_and_after(engram: Engram, rows: Any) -> None:
    memory = engram.add("CI uses Node 20", tags=["ci"]).memory
    result = engram.edit(memory.id[:8], text="CI uses Node 22 on the arm64 runners")
    assert result.changed == ["content"] and result.memory.id == memory.id
    assert result.memory.version == memory.version + 1
    assert rows("SELECT content, content_hash != ? FROM memories", (memory.content_hash,)) == [
        ("CI uses Node 22 on the arm64 runners", 1)
    ]
    keyword = _keyword_only(engram)
    assert [h.memory.id for h in engram.recall("arm64", bump=False, settings=keyword)] == [memory.id]
    top = engram.recall("which runners does CI use", k=1, bump=False)[0]
    assert top.memory.id == memory.id and top.explain["vector"] is not None
    events = rows("SELECT before, after, note, actor FROM events WHERE memory_id = ? AND kind = 'edited'", (memory.id,))
    assert [(json.loads(b), json.loads(a), n, actor) for b, a, n, actor in events] == [
        ({"content": "CI uses Node 20"}, {"content": "CI uses Node 22 on the arm64 runners"}, "edited", "user")
    ]
    # The source that stood for "the current wording" keeps the words it stood for.
    assert rows("SELECT content FROM sources WHERE memory_pk = ?", (memory.pk,)) == [("CI uses Node 20",)]


def test_the_old_words_leave_the_keyword_index(engram: Engram) -> None:
    memory = engram.add("The build server is called zeppelin").memory
    engram.edit(memory.id, text="The build server is called hindenburg")
    keyword = _keyword_only(engram)
    assert engram.recall("zeppelin", bump=False, settings=keyword) == []
    assert [h.memory.id for h in engram.recall("hindenburg", bump=False, settings=keyword)] == [memory.id]


def test_importance_type_and_tags(engram: Engram, rows: Any) -> None:
    memory = engram.add("Run the linters before pushing", tags=["ci", "lint"]).memory
    result = engram.edit(memory.id, importance=0.9, type="procedural", tags=["Git"], untag=["ci"])
    assert result.changed == ["importance", "tags", "type"]
    assert (result.memory.importance, result.memory.type, result.memory.tags) == (0.9, "procedural", ["git", "lint"])
    table = rows("SELECT vec_table FROM embedding_models")[0][0]
    assert rows(f"SELECT memory_type FROM {table} WHERE memory_pk = ?", (memory.pk,)) == [("procedural",)]
    assert [h.memory.id for h in engram.recall("linters", type="procedural", bump=False)] == [memory.id]
    ((before, after),) = rows("SELECT before, after FROM events WHERE kind = 'edited'")
    assert json.loads(before) == {"importance": 0.5, "type": "semantic", "tags": ["ci", "lint"]}
    assert json.loads(after) == {"importance": 0.9, "type": "procedural", "tags": ["git", "lint"]}


def test_moving_to_another_namespace_moves_the_vector_too(engram: Engram, rows: Any) -> None:
    memory = engram.add("The staging database runs on port 5433", namespace="webshop").memory
    result = engram.edit(memory.id, namespace="global")
    assert result.changed == ["namespace"] and result.memory.namespace == "global"
    table = rows("SELECT vec_table FROM embedding_models")[0][0]
    assert rows(f"SELECT namespace FROM {table} WHERE memory_pk = ?", (memory.pk,)) == [("global",)]
    with pytest.raises(UnknownNamespace):  # nothing is left in it
        engram.recall("staging port", namespace="webshop", bump=False)
    assert [h.memory.id for h in engram.recall("staging port", namespace="global", bump=False)] == [memory.id]


def test_an_edit_that_would_duplicate_another_memory_is_refused(engram: Engram, rows: Any) -> None:
    kept = engram.add("Deploys go through make release").memory
    other = engram.add("Deploys go through the release workflow").memory
    with pytest.raises(InvalidInput, match="already says exactly this") as caught:
        engram.edit(other.id, text="deploys go through  MAKE release")
    assert caught.value.hint is not None and kept.short_id in caught.value.message
    moved = engram.add("Deploys go through make release", namespace="webshop").memory
    with pytest.raises(InvalidInput, match="already says exactly this"):
        engram.edit(moved.id, namespace=kept.namespace)
    assert rows("SELECT count(*) FROM events WHERE kind = 'edited'") == [(0,)]
    assert engram.get(other.id).content == "Deploys go through the release workflow"


def test_the_version_check(engram: Engram) -> None:
    memory = engram.add("Backups run nightly at 02:00").memory
    engram.edit(memory.id, importance=0.7, version=memory.version)
    with pytest.raises(ConflictError, match=f"version {memory.version + 1}, not {memory.version}"):
        engram.edit(memory.id, importance=0.2, version=memory.version)
    assert engram.get(memory.id).importance == 0.7


def test_an_edit_that_changes_nothing_writes_nothing(engram: Engram) -> None:
    memory = engram.add("Backups run nightly at 02:00", tags=["ops"]).memory
    result = engram.edit(memory.id, text="Backups run nightly at 02:00", tags=["ops"], importance=0.5)
    assert result.changed == [] and engram.get(memory.id).version == memory.version
    with pytest.raises(UsageError, match="nothing to edit"):
        engram.edit(memory.id)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"text": "   "}, "empty"),
        ({"importance": 1.5}, "between 0 and 1"),
        ({"type": "fact"}, "unknown memory type"),
        ({"namespace": " "}, "must not be empty"),
        ({"tags": ["x"], "untag": ["x"]}, "both added and removed"),
    ],
)
def test_bad_values_are_refused_before_anything_changes(engram: Engram, change: dict[str, Any], message: str) -> None:
    memory = engram.add("Backups run nightly at 02:00").memory
    with pytest.raises((InvalidInput, UsageError), match=message):
        engram.edit(memory.id, **change)
    assert engram.get(memory.id).version == memory.version


def test_an_unknown_id_is_not_found(engram: Engram) -> None:
    with pytest.raises(NotFound):
        engram.edit("deadbeef", importance=0.3)


def test_secrets_in_new_text_are_redacted(engram: Engram) -> None:
    memory = engram.add("deploy with the team token").memory
    result = engram.edit(memory.id, text="deploy with token ghp_" + "a1B2" * 9)
    assert result.redacted == ["github-token"] and "[REDACTED:github-token]" in result.memory.content


def test_chinese_text(engram: Engram) -> None:
    memory = engram.add("数据库迁移脚本放在 scripts/migrate 目录下").memory
    engram.edit(memory.id, text="数据库迁移脚本现在放在 db/migrations 目录下")
    assert engram.recall("迁移脚本在哪", k=1, bump=False)[0].memory.id == memory.id


def test_cli_edit(cli: Any, rows: Any) -> None:
    memory_id = cli("add", "CI uses Node 20", "-t", "ci", "-n", "webshop").stdout.strip()
    shown = cli("edit", memory_id[:8], "--text", "CI uses Node 22", "-t", "node", "--untag", "ci", "-i", "0.7")
    assert shown.stdout.strip() == memory_id and "edited content, importance, tags (version 2)" in shown.stderr
    data = json.loads(cli("edit", memory_id[:8], "-g", "--json").stdout)
    assert (data["changed"], data["namespace"], data["tags"]) == (["namespace"], "global", ["node"])
    assert rows("SELECT kind FROM events WHERE memory_id = ? ORDER BY pk", (memory_id,)) == [
        ("created",),
        ("edited",),
        ("edited",),
    ]
    stale = cli("edit", memory_id[:8], "-i", "0.1", "--if-version", "1", ok=False)
    assert stale.exit_code == 1 and "is at version 3, not 1" in stale.stderr
    nothing = cli("edit", memory_id[:8], ok=False)
    assert nothing.exit_code == 2 and "nothing to edit" in nothing.stderr
    both = cli("edit", memory_id[:8], "-g", "-n", "x", ok=False)
    assert both.exit_code == 2
    piped = cli("edit", memory_id[:8], "--text", "-", input="CI uses Node 24\n")
    assert piped.exit_code == 0 and rows("SELECT content FROM memories") == [("CI uses Node 24",)]
