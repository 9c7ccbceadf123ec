"""One typed settings tree is the only source of defaults: the library, the CLI and the README agree."""

from __future__ import annotations

import dataclasses
import inspect
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engram_cli import Engram, config
from engram_cli.config.settings import HalfLives, Settings
from engram_cli.memory import audit, compact, recall, remember
from engram_cli.memory.model import MEMORY_TYPES
from engram_cli.store import db

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "config_table.py"

MEMORIES = [
    ("Deploys go through `make release` from the release branch", {"importance": 0.8}),
    ("The staging database runs on port 5433", {"type": "semantic"}),
    ("The staging database used to run on port 5432", {"importance": 0.2}),
    ("Use tabs for indentation in the Makefile", {"type": "procedural"}),
    ("The user prefers tabs over spaces for indentation", {}),
    ("Yesterday the deploy failed because the release branch was stale", {"type": "episodic"}),
    ("部署通过 make release 完成，只能从 release 分支发布", {}),
    ("搜索服务的日志存在 logs-prod 存储桶里", {"importance": 0.9}),
    ("The search service writes its logs to the logs-prod bucket", {}),
    ("Never force-push to main", {"importance": 0.9, "tags": ["git"]}),
]
QUERIES = ["how do we deploy?", "which port does staging use?", "tabs or spaces", "日志在哪个桶", "force push"]


def test_library_recall_ranks_exactly_as_the_command_line(engram_home: Path, cli: Any) -> None:
    """`Engram.recall()` with no settings given and `engram recall --json` return the same ids and scores."""
    with Engram.open() as mem:
        for text, fields in MEMORIES:
            mem.add(text, no_merge=True, **fields)
        built = mem.path
    # Both recalls count as accesses (recall.bump), which changes later scores: each runs on its own copy.
    library_db, cli_db = engram_home / "library.db", engram_home / "cli.db"
    shutil.copyfile(built, library_db)
    shutil.copyfile(built, cli_db)
    # First with the default relevance floor, then with none (the same order on both copies, since bumps
    # change later scores): the floor and k both come from the one tree.
    with Engram.open(library_db) as mem:
        library = [[(h.memory.id, round(h.score, 6)) for h in mem.recall(q)] for q in QUERIES]
        unfloored = [[(h.memory.id, round(h.score, 6)) for h in mem.recall(q, min_relevance=0.0)] for q in QUERIES]

    def command(*extra: str) -> list[list[tuple[str, float]]]:
        return [
            [(h["id"], h["score"]) for h in json.loads(cli("--db", str(cli_db), "recall", q, *extra, "--json").stdout)]
            for q in QUERIES
        ]

    assert library == command()
    assert unfloored == command("--min-relevance", "0")
    assert all(hits for hits in library) and library != unfloored  # the floor dropped some hits, not all
    assert all(len(hits) == Settings().recall.k for hits in unfloored)  # the default k, from the one tree
    assert len({hit for hits in unfloored for hit in hits}) > len(QUERIES)  # real rankings, not one memory each


@pytest.mark.parametrize(
    "engine_settings", [recall.RecallSettings, compact.Settings, audit.AuditSettings, remember.MergePolicy]
)
def test_engine_settings_have_no_defaults_of_their_own(engine_settings: type) -> None:
    """Only the settings tree holds defaults; the facade builds these from it."""
    defaulted = [
        f.name
        for f in dataclasses.fields(engine_settings)
        if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
    ]
    assert defaulted == []


def test_engine_entry_points_take_their_defaults_from_the_settings() -> None:
    assert inspect.signature(recall.recall).parameters["settings"].default is inspect.Parameter.empty
    busy = inspect.signature(db.connect).parameters["busy_timeout_ms"].default
    assert busy == Settings().store.busy_timeout_ms


def test_every_setting_is_described_and_typed() -> None:
    assert len(config.KEYS) == len(config.Config().flat())
    for key in config.KEYS.values():
        assert key.doc.strip() and "\n" not in key.doc, key.name
        assert key.default is None if key.optional else isinstance(key.default, key.kind), key.name
    assert {f.name for f in dataclasses.fields(HalfLives)} == set(MEMORY_TYPES)


def test_config_show_prints_every_setting_with_its_description(cli: Any) -> None:
    lines = cli("config", "show").stdout.splitlines()
    assert [line.split(" = ", 1)[0] for line in lines] == list(config.KEYS)
    assert "recall.k = 5\t# default — memories returned" in lines


@pytest.mark.parametrize(
    ("toml", "words"),
    [
        ("[extract]\ntimeout_s = 'soon'\n", "extract.timeout_s takes a number, not 'soon'"),
        ("[compact]\ncluster_threshold = true\n", "compact.cluster_threshold takes a number or none, not True"),
        ("[audit]\nexamples = 1.5\n", "audit.examples takes a whole number, not 1.5"),
        ("[summarizer]\ncommand = 3\n", "summarizer.command takes a str, not 3"),
        ("[decay.half_life_days]\nweekly = 7\n", "unknown setting 'decay.half_life_days.weekly'"),
    ],
)
def test_the_types_checked_are_the_annotations_of_the_tree(engram_home: Path, toml: str, words: str) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text(toml, encoding="utf-8")
    cfg = config.load()
    assert cfg.settings == Settings() and cfg.origins == {}
    (warning,) = cfg.warnings
    assert words in warning and str(engram_home / "config.toml") in warning


def test_a_file_value_of_a_float_setting_may_be_written_as_a_whole_number(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text("[extract]\ntimeout_s = 30\n", encoding="utf-8")
    cfg = config.load()
    assert cfg.settings.extract.timeout_s == 30.0 and isinstance(cfg.settings.extract.timeout_s, float)
    assert cfg.settings.summarizer.timeout_s == Settings().summarizer.timeout_s
    assert cfg.origins == {"extract.timeout_s": str(engram_home / "config.toml")}


def _table(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False)


def test_the_readme_configuration_table_is_the_one_the_settings_generate() -> None:
    checked = _table("--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_table_check_fails_on_a_stale_readme_and_the_script_repairs_it(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    current = (REPO / "README.md").read_text(encoding="utf-8")
    row = "| `recall.k` | `5` | memories returned |"
    assert row in current
    readme.write_text(current.replace(row, "| `recall.k` | `8` | memories returned |"), encoding="utf-8")
    assert _table("--check", "--readme", str(readme)).returncode == 1
    assert _table("--readme", str(readme)).returncode == 0
    assert readme.read_text(encoding="utf-8") == current
    assert _table("--check", "--readme", str(readme)).returncode == 0
