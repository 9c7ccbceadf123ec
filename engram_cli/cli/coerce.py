"""Option values turned into Python values without building a pydantic model per option.

Typer (0.2x) coerces every option and argument through a pydantic ``TypeAdapter``: the first
command to run imports pydantic and builds one adapter per parameter, unset ones included. That
costs more than the rest of `engram list` together, for values that are plain strings, numbers
and flags. :func:`install` gives each parameter a coercer that converts those plain values
itself and hands everything else (paths, values it would refuse, types it does not know) to
Typer's own coercion, which then words any error exactly as before. tests/test_startup.py
checks that both give the same value or the same error for every parameter of every command.

A Typer without per-parameter coercion objects (older or newer) is left as it is.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from typing import Any, get_args, get_origin

# Integers and decimals as a command line spells them, which pydantic reads the same way.
# Anything else (" 5", "1_000", "1e3", "nan", a 19th digit) takes Typer's path.
_INT = re.compile(r"-?[0-9]{1,18}")
_FLOAT = re.compile(r"-?[0-9]{1,15}(?:\.[0-9]{1,15})?")

_UNCONVERTED = object()  # a value the plain path leaves to Typer


class PlainCoercion:
    """Coerces one parameter's value like Typer's runtime coercion does, for the plain cases."""

    def __init__(self, param: Any) -> None:
        descriptor = param.type_descriptor
        info = descriptor.parameter_info
        annotation = descriptor.annotation
        self._list = get_origin(annotation) is list
        self._leaf = get_args(annotation)[0] if self._list else annotation
        self._min = info.min
        self._max = info.max
        # Whatever this class does not convert is converted by Typer's own coercion object.
        self._plain = (
            info.parser is None
            and not info.clamp
            and descriptor.file_annotation is None
            and (self._leaf in (str, int, float, bool) or _is_enum(self._leaf, info.case_sensitive))
        )
        self._descriptor = descriptor
        self._typer: Any = None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        """The value for the command function (the signature of Typer's ``RuntimeParam.coerce``)."""
        if self._plain and value is None:
            return () if param.multiple or param.nargs == -1 else None
        if self._plain:
            converted = self._convert(value)
            if converted is not _UNCONVERTED:
                return converted
        return self._typer_coercion().coerce(value, param=param, ctx=ctx)

    def _typer_coercion(self) -> Any:
        if self._typer is None:
            from typer._coercion import build_runtime_param

            self._typer = build_runtime_param(self._descriptor)
        return self._typer

    def _convert(self, value: Any) -> Any:
        if not self._list:
            return self._one(value)
        if not isinstance(value, (list, tuple)):
            return _UNCONVERTED
        items = [self._one(item) for item in value]
        return _UNCONVERTED if any(item is _UNCONVERTED for item in items) else items

    def _one(self, value: Any) -> Any:
        leaf = self._leaf
        if leaf is str:
            return value if type(value) is str else _UNCONVERTED
        if leaf is bool:
            return value if type(value) is bool else _UNCONVERTED
        if isinstance(leaf, type) and issubclass(leaf, enum.Enum):
            if isinstance(value, leaf):
                return value
            if type(value) is str:
                return next((member for member in leaf if member.value == value), _UNCONVERTED)
            return _UNCONVERTED
        number: int | float
        if leaf is int:
            if type(value) is int:
                number = value
            elif type(value) is str and _INT.fullmatch(value):
                number = int(value)
            else:
                return _UNCONVERTED
        else:  # float
            if type(value) in (int, float) or (type(value) is str and _FLOAT.fullmatch(value)):
                number = float(value)
            else:
                return _UNCONVERTED
        if (self._min is not None and number < self._min) or (self._max is not None and number > self._max):
            return _UNCONVERTED  # out of range: Typer says so, in its words
        return number


def _is_enum(annotation: Any, case_sensitive: bool) -> bool:
    """An enum whose values are strings, matched as typed (Typer's default)."""
    return (
        case_sensitive
        and isinstance(annotation, type)
        and issubclass(annotation, enum.Enum)
        and all(isinstance(member.value, str) for member in annotation)
    )


def install(params: Iterable[Any]) -> None:
    """Give each Typer parameter the plain coercion; a parameter of another shape is left alone."""
    for param in params:
        if getattr(param, "_runtime_param", _UNCONVERTED) is None and hasattr(param, "type_descriptor"):
            param._runtime_param = PlainCoercion(param)


def installed(param: Any) -> Any:
    """``param`` (None, or a parameter made late, like --help) after :func:`install`."""
    if param is not None:
        install([param])
    return param


def install_tree(command: Any) -> None:
    """:func:`install` for a command and, for a group, every command under it."""
    install(command.params)
    for sub in getattr(command, "commands", {}).values():
        install_tree(sub)
