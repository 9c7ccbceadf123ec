"""The settings tree read as a flat list of dotted keys: types, defaults, docs, checks.

config.toml, ``ENGRAM_*`` variables and ``engram config set`` speak in dotted keys
(``recall.k``); the program reads typed attributes (``settings.recall.k``). Everything
here is derived from the dataclasses in ``settings.py``, so a new field is at once a key
that loads, checks its type, shows in ``config show`` and appears in the README table.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_cli.config.settings import Settings
from engram_cli.errors import InvalidInput, UsageError

_NONE_WORDS = ("", "none", "null", "default")
_TRUE_WORDS = ("true", "yes", "on", "1")
_FALSE_WORDS = ("false", "no", "off", "0")


@dataclass(frozen=True)
class Key:
    """One setting: its dotted name, value type, default and description."""

    name: str
    kind: type  # bool, int, float or str
    optional: bool  # None is a value too ("decided elsewhere", e.g. by the model's calibration)
    default: Any
    doc: str


def _value_type(annotation: Any, where: str) -> tuple[type, bool]:
    if isinstance(annotation, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(members) == 1 and len(typing.get_args(annotation)) == 2:
            return _value_type(members[0], where)[0], True
    if annotation in (bool, int, float, str):
        return annotation, False
    raise TypeError(f"setting {where}: unsupported type {annotation!r}")


def _walk(cls: type, prefix: str = "") -> Iterator[Key]:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        name = prefix + f.name
        annotation = hints[f.name]
        if dataclasses.is_dataclass(annotation):
            yield from _walk(annotation, name + ".")  # type: ignore[arg-type]
            continue
        kind, optional = _value_type(annotation, name)
        if "doc" not in f.metadata:
            raise TypeError(f"setting {name} has no description; declare it with setting(default, doc)")
        yield Key(name, kind, optional, f.default, f.metadata["doc"])


KEYS: dict[str, Key] = {key.name: key for key in _walk(Settings)}


def docs() -> dict[str, str]:
    """Every setting's one-line description, by dotted key."""
    return {name: key.doc for name, key in KEYS.items()}


def key(name: str) -> Key:
    """The setting called ``name``; a UsageError for a name engram does not know."""
    try:
        return KEYS[name]
    except KeyError:
        raise UsageError(f"unknown setting {name!r}", hint="see `engram config show` for the keys") from None


def flat(settings: Settings) -> dict[str, Any]:
    """Every setting's value by dotted key, in the order of the tree."""
    out: dict[str, Any] = {}
    for name in KEYS:
        node: Any = settings
        for part in name.split("."):
            node = getattr(node, part)
        out[name] = node
    return out


def with_values(settings: Settings, changes: Mapping[str, Any]) -> Settings:
    """A copy of ``settings`` with checked values at dotted keys (the frozen tree is never edited in place)."""
    result: Any = settings
    for name, value in changes.items():
        key(name)
        result = _replaced(result, name.split("."), value)
    assert isinstance(result, Settings)
    return result


def _replaced(node: Any, parts: list[str], value: Any) -> Any:
    head, rest = parts[0], parts[1:]
    return dataclasses.replace(node, **{head: _replaced(getattr(node, head), rest, value) if rest else value})


def coerce(name: str, value: Any) -> Any:
    """Check a value against the setting's type; strings are parsed (`config set`, environment variables)."""
    spec = key(name)
    kind = spec.kind
    if isinstance(value, str) and kind is not str:
        text = value.strip().lower()
        if spec.optional and text in _NONE_WORDS:
            return None
        if kind is float:
            try:
                return float(text)
            except ValueError as exc:
                raise InvalidInput(f"{name} takes a number, not {value!r}") from exc
        if kind is bool:
            if text in _TRUE_WORDS:
                return True
            if text in _FALSE_WORDS:
                return False
            raise InvalidInput(f"{name} takes true or false, not {value!r}")
        try:
            return int(text)
        except ValueError as exc:
            raise InvalidInput(f"{name} takes a whole number, not {value!r}") from exc
    none = " or none" if spec.optional else ""
    if value is None and spec.optional:
        return None
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind is bool and not isinstance(value, bool):
        raise InvalidInput(f"{name} takes true or false{none}, not {value!r}")
    if type(value) is not kind:
        what = {float: "a number", int: "a whole number"}.get(kind, f"a {kind.__name__}")
        raise InvalidInput(f"{name} takes {what}{none}, not {value!r}")
    return value


def unusable_key(path: Path, name: str) -> str:
    """The warning for a key in ``path`` that is no setting, with the nearest real key when there is one."""
    if any(k.startswith(name + ".") for k in KEYS):
        return f"{path}: {name!r} is a table of settings ([{name}]), not a value; ignored"
    close = difflib.get_close_matches(name, list(KEYS), n=1)
    guess = f" (did you mean {close[0]}?)" if close else ""
    return f"{path}: unknown setting {name!r} ignored{guess}; `engram config unset {name}` removes it"
