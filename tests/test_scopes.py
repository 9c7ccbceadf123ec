"""Two scopes: the person's (global) and the project's (the git repository around the current directory)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram
from engram_cli.ingest.extract import scope_of
from engram_cli.project import GLOBAL_NAMESPACE, Scope, project_namespace

PREFERENCE = "Answer in British English"
DEPLOY = "Deploys go through make release after a green CI run"
OTHER = "The billing service deploys with helm upgrade"


@pytest.fixture
def webshop(git_repo: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory is deep inside the git repository `webshop`."""
    repo = git_repo("webshop")
    monkeypatch.chdir(repo / "src" / "app")
    return repo


def _json(cli: Any, *args: str) -> Any:
    return json.loads(cli(*args, "--json").stdout)


# -- where commands work when not told ---------------------------------------------------------


def test_inside_a_repository_add_writes_to_the_project_and_outside_to_global(
    cli: Any, rows: Any, git_repo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli("add", "The office printer is on floor two")  # the tests run outside any repository
    repo = git_repo("webshop")
    monkeypatch.chdir(repo / "src")
    cli("add", DEPLOY)
    cli("add", PREFERENCE, "-g")
    cli("add", "The tax rules live in the billing repo", "--global")
    got = dict(rows("SELECT content, namespace FROM memories"))
    assert got == {
        "The office printer is on floor two": "global",
        DEPLOY: "webshop",
        PREFERENCE: "global",
        "The tax rules live in the billing repo": "global",
    }


def test_a_repository_named_global_is_a_project_all_the_same(git_repo: Any) -> None:
    repo = git_repo("global")
    assert project_namespace(repo / "src") == "global-project"
    assert Scope.resolve(None, repo / "src") == Scope("global-project")
    with Engram.open(cwd=repo) as mem:
        assert mem.add(DEPLOY).memory.namespace == "global-project"


def test_the_scope_of_the_library_comes_from_cwd(git_repo: Any, tmp_path: Path) -> None:
    repo = git_repo("webshop")
    with Engram.open(cwd=repo / "src" / "app") as inside:
        assert inside.scope == Scope(project="webshop", global_ns=GLOBAL_NAMESPACE)
        assert inside.scope.namespaces == ["webshop", "global"] and inside.scope.default == "webshop"
    with Engram.open(cwd=tmp_path) as outside:
        assert outside.scope.project is None and outside.scope.namespaces == ["global"]


def test_a_configured_namespace_still_wins(
    cli: Any, rows: Any, webshop: Path, monkeypatch: pytest.MonkeyPatch, engram_home: Path
) -> None:
    monkeypatch.setenv("ENGRAM_NAMESPACE", "work")
    cli("add", DEPLOY)
    monkeypatch.delenv("ENGRAM_NAMESPACE")
    engram_home.mkdir(parents=True, exist_ok=True)
    (engram_home / "config.toml").write_text('namespace = "notes"\n', encoding="utf-8")
    cli("add", OTHER)
    assert dict(rows("SELECT content, namespace FROM memories")) == {DEPLOY: "work", OTHER: "notes"}


def test_two_ways_of_choosing_a_namespace_are_refused(cli: Any, webshop: Path) -> None:
    for argv in (("add", DEPLOY, "-n", "x", "-g"), ("recall", "deploy", "-g", "-A"), ("list", "-n", "x", "-A")):
        result = cli(*argv, ok=False)
        assert result.exit_code == 2 and "exclude each other" in result.stderr, argv
        assert "`" not in result.stderr.splitlines()[0]  # the flags are named as typed, not as parameters
    assert "--namespace and --global exclude each other" in cli("add", DEPLOY, "-n", "x", "-g", ok=False).stderr


# -- recall in a project: the project and the global scope together ------------------------------


@pytest.fixture
def three(cli: Any, webshop: Path) -> dict[str, str]:
    """A preference in the global scope, a fact of this project and one of another project."""
    return {
        "global": _json(cli, "add", PREFERENCE, "-g")["id"],
        "project": _json(cli, "add", DEPLOY)["id"],
        "other": _json(cli, "add", OTHER, "-n", "billing")["id"],
    }


def test_recall_in_a_project_searches_it_and_the_global_scope_and_says_which(cli: Any, three: dict[str, str]) -> None:
    hits = _json(cli, "recall", "how do we deploy, and in which English?", "-k", "5")
    assert {h["id"]: h["scope"] for h in hits} == {three["project"]: "project", three["global"]: "global"}
    table = cli("recall", "how do we deploy, and in which English?").stdout
    header = table.splitlines()[0].split()
    assert header[:4] == ["id", "score", "rel", "scope"]
    assert any(line.split()[3] == "global" for line in table.splitlines()[1:] if line.startswith(three["global"][:8]))
    card = cli("recall", "which English should answers use?", "--format", "card").stdout
    assert f"[memory #{three['global'][:8]}]" in card and "[scope: global]" in card
    explained = _json(cli, "recall", "which English?", "--explain")
    by_id = {h["id"]: h["explain"]["scope"] for h in explained}
    assert by_id[three["global"]] == {"scope": "global", "namespace": "global"}


def test_no_global_searches_the_project_alone_and_g_the_global_scope_alone(cli: Any, three: dict[str, str]) -> None:
    query = "how do we deploy, and in which English?"
    assert [h["id"] for h in _json(cli, "recall", query, "--no-global")] == [three["project"]]
    assert [h["id"] for h in _json(cli, "recall", query, "-g")] == [three["global"]]
    everywhere = {h["id"]: h["scope"] for h in _json(cli, "recall", query, "-A")}
    assert everywhere == {three["project"]: "project", three["global"]: "global", three["other"]: "other"}
    assert "[namespace: billing]" in cli("recall", "helm upgrade", "-A", "--format", "card").stdout


def test_no_global_needs_a_project(cli: Any, git_repo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cli("add", PREFERENCE)
    result = cli("recall", "English", "--no-global", ok=False)
    assert result.exit_code == 2 and "--no-global needs a project" in result.stderr and "Hint:" in result.stderr
    repo = git_repo("webshop")
    monkeypatch.chdir(repo)
    mixed = cli("recall", "English", "--no-global", "-n", "webshop", ok=False)
    assert mixed.exit_code == 2 and "--no-global" in mixed.stderr


def test_list_and_export_default_to_the_project_alone(cli: Any, three: dict[str, str]) -> None:
    assert [m["id"] for m in _json(cli, "list")] == [three["project"]]
    assert [m["id"] for m in _json(cli, "list", "-g")] == [three["global"]]
    assert [json.loads(line)["id"] for line in cli("export").stdout.splitlines()] == [three["project"]]
    assert [json.loads(line)["id"] for line in cli("export", "-g").stdout.splitlines()] == [three["global"]]
    assert len(cli("export", "-A").stdout.splitlines()) == 3


def test_forget_takes_memories_of_this_project_and_the_global_scope_only(
    cli: Any, rows: Any, three: dict[str, str]
) -> None:
    refused = cli("forget", three["project"][:8], three["other"][:8], ok=False)
    assert refused.exit_code == 1
    assert f"memory {three['other'][:8]} is in namespace 'billing'" in refused.stderr
    assert "pass -n billing (or -A)" in refused.stderr
    assert rows("SELECT count(*) FROM memories WHERE status = 'active'") == [(3,)]  # nothing changed
    assert cli("forget", three["global"][:8]).stdout.split() == [three["global"], "archived"]
    assert cli("forget", three["other"][:8], "-n", "billing").stdout.split() == [three["other"], "archived"]
    assert cli("forget", three["project"], "-A").stdout.split() == [three["project"], "archived"]
    assert rows("SELECT count(*) FROM memories WHERE status = 'active'") == [(0,)]


# -- a namespace that holds nothing ----------------------------------------------------------------


def test_a_mistyped_namespace_is_an_error_that_names_the_close_ones(cli: Any, three: dict[str, str]) -> None:
    cli("add", "The web shop front end is in Svelte", "-n", "web-shop")
    for argv in (("recall", "deploy", "-n", "webshopp"), ("list", "-n", "webshopp"), ("export", "-n", "webshopp")):
        result = cli(*argv, ok=False)
        assert result.exit_code == 1, argv
        assert "Error: no memories in namespace 'webshopp'" in result.stderr
        assert "Hint: did you mean: webshop, web-shop?" in result.stderr and "engram namespaces" in result.stderr
    envelope = json.loads(cli("recall", "deploy", "-n", "webshopp", "--json", ok=False).stdout)
    assert envelope["error"]["type"] == "UnknownNamespace"
    renamed = cli("list", "-n", "default", ok=False)
    assert "no memories in namespace 'default'" in renamed.stderr and "in 'global' now: use -g" in renamed.stderr
    far = cli("forget", three["other"][:8], "-n", "zzz", ok=False)
    assert far.exit_code == 1 and "no memories in namespace 'zzz'" in far.stderr
    assert "engram add -n zzz" in far.stderr


def test_the_scopes_own_namespaces_and_new_ones_for_add_are_fine_empty(cli: Any, rows: Any, webshop: Path) -> None:
    assert cli("recall", "anything", "-g").exit_code == 0
    assert cli("recall", "anything", "-n", "webshop").exit_code == 0
    assert cli("list", "-n", "global").exit_code == 0
    cli("add", DEPLOY, "-n", "brand-new")
    assert rows("SELECT namespace FROM memories") == [("brand-new",)]
    assert len(_json(cli, "recall", "deploy", "-n", "brand-new")) == 1


def test_namespaces_lists_every_namespace_with_its_counts(cli: Any, three: dict[str, str]) -> None:
    cli("forget", three["other"][:8], "-n", "billing")
    listed = {n["namespace"]: n for n in _json(cli, "namespaces")}
    assert listed == {
        "billing": {"namespace": "billing", "scope": "other", "memories": 1, "active": 0, "superseded": 0,
                    "archived": 1},
        "global": {"namespace": "global", "scope": "global", "memories": 1, "active": 1, "superseded": 0,
                   "archived": 0},
        "webshop": {"namespace": "webshop", "scope": "project", "memories": 1, "active": 1, "superseded": 0,
                    "archived": 0},
    }  # fmt: skip
    shown = cli("namespaces")
    assert shown.stdout.splitlines()[0].split() == ["namespace", "scope", "active", "superseded", "archived", "total"]
    assert "add writes to 'webshop'" in shown.stderr


def test_namespaces_shows_the_scope_even_before_anything_is_in_it(cli: Any, webshop: Path) -> None:
    assert [(n["namespace"], n["scope"], n["memories"]) for n in _json(cli, "namespaces")] == [
        ("global", "global", 0),
        ("webshop", "project", 0),
    ]


# -- the session card reads both scopes ------------------------------------------------------------


def test_the_session_card_holds_the_project_and_the_global_scope(
    cli: Any, git_repo: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shop = git_repo("webshop")
    empty = git_repo("newproject")
    cli("add", PREFERENCE, "-g")
    cli("add", DEPLOY, "-n", "webshop")
    cli("add", OTHER, "-n", "billing")
    card = cli("hooks", "context", "claude-code", "--dir", str(shop / "src")).stdout
    assert PREFERENCE in card and DEPLOY in card and OTHER not in card
    assert "[scope: global]" in card and "[scope: project]" in card
    # A project with nothing of its own yet still starts with what is true of the person everywhere.
    monkeypatch.setenv("CLAUDE_PROJECT_DIR", str(empty))
    fresh = cli("hooks", "context", "claude-code").stdout
    assert PREFERENCE in fresh and DEPLOY not in fresh


# -- whose a statement is -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "scope"),
    [
        # How the person wants to be answered, and the tools they use everywhere.
        ("Always answer in British English", "person"),
        ("Keep your answers short and skip the apologies", "person"),
        ("No emojis, please", "person"),
        ("Call me Sam", "person"),
        ("I always use fish as my shell", "person"),
        ("I prefer tabs over spaces in every project", "person"),
        ("my editor is neovim", "person"),
        ("Use uv for Python everywhere", "person"),
        ("以后回答用中文", "person"),
        ("回答要简洁", "person"),
        ("我习惯用 vim 写代码", "person"),
        ("所有项目都用 uv 管理依赖", "person"),
        ("不要用表情", "person"),
        # The project's: named as such, a team speaking, a file of it, or the work at hand.
        ("This repo uses pnpm, not npm", "project"),
        ("For this project, I prefer pnpm", "project"),
        ("We deploy with make release", "project"),
        ("Remember that we always deploy with make release", "project"),
        ("I always run tests/unit before pushing", "project"),
        ("I prefer the staging database for experiments", "project"),
        ("I like this approach better", "project"),
        ("The API rate limit is 100 requests per minute", "project"),
        ("这个项目用 pnpm", "project"),
        ("我们用 pytest 跑测试", "project"),
        ("我喜欢这个方案", "project"),
        ("部署用 make release", "project"),
    ],
)
def test_scope_of(text: str, scope: str) -> None:
    assert scope_of(text) == scope
