"""Timestamps: ISO 8601 UTC strings with a fixed width, so text order is time order."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from engram_cli.errors import InvalidInput

_FMT = "%Y-%m-%dT%H:%M:%S.%fZ"
_RELATIVE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w|y)\s*(?:ago)?\s*$", re.I)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def now() -> datetime:
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime(_FMT)


def iso_now() -> str:
    return to_iso(now())


def parse_time(
    text: str, *, reference: datetime | None = None, what: str = "time", param: str | None = None
) -> datetime:
    """Parse ISO 8601 (date or date-time; naive means UTC) or a relative span like ``7d``.

    An error calls the value ``what``, or the parameter ``param`` it was given as.
    """
    raw = text.strip()
    match = _RELATIVE.match(raw)
    if match:
        seconds = float(match.group(1)) * _UNITS[match.group(2).lower()]
        return (reference or now()) - timedelta(seconds=seconds)
    candidate = raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError as exc:
        raise InvalidInput(
            f"cannot read {f'`{param}`' if param else what} {text!r}",
            hint="use ISO 8601 (2026-05-01 or 2026-05-01T09:30:00Z) or a span like 7d, 12h, 2w",
            param=param,
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def normalize_iso(text: str, *, what: str = "time", param: str | None = None) -> str:
    return to_iso(parse_time(text, what=what, param=param))


def from_iso(text: str) -> datetime:
    return parse_time(text)
