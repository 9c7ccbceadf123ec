"""Keyed facts: set, get, unset, keys, add --key; one active memory per scope and key, updated in place."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.errors import InvalidInput, NotFound

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def outside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory in no git repository: no project scope, only global."""
    where = tmp_path / "nowhere"
    where.mkdir()
    monkeypatch.chdir(where)
    return where


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory inside a git repository called geo-tiles (its namespace)."""
    root = tmp_path / "geo-tiles"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    monkeypatch.chdir(root / "src")
    return root


def test_set_updates_the_keyed_memory_in_place_with_the_old_value_in_its_history(
    engram: Engram, rows: Any, outside: Path
) -> None:
    first = engram.set("user:tz", "Europe/Berlin")
    assert first.action == "created" and first.memory.namespace == "global" and first.memory.key == "user:tz"
    assert first.memory.importance == 0.8  # a keyed fact does not fade out
    second = engram.set("User:TZ", "Europe/Paris")  # keys are lower-cased
    assert second.action == "updated" and second.id == first.id and second.previous == "Europe/Berlin"
    assert second.memory.version == first.memory.version + 1
    assert rows("SELECT count(*) FROM memories WHERE mkey = 'user:tz'") == [(1,)]
    assert rows("SELECT content, status FROM memories") == [("Europe/Paris", "active")]
    edited = rows("SELECT before, after, note FROM events WHERE memory_id = ? AND kind = 'edited'", (first.id,))
    assert [(json.loads(b), json.loads(a), n) for b, a, n in edited] == [
        ({"content": "Europe/Berlin"}, {"content": "Europe/Paris"}, "set user:tz")
    ]
    assert engram.set("user:tz", "Europe/Paris").action == "unchanged"
    assert engram.lookup("user:tz").value == "Europe/Paris"


def test_set_re_embeds_and_re_indexes_the_new_value(engram: Engram, outside: Path) -> None:
    engram.set("deploy:geo-tiles", "rsync the tiles to geo01 then restart nginx", type="procedural")
    engram.set("deploy:geo-tiles", "upload the tiles to the S3 bucket with make publish")
    hits = engram.recall("how do I deploy geo tiles", namespace="global", k=1, bump=False)
    assert hits[0].memory.content == "upload the tiles to the S3 bucket with make publish"
    assert hits[0].memory.type == "procedural"  # an update without --type keeps the type
    assert engram.recall("rsync nginx", namespace="global", k=5, bump=False, settings=_keyword_only(engram)) == []


def _keyword_only(engram: Engram) -> Any:
    from dataclasses import replace

    return replace(engram.recall_settings(), vector_weight=0.0, cross_weight=0.0)


def test_keyed_facts_take_part_in_recall_by_their_key_words(engram: Engram, outside: Path) -> None:
    engram.add("The staging database runs on port 5433", namespace="global")
    engram.set("user:timezone", "Europe/Berlin")
    keyword = engram.recall("timezone", namespace="global", bump=False, settings=_keyword_only(engram))
    assert [h.memory.key for h in keyword] == ["user:timezone"]
    hits = engram.recall("what is my timezone", namespace="global", k=1, bump=False)
    assert hits[0].memory.content == "Europe/Berlin"


def test_two_keys_may_hold_the_same_value_and_an_unkeyed_memory_too(engram: Engram, rows: Any, outside: Path) -> None:
    engram.add("vim", namespace="global")
    a = engram.set("user:editor", "vim")
    b = engram.set("team:editor", "vim")
    assert a.action == b.action == "created" and a.id != b.id
    assert rows("SELECT count(*) FROM memories WHERE content = 'vim'") == [(3,)]
    # The unkeyed "vim" is still the one an exact duplicate folds into.
    assert engram.add("VIM", namespace="global").action == "duplicate"


def test_a_keyed_fact_is_never_merged_into_nor_superseded_by_a_neighbour(engram: Engram, outside: Path) -> None:
    keyed = engram.set("ci:node", "CI uses Node 20")
    added = engram.add("From now on CI uses Node 22 instead of Node 20", namespace="global")
    assert added.action == "created" and added.superseded == []
    assert engram.get(keyed.id).status == "active"
    again = engram.add("CI uses Node 20.", namespace="global")  # a near copy of the keyed value: kept apart
    assert again.action == "created" and again.id != keyed.id


def test_get_looks_in_the_project_first_then_global(engram: Engram, project: Path) -> None:
    assert engram.key_scope().namespaces == ["geo-tiles", "global"]
    engram.set("user:tz", "Europe/Berlin", namespace="global")
    found = engram.lookup("user:tz")
    assert (found.value, found.namespace, found.scope) == ("Europe/Berlin", "global", "global")
    engram.set("user:tz", "Asia/Tokyo")  # inside the project: the project's own value
    found = engram.lookup("user:tz")
    assert (found.value, found.namespace, found.scope) == ("Asia/Tokyo", "geo-tiles", "project")
    assert engram.lookup("user:tz", namespace="global").value == "Europe/Berlin"
    listing = engram.keys()
    assert [(e.key, e.namespace, e.shadowed) for e in listing.entries] == [
        ("user:tz", "geo-tiles", False),
        ("user:tz", "global", True),
    ]


def test_a_repository_called_global_is_not_the_global_scope(engram: Engram, tmp_path: Path, monkeypatch: Any) -> None:
    root = tmp_path / "global"
    (root / ".git").mkdir(parents=True)
    monkeypatch.chdir(root)
    assert engram.key_scope().namespaces == ["global-project", "global"]


def test_a_configured_namespace_is_the_project_scope(
    engram_home: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENGRAM_NAMESPACE", "webshop")
    with Engram.open() as mem:
        assert mem.key_scope().namespaces == ["webshop", "global"]
        assert mem.set("build:cmd", "make build").memory.namespace == "webshop"


def test_unset_archives_and_set_brings_the_same_memory_back(engram: Engram, rows: Any, outside: Path) -> None:
    created = engram.set("user:tz", "Europe/Berlin")
    gone = engram.unset("user:tz")
    assert (gone.id, gone.action, gone.namespace) == (created.id, "archived", "global")
    with pytest.raises(NotFound, match="no value for key 'user:tz'") as caught:
        engram.lookup("user:tz")
    assert caught.value.hint is not None and "engram set user:tz" in caught.value.hint
    assert engram.recall("Europe Berlin", namespace="global", bump=False) == []
    back = engram.set("user:tz", "Asia/Tokyo")
    assert back.id == created.id and back.action == "updated" and back.memory.status == "active"
    assert rows("SELECT count(*) FROM memories") == [(1,)]
    with pytest.raises(NotFound):
        engram.unset("user:nothing")


def test_touching_an_unset_key_whose_key_is_held_again_is_refused(engram: Engram, outside: Path) -> None:
    old = engram.set("user:tz", "Europe/Berlin", namespace="laptop")
    engram.unset("user:tz", namespace="laptop")
    holder = engram.set("user:tz", "Asia/Tokyo", namespace="desktop")
    engram.edit(old.id, namespace="desktop")  # archived: it holds the key of nothing active
    with pytest.raises(InvalidInput, match="held key 'user:tz'"):
        engram.touch(old.id)
    assert engram.lookup("user:tz", namespace="desktop").id == holder.id
    # Its first id went with it to desktop, so a new holder in laptop gets an id of its own.
    laptop = engram.set("user:tz", "UTC", namespace="laptop")
    assert laptop.action == "created" and laptop.id not in (old.id, holder.id)
    with pytest.raises(InvalidInput, match="already has key 'user:tz'"):
        engram.edit(laptop.id, namespace="desktop")


def test_keys_lists_by_prefix_and_scope(engram: Engram, outside: Path) -> None:
    engram.set("deploy:geo-tiles", "make publish", type="procedural")
    engram.set("deploy:api", "helm upgrade api")
    engram.set("user:tz", "Europe/Berlin")
    engram.set("deploy:web", "npm run deploy", namespace="webshop")
    assert [e.key for e in engram.keys("deploy:").entries] == ["deploy:api", "deploy:geo-tiles"]
    assert [e.key for e in engram.keys("deploy:", all_namespaces=True).entries] == [
        "deploy:api",
        "deploy:geo-tiles",
        "deploy:web",
    ]
    assert [e.key for e in engram.keys(namespace="webshop").entries] == ["deploy:web"]


@pytest.mark.parametrize("bad", ["", "  ", "User Tz", "-tz", "tz!", "时区", "a" * 201])
def test_a_key_that_is_not_one_is_refused(engram: Engram, bad: str, outside: Path) -> None:
    with pytest.raises(InvalidInput, match="key"):
        engram.set(bad, "value")


def test_values_may_be_chinese(engram: Engram, outside: Path) -> None:
    engram.set("user:answer-language", "以后回答用中文")
    assert engram.lookup("user:answer-language").value == "以后回答用中文"
    assert engram.recall("回答用什么语言", namespace="global", k=1, bump=False)[0].memory.key == "user:answer-language"


def test_add_with_key_is_set(engram: Engram, outside: Path) -> None:
    first = engram.add("pnpm", key="tool:js", namespace="global")
    second = engram.add("bun", key="tool:js", namespace="global")
    assert second.id == first.id and second.action == "updated"


def test_secrets_in_a_value_are_redacted(engram: Engram, outside: Path) -> None:
    result = engram.set("ci:token", "ghp_" + "a1B2" * 9)
    assert result.redacted == ["github-token"]
    assert "[REDACTED:github-token]" in engram.lookup("ci:token").value


def test_get_counts_an_access_unless_told_not_to(engram: Engram, outside: Path) -> None:
    created = engram.set("user:tz", "Europe/Berlin")
    engram.lookup("user:tz")
    engram.lookup("user:tz", touch=False)
    assert engram.get(created.id).access_count == 1


# -- the command line -----------------------------------------------------------------------------


def test_cli_set_get_unset_keys(cli: Any, rows: Any, outside: Path) -> None:
    assert cli("set", "user:tz", "Europe/Berlin", "-g").stdout.strip()
    assert cli("get", "user:tz").stdout == "Europe/Berlin\n"
    updated = cli("set", "user:tz", "Europe/Paris", "-g")
    assert "updated user:tz in place" in updated.stderr and "was: Europe/Berlin" in updated.stderr
    shown = json.loads(cli("get", "user:tz", "--json").stdout)
    assert (shown["key"], shown["value"], shown["namespace"], shown["scope"]) == (
        "user:tz",
        "Europe/Paris",
        "global",
        "global",
    )
    cli("set", "deploy:geo-tiles", "-", "--type", "procedural", "-n", "geo", input="make tiles && make publish\n")
    listed = json.loads(cli("keys", "-A", "--json").stdout)
    assert [(e["key"], e["value"], e["namespace"]) for e in listed] == [
        ("deploy:geo-tiles", "make tiles && make publish", "geo"),
        ("user:tz", "Europe/Paris", "global"),
    ]
    assert "user:tz" in cli("keys").stdout
    assert cli("unset", "user:tz").stdout.split()[1] == "archived"
    missing = cli("get", "user:tz", ok=False)
    assert missing.exit_code == 1 and "Error: no value for key 'user:tz'" in missing.stderr
    bad = cli("get", "User Tz", ok=False)
    assert bad.exit_code == 1 and "is not a key" in bad.stderr
    both = cli("set", "a", "b", "-g", "-n", "x", ok=False)
    assert both.exit_code == 2
    added = cli("add", "bun", "--key", "tool:js", "-n", "global")
    assert cli("get", "tool:js").stdout == "bun\n" and added.stdout.strip()
    card = cli("recall", "which js tool", "-n", "global", "--format", "card").stdout
    assert "[key: tool:js]" in card


def test_cli_get_loads_no_model_and_no_numpy(engram_home: Path, outside: Path) -> None:
    with Engram.open() as mem:
        mem.set("user:tz", "Europe/Berlin")
    probe = (
        "import sys\n"
        "from engram_cli.cli import main\n"
        "sys.argv = ['engram', 'get', 'user:tz']\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    assert not exc.code, exc.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'onnxruntime'))\n"
        "sys.stderr.write('HEAVY=' + ','.join(heavy) + '\\n')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=outside, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Europe/Berlin\n"
    assert "HEAVY=\n" in done.stderr
