"""How engram writes JSON into its columns."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> str:
    """One compact, key-sorted form, so equal values are equal bytes (and a value written twice reads the same)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
