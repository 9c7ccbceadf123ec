"""Settings: defaults in code, config.toml, environment, `engram config`."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engram_cli import config
from engram_cli.errors import EngramError, InvalidInput, UsageError


def test_defaults_come_from_code(engram_home: Path) -> None:
    cfg = config.load()
    assert cfg.settings.namespace is None  # automatic: the git project, else global
    assert cfg.settings.recall.k == 5
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
    assert cfg.settings.namespace == "work" and cfg.settings.recall.k == 8
    monkeypatch.setenv("ENGRAM_NAMESPACE", "env-ns")
    cfg = config.load(paths)
    assert cfg.settings.namespace == "env-ns"
    assert cfg.origins["namespace"] == "ENGRAM_NAMESPACE"


def test_set_checks_types_and_keys(engram_home: Path) -> None:
    paths = config.Paths.resolve()
    with pytest.raises(InvalidInput):
        config.set_value(paths, "recall.k", "many")
    with pytest.raises(UsageError):
        config.set_value(paths, "recall.nope", "1")
    assert config.set_value(paths, "merge.threshold", "0.95") == 0.95
    assert config.set_value(paths, "merge.threshold", "none") is None
    assert config.load(paths).settings.merge.threshold is None


def test_broken_file_is_a_warning_and_the_defaults_apply(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text("recall = [", encoding="utf-8")
    cfg = config.load()
    assert cfg.settings.recall.k == 5 and cfg.origins == {}
    (warning,) = cfg.warnings
    assert "not valid TOML" in warning and str(engram_home / "config.toml") in warning


def test_unknown_key_in_file_is_a_warning_naming_key_and_file(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text("colour = 'blue'\n[recall]\nk = 8\nkk = 3\n", encoding="utf-8")
    cfg = config.load()
    assert cfg.settings.recall.k == 8  # the good settings of the file still count
    assert len(cfg.warnings) == 2
    colour, kk = cfg.warnings
    assert "unknown setting 'colour'" in colour and str(engram_home / "config.toml") in colour
    assert "engram config unset colour" in colour
    assert "'recall.kk'" in kk and "did you mean recall.k?" in kk


@pytest.mark.parametrize(
    ("toml", "key", "default", "words"),
    [
        ("[recall]\nk = 'many'\n", "recall.k", 5, "whole number"),
        ("[merge]\nenabled = 3\n", "merge.enabled", True, "true or false"),
        ("namespace = 7\n", "namespace", None, "str"),
        ("recall = 5\n", "recall.k", 5, "table of settings"),
        ("[merge]\nthreshold = 'high'\n", "merge.threshold", None, "number"),
    ],
)
def test_wrong_typed_value_keeps_its_default(
    engram_home: Path, toml: str, key: str, default: object, words: str
) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text(toml, encoding="utf-8")
    cfg = config.load()
    assert cfg.flat()[key] == default
    (warning,) = cfg.warnings
    assert words in warning and "config.toml" in warning


def test_a_file_that_is_not_utf8_is_a_warning(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_bytes(b"namespace = '\xff'\n")
    cfg = config.load()
    assert cfg.settings.namespace is None and len(cfg.warnings) == 1


COMMENTED = """# engram settings for my laptop
namespace = "work"  # the day job

[recall]
# more results than the default
k = 8   # was 5
bump = false
"""


def test_set_keeps_comments_and_layout(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text(COMMENTED, encoding="utf-8")
    paths = config.Paths.resolve()
    config.set_value(paths, "recall.k", "10")
    config.set_value(paths, "decay.half_life_days.working", "3")
    text = (engram_home / "config.toml").read_text(encoding="utf-8")
    assert text.startswith(COMMENTED.replace("k = 8   # was 5", "k = 10   # was 5"))
    assert "[decay.half_life_days]\nworking = 3.0\n" in text and "[decay]\n" not in text
    cfg = config.load(paths)
    assert cfg.settings.recall.k == 10 and cfg.settings.decay.half_life_days.working == 3.0 and cfg.warnings == []


def test_unset_removes_one_key_and_keeps_the_rest(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text("colour = 'blue'\n" + COMMENTED, encoding="utf-8")
    paths = config.Paths.resolve()
    assert config.unset_value(paths, "recall.bump") is True
    assert config.unset_value(paths, "colour") is True  # an unknown key can be removed: that is the fix
    assert (engram_home / "config.toml").read_text(encoding="utf-8") == COMMENTED.replace("bump = false\n", "")
    assert config.unset_value(paths, "recall.bump") is False  # already the default
    with pytest.raises(UsageError):
        config.unset_value(paths, "recall.nope")
    # A table that only engram's own set filled goes with its last key; one with a comment stays.
    config.set_value(paths, "merge.threshold", "0.95")
    config.set_value(paths, "decay.half_life_days.working", "3")
    assert config.set_value(paths, "merge.threshold", "none") is None
    config.unset_value(paths, "decay.half_life_days.working")
    config.unset_value(paths, "recall.k")
    assert (engram_home / "config.toml").read_text(encoding="utf-8") == (
        '# engram settings for my laptop\nnamespace = "work"  # the day job\n\n'
        "[recall]\n# more results than the default\n\n"
    )


def test_set_refuses_to_rewrite_a_file_it_cannot_read(engram_home: Path) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text("# mine\nrecall = [", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not valid TOML"):
        config.set_value(config.Paths.resolve(), "recall.k", "8")
    assert (engram_home / "config.toml").read_text(encoding="utf-8") == "# mine\nrecall = ["


def test_config_file_is_private_whatever_the_umask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "fresh" / "engram"
    monkeypatch.setenv("ENGRAM_HOME", str(home))
    old = os.umask(0)
    try:
        config.set_value(config.Paths.resolve(), "recall.k", "8")
    finally:
        os.umask(old)
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE((home / "config.toml").stat().st_mode) == 0o600
    # An existing file keeps the mode its owner gave it.
    os.chmod(home / "config.toml", 0o640)
    config.set_value(config.Paths.resolve(), "recall.k", "9")
    assert stat.S_IMODE((home / "config.toml").stat().st_mode) == 0o640


def test_a_failed_write_leaves_the_file_and_no_temporary(engram_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").write_text(COMMENTED, encoding="utf-8")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(EngramError, match="cannot write config file"):
        config.set_value(config.Paths.resolve(), "recall.k", "10")
    assert sorted(p.name for p in engram_home.iterdir()) == ["config.toml"]
    assert (engram_home / "config.toml").read_text(encoding="utf-8") == COMMENTED


def test_a_symlinked_config_stays_a_symlink(engram_home: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "engram.toml").write_text(COMMENTED, encoding="utf-8")
    engram_home.mkdir(parents=True)
    (engram_home / "config.toml").symlink_to(dotfiles / "engram.toml")
    config.set_value(config.Paths.resolve(), "agent", "me")
    assert (engram_home / "config.toml").is_symlink()
    assert 'agent = "me"' in (dotfiles / "engram.toml").read_text(encoding="utf-8")
