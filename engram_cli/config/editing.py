"""`engram config set` and `unset`: change one key of config.toml, keeping its comments and layout."""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram_cli import atomic
from engram_cli.config import schema
from engram_cli.config.paths import Paths
from engram_cli.errors import EngramError, InvalidInput

if TYPE_CHECKING:
    import tomlkit


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
    value = schema.coerce(key, raw)
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
    schema.key(key)  # a key that is neither a setting nor in the file is a typo worth saying
    return False
