"""The JSON form of engram's result objects: one rule for every dataclass, declarations where a shape differs.

A dataclass becomes an object of its fields, in the order they are declared, each value turned
into JSON the same way (paths become strings, tuples and sets lists, counters objects). A type
whose JSON deliberately differs from its fields says so where it is defined:

- per field, with ``field(metadata=json_meta(...))``: a JSON key of its own (``key``), rounding (``digits``),
  or left out (``omit``: internals such as a row's ``pk``);
- per class, with ``json_keys``: the keys in order, naming fields or properties (computed values
  such as ``DecayReport.silent_drifts``); fields not named are left out;
- a class whose JSON is built differently (a memory's keys merged into a hit's, numbers per
  cut-off) defines ``json_form(**options)``, which is used as it is.

This module sits below the engine, so the engine's own ``to_dict()`` methods can use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

_KEY = "engram.json.key"
_DIGITS = "engram.json.digits"
_OMIT = "engram.json.omit"


def json_meta(*, key: str | None = None, digits: int | None = None, omit: bool = False) -> dict[str, Any]:
    """Field metadata for ``dataclasses.field(metadata=...)``: shown as ``key``, rounded to ``digits``, or omitted."""
    metadata: dict[str, Any] = {}
    if key is not None:
        metadata[_KEY] = key
    if digits is not None:
        metadata[_DIGITS] = digits
    if omit:
        metadata[_OMIT] = True
    return metadata


def to_json(value: Any, **options: Any) -> Any:
    """``value`` as plain dicts, lists, strings, numbers, booleans and None, ready for ``json.dumps``.

    ``options`` reach every ``json_form`` on the way down (a hit's ``explain``, an eval's ``per_query``).
    """
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    form = getattr(value, "json_form", None)
    if form is not None and not isinstance(value, type):
        return form(**options)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields(value, options)
    if isinstance(value, Mapping):
        return {key: to_json(item, **options) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [to_json(item, **options) for item in value]
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"{type(value).__name__} has no JSON form")


def _fields(value: Any, options: dict[str, Any]) -> dict[str, Any]:
    fields = {f.name: f for f in dataclasses.fields(value)}
    names = getattr(type(value), "json_keys", None)
    if names is None:
        names = [name for name, f in fields.items() if not f.metadata.get(_OMIT)]
    out: dict[str, Any] = {}
    for name in names:
        field = fields.get(name)
        metadata = field.metadata if field is not None else {}
        data = to_json(getattr(value, name), **options)
        digits = metadata.get(_DIGITS)
        if digits is not None and data is not None:
            data = round(data, digits)
        out[metadata.get(_KEY, name)] = data
    return out
