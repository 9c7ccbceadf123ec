"""Contact details, found only when asked for (``contact=True``): e-mail addresses and phone numbers."""

from __future__ import annotations

import re

from engram_cli.lang.redact.patterns import PERSONAL, _Pattern, _rx

# Documentation domains (RFC 2606, RFC 6761) hold no one's mail, and asset names look like
# addresses (icon@2x.png); ccTLDs that mail uses (.md, .rs, .py, …) are not on this list.
_RESERVED_DOMAIN = re.compile(r"(?:^|\.)(?:example\.(?:com|net|org)|example|test|invalid|localhost|local)$")
_FILE_SUFFIXES = frozenset(
    {
        *("png", "jpg", "jpeg", "gif", "svg", "webp", "ico", "bmp", "pdf", "txt", "log", "lock", "html", "htm"),
        *("js", "mjs", "cjs", "ts", "jsx", "tsx", "css", "scss", "json", "yaml", "yml", "toml", "xml"),
    }
)
_PHONE_DIGITS = re.compile(r"\d+", re.ASCII)


def _email_ok(match: re.Match[str]) -> bool:
    domain = match.group("v").rsplit("@", 1)[1].lower()
    if _RESERVED_DOMAIN.search(domain) or domain.rsplit(".", 1)[1] in _FILE_SUFFIXES:
        return False
    # The user of a URL (ssh://git@host) or of a git remote (git@github.com:org/repo) names an
    # account on that host, not a mailbox.
    text, start, end = match.string, match.start("v"), match.end("v")
    scp_remote = text[end : end + 1] == ":" and text[end + 1 : end + 2].strip() != ""
    return text[max(0, start - 3) : start] != "://" and not scp_remote


def _intl_phone_ok(match: re.Match[str]) -> bool:
    value = match.group("v")
    groups = _PHONE_DIGITS.findall(value)
    digits = "".join(groups)
    # E.164 allows 15 digits; a written number has at least 9 with its country code (+354
    # 555 1234), a compact one at least 10. Fewer is a score or an offset (+15, +2026-03-01).
    if not (9 if len(groups) > 1 else 10) <= len(digits) <= 15 or len(set(digits)) < 3:
        return False
    # At most one one-digit group after the country code (the 1 of +33 1 42 68 53 00, a trunk
    # "(0)"): "+1 2 3 4 5 6 7 8 9" is arithmetic.
    if sum(len(g) == 1 for g in groups[1:]) > 1:
        return False
    # Dotted groups of up to three digits are an address (+192.168.100.200).
    return not ("." in value and all(len(g) <= 3 for g in groups))


_CONTACT_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(
        "email",
        PERSONAL,
        # Possessive local part, one label per dot: an address is read once from where it starts.
        _rx(r"(?<![A-Za-z0-9._%+-])(?P<v>[A-Za-z0-9._%+-]++@(?:[A-Za-z0-9-]++\.)+[A-Za-z]{2,63})(?![A-Za-z0-9-])"),
        check=_email_ok,
    ),
    # A phone number only in the shapes people write one: +country code and groups, a Chinese
    # mobile (1[3-9] and 11 digits), a US number with its area code in parentheses or dashes.
    # Dates, versions, ports, ids, timestamps and hashes have none of these shapes.
    _Pattern(
        "phone",
        PERSONAL,
        _rx(r"(?<![A-Za-z0-9_+])(?P<v>\+[1-9]\d*+(?:[ .-]?\(\d{1,5}\)\d*+|[ .-]\d++)*+)(?![A-Za-z0-9_])"),
        check=_intl_phone_ok,
    ),
    _Pattern(
        "phone",
        PERSONAL,
        _rx(
            r"(?<![A-Za-z0-9_+.-])(?<!\d[ -])(?P<v>1[3-9]\d(?:\d{8}|(?P<s>[ -])\d{4}(?P=s)\d{4}))"
            r"(?![A-Za-z0-9_]|[ .-]\d)"
        ),
    ),
    _Pattern(
        "phone",
        PERSONAL,
        # Area code and exchange start with 2-9 (NANP); 211-911 are service numbers, not area codes.
        _rx(
            r"(?<![A-Za-z0-9_+.-])(?<!\d[ -])(?P<v>(?:\([2-9](?!11)\d\d\) ?|[2-9](?!11)\d\d-)[2-9]\d\d-\d{4})"
            r"(?![A-Za-z0-9_]|[ .-]\d)"
        ),
    ),
)
CONTACT_KINDS = ("email", "phone")
