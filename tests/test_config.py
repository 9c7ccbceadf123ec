"""Settings: defaults in code, config.toml, environment, `engram config`."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram_cli import config
from engram_cli.errors import InvalidInput, UsageError


def test_defaults_come_from_code(engram_home: Path) -> None:
    cfg = config.load()
    assert cfg.get("namespace") == "default"
    assert cfg.get("recall.k") == 5
    assert cfg.origins == {}


def test_engram_home_moves_everything(engram_home: Path) -> None:
    paths = config.Paths.resolve()
    assert paths.db == engram_home / "engram.db"
    assert paths.config_file == engram_home / "config.toml"
    assert paths.cache_dir == engram_home / "cache"


def test_db_precedence(engram_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ENGRAM_DB", str(tmp_path / "env.db"))
    assert config.Paths.resolve().db == tmp_path / "env.db"
    assert config.Paths.resolve(tmp_path / "flag.db").db == tmp_path / "flag.db"


def test_file_then_environment(engram_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = config.Paths.resolve()
    config.set_value(paths, "namespace", "work")
    config.set_value(paths, "recall.k", "8")
    cfg = config.load(paths)
    assert cfg.get("namespace") == "work" and cfg.get("recall.k") == 8
    monkeypatch.setenv("ENGRAM_NAMESPACE", "env-ns")
    cfg = config.load(paths)
    assert cfg.get("namespace") == "env-ns"
    assert cfg.origins["namespace"] == "ENGRAM_NAMESPACE"


def test_set_checks_types_and_keys(engram_home: Path) -> None:
    paths = config.Paths.resolve()
    with pytest.raises(InvalidInput):
        config.set_value(paths, "recall.k", "many")
    with pytest.raises(UsageError):
        config.set_value(paths, "recall.nope", "1")
    assert config.set_value(paths, "merge.threshold", "0.95") == 0.95
    assert config.set_value(paths, "merge.threshold", "none") is None
    assert config.load(paths).get("merge.threshold") is None


def test_broken_file_says_how_to_recover(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text("recall = [", encoding="utf-8")
    with pytest.raises(InvalidInput) as info:
        config.load()
    assert "not valid TOML" in info.value.message and info.value.hint


def test_unknown_key_in_file_is_reported(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text("colour = 'blue'\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="unknown setting 'colour'"):
        config.load()
