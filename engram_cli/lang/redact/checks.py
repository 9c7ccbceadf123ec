"""Checks a regular expression cannot make: placeholders, Luhn and card prefixes, resident ids, SSNs, token shape."""

from __future__ import annotations

import re
from datetime import date

# -- placeholders: values that stand for a secret without being one -----------------------

_PLACEHOLDER = re.compile(
    "^(?:"
    + "|".join(
        [
            r"\*+|x+|\.{2,}|…|-+|_+|\?+|#+",  # masks and ellipses
            r"<[^<>]*>|\[[^\[\]]*\]|\{\{?[^{}]*\}?\}",  # <password>, [secret], {token}, {{ token }}
            r"\$\{[^}]*\}?|\$\(?[A-Za-z_][A-Za-z0-9_]*\)?|%[A-Za-z_][A-Za-z0-9_]*%",  # ${X}, $X, $(X), %X%
            r"%(?:\([A-Za-z_]+\))?s|\{\d*\}",  # %s, %(name)s, {}, {0}
            r"(?:process\.env|import\.meta\.env|os\.environ|os\.getenv|getenv|env)\b.*",  # read from the environment
            r"null|none|nil|undefined|true|false|empty|redacted",
        ]
    )
    + ")$",
    re.IGNORECASE,
)


def is_placeholder(value: str) -> bool:
    """True for a value that names or masks a secret instead of being one (``***``, ``${DB_PASS}``)."""
    stripped = value.strip().strip("'\"`")
    return not stripped or bool(_PLACEHOLDER.match(stripped))


# -- checks a regular expression cannot make ------------------------------------------------


def luhn_ok(digits: str) -> bool:
    """The Luhn checksum that every payment card number satisfies."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = ord(char) - 48
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


# Issuer prefixes of the card networks. One long number in ten passes Luhn by chance; one
# that starts like no card is a timestamp, an order number or an id, not a card.
_CARD_PREFIX = re.compile(
    r"^(?:4"  # Visa
    r"|5[1-5]|2(?:22[1-9]|2[3-9]\d|[3-6]\d\d|7[01]\d|720)"  # Mastercard
    r"|3[47]"  # American Express
    r"|3(?:0[0-5]|[68])"  # Diners Club
    r"|35(?:2[89]|[3-8]\d)"  # JCB
    r"|6(?:011|4[4-9]|5)"  # Discover
    r"|62"  # UnionPay
    r"|5[06-8]|6\d"  # Maestro
    r")"
)


def card_ok(digits: str) -> bool:
    """13-19 digits, a card network's prefix, not one repeated digit, and Luhn."""
    return (
        13 <= len(digits) <= 19 and len(set(digits)) > 1 and _CARD_PREFIX.match(digits) is not None and luhn_ok(digits)
    )


_CN_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK = "10X98765432"


def cn_id_ok(value: str, today: date | None = None) -> bool:
    """An 18-character PRC resident id: a birth date that exists (1900 to today) and the ISO 7064 check digit."""
    if len(value) != 18 or not value[:17].isdigit():
        return False
    try:
        born = date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    if born.year < 1900 or born > (today or date.today()):
        return False
    total = sum(int(d) * w for d, w in zip(value[:17], _CN_WEIGHTS, strict=True))
    return _CN_CHECK[total % 11] == value[17].upper()


def ssn_ok(area: str, group: str, serial: str) -> bool:
    """Outside the SSN ranges never issued: area 000, 666 and 900-999, group 00, serial 0000."""
    return area not in ("000", "666") and not area.startswith("9") and group != "00" and serial != "0000"


def _mixed(value: str) -> bool:
    """A digit and a letter: real tokens have both, words and slugs (sk-learn-pipeline) rarely do."""
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
