"""Configuration: defaults in code -> config.toml -> ENGRAM_* environment variables.

The defaults below are the single source of truth; ``engram config show`` prints the
effective values and where each came from.
"""

from __future__ import annotations

import copy
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engram_cli.errors import InvalidInput, UsageError

APP_NAME = "engram"
DB_FILENAME = "engram.db"

# Every setting engram reads, with its default. ``None`` means "decided elsewhere"
# (for merge.threshold: the active model's calibrated value).
DEFAULTS: dict[str, Any] = {
    "namespace": "default",
    "agent": "user",
    "model": "multilingual-e5-small-q4-v1",
    "merge": {
        "enabled": True,
        "threshold": None,
    },
    "supersede": {
        "enabled": True,
        # None: the merge threshold minus 0.125 (a correction rewords more than a duplicate does).
        "min_similarity": None,
    },
    "recall": {
        "k": 5,
        "candidates": 50,
        "rrf_k": 5,
        "vector_weight": 1.5,
        "keyword_weight": 1.0,
        # The cross-language list: the query moved into the other script's region (see memory/crosslingual).
        "cross_weight": 1.5,
        # Lists restricted to the time the query names ("last week", 上个月), fused like the others.
        "time_weight": 1.0,
        "bump": True,
        # Move near-copies (cosine >= the merge threshold) of a better hit behind the distinct ones.
        "diversify": True,
    },
    # Days for a memory's decay score to halve without being accessed: working memory
    # fades fastest, episodes next, facts and procedures slowest.
    "decay": {
        "half_life_days": {
            "working": 2.0,
            "episodic": 30.0,
            "procedural": 90.0,
            "semantic": 180.0,
        },
    },
    # compact: episodes about one thing become one semantic memory (see `engram compact --help`).
    "compact": {
        # None: the active model's calibrated value (its manifest's cluster_threshold).
        "cluster_threshold": None,
        "min_cluster": 2,
        "max_cluster": 50,
        # Only episodes this close in time form a cluster; 0 means any distance.
        "window_days": 0.0,
        # Episodes younger than this are left alone: the work they describe may be ongoing.
        "min_age_days": 1.0,
        # Most active memories per namespace; beyond it the lowest importance x decay is archived. 0: no cap.
        "max_active": 100000,
    },
    # An optional local program that writes the consolidated text: it reads the cluster as
    # JSON on stdin and prints the summary on stdout. Empty: the built-in extractive summary.
    "summarizer": {
        "command": "",
        "timeout_s": 120.0,
    },
    # An optional local program that extracts memories from an ingested session instead of the
    # built-in rules: it reads the session as JSON on stdin and prints memory records as JSONL.
    "extract": {
        "command": "",
    },
    "store": {
        "busy_timeout_ms": 10000,
    },
    # What `engram audit` reports. Stale: active, last accessed (or created) more than
    # stale_days ago and decayed below stale_decay. Never accessed: no access in the
    # never_accessed_days since creation (listed for review, not a problem).
    "audit": {
        "stale_days": 90,
        "stale_decay": 0.25,
        "low_confidence": 0.3,
        "never_accessed_days": 30,
        "examples": 5,
    },
    # Secrets and personal numbers are always redacted. E-mail addresses and phone numbers are
    # off by default: notes name colleagues and support lines on purpose, and a shape-based
    # phone match is less certain than a checksum.
    "redact": {
        "contact_details": False,
    },
}

# Environment variables that override single settings.
ENV_OVERRIDES: dict[str, str] = {
    "ENGRAM_NAMESPACE": "namespace",
    "ENGRAM_AGENT": "agent",
    "ENGRAM_MODEL": "model",
}


@dataclass(frozen=True)
class Paths:
    """Where engram keeps its data, configuration and cache."""

    data_dir: Path
    config_dir: Path
    cache_dir: Path
    db_explicit: Path | None = None

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def db(self) -> Path:
        return self.db_explicit if self.db_explicit is not None else self.data_dir / DB_FILENAME

    @property
    def db_is_default(self) -> bool:
        return self.db_explicit is None

    @classmethod
    def resolve(cls, db: str | os.PathLike[str] | None = None) -> Paths:
        """Apply the precedence --db > ENGRAM_DB > ENGRAM_HOME > platform directories."""
        home = os.environ.get("ENGRAM_HOME")
        if home:
            base = Path(home).expanduser()
            data, conf, cache = base, base, base / "cache"
        else:
            import platformdirs

            data = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
            conf = Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))
            cache = Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
        explicit = db if db is not None else os.environ.get("ENGRAM_DB") or None
        return cls(
            data_dir=data,
            config_dir=conf,
            cache_dir=cache,
            db_explicit=Path(explicit).expanduser() if explicit else None,
        )


