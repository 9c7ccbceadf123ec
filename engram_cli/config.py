"""Configuration: defaults in code -> config.toml -> ENGRAM_* environment variables.

The defaults below are the single source of truth; ``engram config show`` prints the
effective values and where each came from.
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import tomllib
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram_cli import atomic
from engram_cli.errors import EngramError, InvalidInput, UsageError

if TYPE_CHECKING:
    import tomlkit

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
        "timeout_s": 120.0,
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
    """Effective settings plus the origin of every value that is not a default.

    ``warnings`` lists what was wrong in config.toml (an unknown key, a value of the wrong
    type, a file that is not TOML): each such setting keeps its default, and the CLI shows
    the warnings instead of refusing to run.
    """

    values: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    paths: Paths | None = None
    warnings: list[str] = field(default_factory=list)

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


def _unusable_key(path: Path, key: str) -> str:
    """The warning for a key engram does not know, with the nearest real key when there is one."""
    known = list(dict(_flatten(DEFAULTS)))
    if any(k.startswith(key + ".") for k in known):
        return f"{path}: {key!r} is a table of settings ([{key}]), not a value; ignored"
    close = difflib.get_close_matches(key, known, n=1)
    guess = f" (did you mean {close[0]}?)" if close else ""
    return f"{path}: unknown setting {key!r} ignored{guess}; `engram config unset {key}` removes it"


def load(paths: Paths | None = None) -> Config:
    """Build the effective configuration.

    Nothing in config.toml can stop engram from starting: a setting it cannot use keeps its
    default, and what was wrong is listed in ``Config.warnings`` (naming the key and the file).
    """
    paths = paths or Paths.resolve()
    values = copy.deepcopy(DEFAULTS)
    origins: dict[str, str] = {}
    warnings: list[str] = []
    source = paths.config_file
    try:
        data = read_file(source)
    except InvalidInput as exc:
        data = {}
        warnings.append(f"{exc.message}; all of its settings are ignored until it is fixed")
    for key, value in _flatten(data):
        try:
            checked = coerce(key, value)
        except UsageError:
            warnings.append(_unusable_key(source, key))
            continue
        except InvalidInput as exc:
            default = _default_for(key)
            shown = "none" if default is None else json.dumps(default, ensure_ascii=False)
            warnings.append(f"{source}: {exc.message}; using the default, {shown}")
            continue
        _set_in(values, key, checked)
        origins[key] = str(source)
    for env, key in ENV_OVERRIDES.items():
        if os.environ.get(env):
            _set_in(values, key, coerce(key, os.environ[env]))
            origins[key] = env
    return Config(values=values, origins=origins, paths=paths, warnings=warnings)


def _document(path: Path) -> tomlkit.TOMLDocument:
    """config.toml as an editable document that keeps its comments and layout."""
    import tomlkit  # only `config set` and `config unset` edit the file; every command reads it
    from tomlkit.exceptions import TOMLKitError

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return tomlkit.document()
    except OSError as exc:
        raise InvalidInput(f"cannot read config file {path}: {exc.strerror}") from exc
    try:
        return tomlkit.parse(raw.decode("utf-8"))
    except (TOMLKitError, ValueError) as exc:  # UnicodeDecodeError is a ValueError
        raise InvalidInput(
            f"config file {path} is not valid TOML: {exc}; engram changes only a file it can read",
            hint="fix it by hand, or move it away to start again from the defaults",
        ) from exc


def _save(paths: Paths, document: tomlkit.TOMLDocument) -> None:
    """Write config.toml atomically: 0600 when new, in a 0700 directory when that is new too."""
    import tomlkit

    directory = paths.config_dir
    try:
        if not directory.is_dir():
            directory.mkdir(parents=True, mode=0o700)
            os.chmod(directory, 0o700)  # mkdir's mode is cut by the umask; this is exact
        atomic.write_atomic(paths.config_file, tomlkit.dumps(document).encode("utf-8"))
    except OSError as exc:
        raise EngramError(
            f"cannot write config file {paths.config_file}: {exc.strerror}",
            hint="check that you may write to that directory",
        ) from exc


def _has_comment(table: Any) -> bool:
    from tomlkit.items import Comment

    body = getattr(getattr(table, "value", None), "body", [])
    return any(isinstance(item, Comment) for _, item in body)


def set_value(paths: Paths, key: str, raw: str) -> Any:
    """Persist one setting in config.toml and return the stored value; ``none`` unsets it.

    Only that key's line changes: comments, order and the other settings stay as they were.
    """
    value = coerce(key, raw)
    if value is None:
        # TOML has no null: a setting without a value is one returned to its default.
        unset_value(paths, key)
        return None
    import tomlkit

    document = _document(paths.config_file)
    parts = key.split(".")
    node: Any = document
    for depth, part in enumerate(parts[:-1]):
        if part not in node:
            # [decay.half_life_days] needs no empty [decay] header above it.
            node[part] = tomlkit.table(is_super_table=depth < len(parts) - 2)
        node = node[part]
        if not isinstance(node, MutableMapping):
            where = ".".join(parts[: depth + 1])
            raise InvalidInput(
                f"{paths.config_file}: {where} is a single value, but settings go under it",
                hint=f"fix it by hand: remove `{where} = …`, or run `engram config unset {where}`",
            )
    node[parts[-1]] = value
    _save(paths, document)
    return value


def unset_value(paths: Paths, key: str) -> bool:
    """Remove one key from config.toml (known or not), keeping everything else; False if it was not there."""
    document = _document(paths.config_file)
    parts = key.split(".")
    chain: list[Any] = [document]
    for part in parts[:-1]:
        node = chain[-1]
        chain.append(node.get(part) if isinstance(node, MutableMapping) else None)
    if isinstance(chain[-1], MutableMapping) and parts[-1] in chain[-1]:
        del chain[-1][parts[-1]]
        # A table this emptied goes too, unless a comment of the user's lives in it.
        for depth in range(len(parts) - 1, 0, -1):
            if chain[depth] or _has_comment(chain[depth]):
                break
            del chain[depth - 1][parts[depth - 1]]
        _save(paths, document)
        return True
    _default_for(key)  # a key that is neither a setting nor in the file is a typo worth saying
    return False