@dataclass
class Config:
    """Effective settings plus the origin of every value that is not a default."""

    values: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    paths: Paths | None = None

    def get(self, key: str) -> Any:
        node: Any = self.values
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                raise UsageError(f"unknown setting {key!r}", hint="see `engram config show` for the keys")
            node = node[part]
        return node

    def flat(self) -> dict[str, Any]:
        return dict(_flatten(self.values))


def _flatten(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.extend(_flatten(value, name + "."))
        else:
            out.append((name, value))
    return out


def _default_for(key: str) -> Any:
    flat = dict(_flatten(DEFAULTS))
    if key not in flat:
        raise UsageError(f"unknown setting {key!r}", hint="see `engram config show` for the keys")
    return flat[key]


def _set_in(tree: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = tree
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value


def read_file(path: Path) -> dict[str, Any]:
    """Read a config.toml; a missing file is an empty config."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise InvalidInput(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"config file {path} is not valid TOML: {exc}",
            hint="fix it by hand or delete it to return to the defaults",
        ) from exc


def coerce(key: str, value: Any) -> Any:
    """Check a value against the type of its default; strings are parsed (for `config set`)."""
    default = _default_for(key)
    if isinstance(value, str) and not isinstance(default, str):
        text = value.strip().lower()
        if default is None or isinstance(default, float):
            if default is None and text in ("", "none", "null", "default"):
                return None
            try:
                return float(text)
            except ValueError as exc:
                raise InvalidInput(f"{key} takes a number, not {value!r}") from exc
        if isinstance(default, bool):
            if text in ("true", "yes", "on", "1"):
                return True
            if text in ("false", "no", "off", "0"):
                return False
            raise InvalidInput(f"{key} takes true or false, not {value!r}")
        if isinstance(default, int):
            try:
                return int(text)
            except ValueError as exc:
                raise InvalidInput(f"{key} takes a whole number, not {value!r}") from exc
    if default is None:
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            return None if value is None else float(value)
        raise InvalidInput(f"{key} takes a number or none, not {value!r}")
    if isinstance(default, bool) and not isinstance(value, bool):
        raise InvalidInput(f"{key} takes true or false, not {value!r}")
    if isinstance(default, float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if type(value) is not type(default):
        raise InvalidInput(f"{key} takes a {type(default).__name__}, not {value!r}")
    return value


def load(paths: Paths | None = None) -> Config:
    """Build the effective configuration."""
    paths = paths or Paths.resolve()
    values = copy.deepcopy(DEFAULTS)
    origins: dict[str, str] = {}
    for key, value in _flatten(read_file(paths.config_file)):
        try:
            checked = coerce(key, value)
        except UsageError as exc:
            raise InvalidInput(
                f"{paths.config_file}: unknown setting {key!r}",
                hint="remove it, or run `engram config show` to see the valid keys",
            ) from exc
        except InvalidInput as exc:
            raise InvalidInput(f"{paths.config_file}: {exc.message}") from exc
        _set_in(values, key, checked)
        origins[key] = str(paths.config_file)
    for env, key in ENV_OVERRIDES.items():
        if os.environ.get(env):
            _set_in(values, key, coerce(key, os.environ[env]))
            origins[key] = env
    return Config(values=values, origins=origins, paths=paths)


def set_value(paths: Paths, key: str, raw: str) -> Any:
    """Persist one setting in config.toml (atomically) and return the stored value."""
    import tomli_w

    value = coerce(key, raw)
    current = read_file(paths.config_file)
    if value is None:
        # TOML has no null: unsetting returns the key to its default.
        parts = key.split(".")
        node: Any = current
        for part in parts[:-1]:
            node = node.get(part, {})
        if isinstance(node, dict):
            node.pop(parts[-1], None)
    else:
        _set_in(current, key, value)
    paths.config_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = paths.config_file.with_suffix(".toml.tmp")
    tmp.write_text(tomli_w.dumps(current), encoding="utf-8")
    os.replace(tmp, paths.config_file)
    return value
