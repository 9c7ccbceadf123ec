"""Secrets and personal data in text: find them, and replace them with ``[REDACTED:<kind>]``.

Detection follows the published format of each credential (an AWS key id is AKIA or ASIA
and 16 more characters; a GitHub token starts with ghp_, gho_, …; Stripe secret keys with
sk_live_ or sk_test_, npm tokens with npm_, Hugging Face tokens with hf_) rather than
guessing from entropy, because a memory store is full of harmless random-looking strings:
commit SHAs, content hashes, UUIDs, build ids. Free-form secrets are recognised only by their
label: ``password=…``, ``"api_key": …``, ``Authorization: Bearer …``, the password part of a
URL, ``AccountKey=`` and ``SharedAccessSignature=``/``sig=`` in Azure connection strings and
SAS URLs, a Chinese label with a colon or 是/为 (``密码：…``, ``口令是…``, ``令牌：…``), and
on command lines a mysql-family client's glued ``-p…``, ``sshpass -p …``, ``--password …``
and an HTTP client's ``-u user:…`` (the user stays). Personal numbers carry their own checks:
a card number must start like a card and pass Luhn; a Chinese resident id must hold a real
birth date and its check digit; a US SSN must be in ``ddd-dd-dddd`` form outside the ranges
that are never issued.

E-mail addresses and phone numbers are personal data too, but found only with
``contact=True``: a phone number must have a shape people write one in (``+`` and a country
code, a Chinese mobile number, a US number with its area code), never a bare run of digits.
:data:`KINDS` are the kinds found by default, :data:`CONTACT_KINDS` the ones ``contact`` adds.

A finding spans the secret *value* only, so ``password=hunter2`` becomes
``password=[REDACTED:password-assignment]`` and the text still says what was there.
Markers are never reported again, which makes :func:`redact` idempotent.

Every pattern runs in linear time: a memory may be 100,000 characters of anything.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

SECRET = "secret"
PERSONAL = "personal"

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


@dataclass(frozen=True)
class Finding:
    """One secret or personal value: its kind, its span in the text, "secret" or "personal"."""

    kind: str
    start: int
    end: int
    category: str


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


# -- patterns --------------------------------------------------------------------------------

Check = Callable[[re.Match[str]], bool]


@dataclass(frozen=True)
class _Pattern:
    kind: str
    category: str
    regex: re.Pattern[str]  # the value is the named group "v"
    check: Check | None = None
    # A free-form value (a password after its label) that runs into a marker or a stronger
    # finding stops there; a fixed-format one is then dropped.
    free: bool = False


def _rx(pattern: str, flags: int = 0) -> re.Pattern[str]:
    # ASCII mode: \d is 0-9 only, and the edges below do not count Han characters as part of
    # a word, so a key pasted right after "密钥是" is still found.
    return re.compile(pattern, flags | re.ASCII)


_L = r"(?<![A-Za-z0-9_])"
_R = r"(?![A-Za-z0-9_])"
_RD = r"(?![A-Za-z0-9_-])"  # for formats whose alphabet includes '-'

# Setting names that hold a secret; the end of the name decides (DB_PASSWORD, client_secret,
# GITHUB_TOKEN, x-api-key), so "tokens", "tokenizer" or "secretary" do not count. Short or
# common endings (pwd, pass, …_key) count only as the whole name or after a separator.
_STRONG_NAME = r"password|passwd|passphrase|secret|token|api[_-]?key|apikey|credentials?"
_WEAK_NAME = r"pwd|pass|pw|access[_-]?key|private[_-]?key|auth[_-]?key|secret[_-]?key|signing[_-]?key"
_SECRET_NAME = rf"(?:[A-Za-z0-9_.-]*?(?:{_STRONG_NAME})|(?:[A-Za-z0-9_.-]*?[_.-])?(?:{_WEAK_NAME}))"
_SECRET_NAME_RE = _rx(rf"^{_SECRET_NAME}$", re.IGNORECASE)

# An unquoted value: printable ASCII up to a delimiter (non-ASCII text after it is prose).
_BARE = r"(?:\$\{[^{}\s]*\}|\$\([^()\s]*\)|[^\x00-\x20\x7f-\U0010ffff,;&\"'<>(){}\[\]`])+"


def secret_name(name: str) -> bool:
    """True for a setting name that holds a secret (``password``, ``DB_PASS``, ``api-key``, ``csrf_token``)."""
    return _SECRET_NAME_RE.match(name.strip()) is not None


def _assignment_ok(match: re.Match[str]) -> bool:
    value = match.group("v")
    if is_placeholder(value):
        return False
    # $PWD and $OLDPWD hold the working directory.
    if match.group("name").lower().endswith("pwd") and value.startswith(("/", "~", ".")):
        return False
    bare = match.group("q") is None
    if bare and match.group("sep") != ":" and match.group("ws2") and not match.group("ws1"):
        # "password= and …": the value is empty and the next word is prose.
        return False
    if bare and match.group("sep") == ":" and match.group("kq") is None:
        # An unquoted "name: value" is a YAML-style setting only when the value ends its
        # line or clause; "Token: we should rotate them" is a sentence.
        # A marker there was a word before it was redacted, so it counts as one.
        rest = match.string[match.end("v") : match.end("v") + 200].split("\n", 1)[0].lstrip(" \t")
        if rest.startswith("[REDACTED:"):
            return False
        if rest[:1].isascii() and rest[:1].isalnum():
            return False
    return True


def _bearer_ok(match: re.Match[str]) -> bool:
    value = match.group("v")
    if is_placeholder(value):
        return False
    if match.group("label") is not None:
        return len(value) >= 8
    # Without an Authorization label "bearer" is an ordinary word: ask for a token's shape.
    return len(value) >= 20 and _mixed(value)


def _openai_ok(match: re.Match[str]) -> bool:
    body = match.group("v")[3:]
    return _mixed(body) and any(c.isupper() for c in body) and any(c.islower() for c in body)


def _random_case(body: str) -> bool:
    """Letters in random case, as in a generated token; an identifier (hf_loadPretrainedModelFromHub) is not."""
    letters = [c for c in body if c.isalpha()]
    upper = sum(c.isupper() for c in letters)
    return bool(letters) and 4 * upper >= len(letters) and 4 * (len(letters) - upper) >= len(letters)


# -- command lines ---------------------------------------------------------------------------

# Words of one command: separated by blanks or a backslash-newline, never across a shell
# operator or a line end. Both runs are possessive and cannot start with the same character,
# so a scan reads each word once and never backtracks into it.
_GAP = r"(?:[ \t]|\\\r?\n)++"
_WORD = r"(?:[^\s\\;|&<>]|\\\S)++"
# A value on a command line: quoted (to the closing quote on its line) or one bare word of
# printable ASCII up to a shell operator. A quote inside a bare word means it was misread.
_SHELL_BARE = r"[^\x00-\x20\x7f-\U0010ffff;|&<>()'\"`]++"
_SHELL_VALUE = rf"(?P<q>['\"])?(?P<v>(?(q)(?:(?!(?P=q))[^\n])++|{_SHELL_BARE}))(?(q)(?P=q)|(?!['\"`]))"
# The mysql family takes its password glued to -p (-pSECRET); "-p" alone asks for it.
_MYSQL_TOOLS = r"dump|admin|import|show|check|slap|binlog"
_MYSQL = rf"(?:mysql(?:{_MYSQL_TOOLS}|pump)?|mariadb(?:-(?:{_MYSQL_TOOLS}))?)"
_HTTP_CLIENT = r"(?:curl|wget|https?|httpie|xh|xhs)"
# Words that follow a flag's name in prose ("pass --password to the command") rather than a value.
_PROSE_WORDS = frozenset(
    {
        *("a", "an", "and", "are", "argument", "as", "at", "be", "but", "by", "can", "flag", "for", "from"),
        *("if", "in", "instead", "is", "it", "may", "must", "not", "of", "on", "only", "option", "or"),
        *("parameter", "should", "so", "switch", "that", "the", "then", "this", "to", "when", "will", "with"),
    }
)


def _shell_value_ok(match: re.Match[str]) -> bool:
    value = match.group("v")
    if is_placeholder(value):
        return False
    # Unquoted or in double quotes, $NAME and $(command) are expanded by the shell: not the secret.
    return not (value.startswith("$") and match.group("q") != "'")


def _password_flag_ok(match: re.Match[str]) -> bool:
    value = match.group("v")
    if match.group("q") is None and value.lower() in _PROSE_WORDS:
        return False
    return _shell_value_ok(match)


def _user_password_ok(match: re.Match[str]) -> bool:
    # "-u https://host" is a URL read as user:password.
    return not match.group("v").startswith("//") and _shell_value_ok(match)


# -- Chinese labels ----------------------------------------------------------------------------

# 密码 (password), 口令 (passphrase), 密钥/秘钥/私钥 (key), 令牌 (token), 授权码 (authorisation
# code), in simplified and traditional characters. The label must be followed by a colon or
# 是/为 ("is"), so prose that only names the thing (忘记密码了, 密码策略要求12位) has no value.
_CN_LABEL = r"(?:密码|密碼|口令|密钥|密鑰|秘钥|秘鑰|金鑰|私钥|私鑰|令牌|權杖|授权码|授權碼)"
_CN_SPACE = r"[ \t\u3000]*+"
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_COUNT = re.compile(r"[0-9][0-9~.-]*")


def _cn_label_ok(match: re.Match[str]) -> bool:
    value = match.group("v")
    if is_placeholder(value):
        return False
    if match.group("q") is None and _COUNT.fullmatch(value):
        # 密码为8位, 密码：6-20 位字母: a number followed by a word is a length, not the password.
        rest = match.string[match.end("v") : match.end("v") + 8].lstrip(" \t\u3000")
        if _HAN.match(rest):
            return False
    return True


# Tried in this order; where findings overlap, the earlier pattern wins, so the GitHub token
# in "token=ghp_…" is reported as a GitHub token rather than as a password assignment.
_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(
        "private-key",
        SECRET,
        _rx(
            r"(?P<v>-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            # Up to the first END, never across the next BEGIN: two keys are two findings.
            r"(?:(?:(?!-----BEGIN)[\s\S])*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            # A block cut off before its END line: the key material that follows it.
            r"|(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/=:,. -]+)*))"
        ),
    ),
    _Pattern("jwt", SECRET, _rx(_L + r"(?P<v>eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,})" + _RD)),
    _Pattern("anthropic-key", SECRET, _rx(_L + r"(?P<v>sk-ant-(?:[a-z]{2,8}\d{2}-)?[A-Za-z0-9_-]{32,})" + _RD)),
    _Pattern(
        "openai-key",
        SECRET,
        _rx(_L + r"(?P<v>sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})" + _RD),
        check=_openai_ok,
    ),
    _Pattern(
        "github-token", SECRET, _rx(_L + r"(?P<v>gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{50,251})" + _R)
    ),
    _Pattern("gitlab-token", SECRET, _rx(_L + r"(?P<v>glpat-[A-Za-z0-9_-]{20,}(?:\.[A-Za-z0-9_-]+)*)" + _RD)),
    _Pattern("slack-token", SECRET, _rx(_L + r"(?P<v>xox[baprs]-(?=[A-Za-z0-9-]*\d)[A-Za-z0-9-]{10,250})" + _RD)),
    _Pattern("google-api-key", SECRET, _rx(_L + r"(?P<v>AIza[A-Za-z0-9_-]{35})" + _RD)),
    _Pattern("aws-access-key-id", SECRET, _rx(_L + r"(?P<v>(?:AKIA|ASIA)[A-Z0-9]{16})" + _R)),
    # Stripe secret and restricted keys; publishable keys (pk_) are meant to be public.
    _Pattern(
        "stripe-key",
        SECRET,
        _rx(_L + r"(?P<v>[sr]k_(?:live|test)_[A-Za-z0-9]{20,})" + _R),
        check=lambda m: not is_placeholder(m.group("v")[8:]),
    ),
    _Pattern(
        "npm-token",
        SECRET,
        _rx(_L + r"(?P<v>npm_[A-Za-z0-9]{36})" + _R),
        check=lambda m: not is_placeholder(m.group("v")[4:]),
    ),
    _Pattern(
        "huggingface-token",
        SECRET,
        _rx(_L + r"(?P<v>hf_[A-Za-z0-9]{30,})" + _R),
        check=lambda m: _random_case(m.group("v")[3:]),
    ),
    # The account key of an Azure storage (or Service Bus) connection string: base64 after its label.
    _Pattern(
        "azure-key",
        SECRET,
        _rx(
            r"(?<![A-Za-z0-9_])(?i:AccountKey|SharedAccessKey)[ \t]*=[ \t]*"
            r"(?P<v>[A-Za-z0-9+/]{20,}=*)(?![A-Za-z0-9+/=])"
        ),
        check=lambda m: not is_placeholder(m.group("v")),
    ),
    # A shared access signature: the whole token in a connection string, else the signature
    # (sig=, base64 and often percent-encoded) in a SAS URL's query.
    _Pattern(
        "azure-sas",
        SECRET,
        _rx(r"(?<![A-Za-z0-9_])(?i:SharedAccessSignature)[ \t]*=[ \t]*(?P<v>[^\s;\"'<>]+)"),
        check=lambda m: not is_placeholder(m.group("v")),
    ),
    _Pattern(
        "azure-sas",
        SECRET,
        _rx(r"(?<![A-Za-z0-9_-])sig=(?P<v>(?:[A-Za-z0-9+/]|%[0-9A-Fa-f]{2}){30,}=*)(?![A-Za-z0-9+/=%])"),
        check=lambda m: not is_placeholder(m.group("v")),
    ),
    _Pattern(
        "aws-secret-key",
        SECRET,
        # Forty base64 characters are also what a SHA-1 in hex looks like: only after its label.
        _rx(
            r"(?i:aws[_ .-]?secret[_ .-]?(?:access[_ .-]?)?key|secret[_ .-]?access[_ .-]?key)"
            r"[\"']?[ \t]*(?:=>|:=|=|:)?[ \t]*[\"']?"
            r"(?<![A-Za-z0-9/+])(?P<v>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
    ),
    _Pattern(
        "bearer-token",
        SECRET,
        _rx(
            r"(?P<label>(?i:authorization)[\"']?[ \t]*[:=][ \t]*[\"']?)?"
            r"(?<![A-Za-z0-9_])(?i:bearer)[ \t]+(?P<v>[A-Za-z0-9._~+/-]+=*)"
        ),
        check=_bearer_ok,
    ),
    _Pattern(
        "url-password",
        SECRET,
        _rx(
            r"(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:\"'<>]*:"
            r"(?P<v>[^\x00-\x20\x7f-\U0010ffff/?#\"'<>]+)@[A-Za-z0-9\[]"
        ),
        check=lambda m: not is_placeholder(m.group("v")),
        free=True,
    ),
    # Passwords on command lines: mysql -pSECRET, sshpass -p SECRET, --password SECRET (the
    # --password=SECRET form is an assignment, below), curl -u user:SECRET.
    _Pattern(
        "cli-password",
        SECRET,
        _rx(rf"(?<![A-Za-z0-9_.-]){_MYSQL}(?:{_GAP}{_WORD}){{0,16}}?{_GAP}-p{_SHELL_VALUE}"),
        check=_shell_value_ok,
        free=True,
    ),
    _Pattern(
        "cli-password",
        SECRET,
        _rx(
            # Only the options sshpass knows may come first, so the command it runs keeps its own -p.
            rf"(?<![A-Za-z0-9_.-])sshpass(?:{_GAP}(?:-[fdP](?:{_GAP})?{_WORD}|-[ehvV](?:{_WORD})?))*+"
            rf"{_GAP}-p(?:{_GAP})?{_SHELL_VALUE}"
        ),
        check=_shell_value_ok,
        free=True,
    ),
    _Pattern(
        "cli-password",
        SECRET,
        _rx(
            # --db-password and --http-password too, never --no-password or --password-file.
            r"(?<![A-Za-z0-9_-])--(?!no-)(?:[a-z0-9]+-)*+(?:password|passphrase|passwd|pass)"
            rf"{_GAP}(?!-){_SHELL_VALUE}"
        ),
        check=_password_flag_ok,
        free=True,
    ),
    _Pattern(
        "basic-auth",
        SECRET,
        _rx(
            rf"(?<![A-Za-z0-9_.-]){_HTTP_CLIENT}(?:{_GAP}{_WORD}){{0,24}}?{_GAP}"
            rf"(?:-[uUa](?:{_GAP})?|--(?:user|proxy-user|auth)(?:=|{_GAP}))"
            r"(?P<q>['\"])?[^\s:'\"`;|&<>]*+:"
            rf"(?P<v>(?(q)(?:(?!(?P=q))[^\n])++|{_SHELL_BARE}))(?(q)(?P=q)|(?!['\"`]))"
        ),
        check=_user_password_ok,
        free=True,
    ),
    _Pattern(
        "cn-secret",
        SECRET,
        _rx(
            rf"{_CN_LABEL}{_CN_SPACE}(?:[是为為]{_CN_SPACE}[:：]?|[:：=＝]){_CN_SPACE}"
            rf"[“「『‘]?(?P<q>[\"'])?(?P<v>(?(q)(?:(?!(?P=q))[^\n])++|{_BARE}))(?(q)(?P=q))"
        ),
        check=_cn_label_ok,
        free=True,
    ),
    _Pattern(
        "password-assignment",
        SECRET,
        _rx(
            r"(?<![A-Za-z0-9_.-])(?P<kq>[\"'])?(?P<name>" + _SECRET_NAME + r")(?(kq)(?P=kq))"
            r"(?P<ws1>[ \t]*)(?P<sep>=>|:=|=|:)(?!=)(?P<ws2>[ \t]*)"
            r"(?P<q>[\"'])?(?P<v>(?(q)(?:(?!(?P=q))[^\n])*|" + _BARE + r"))(?(q)(?P=q))",
            re.IGNORECASE,
        ),
        check=_assignment_ok,
        free=True,
    ),
    _Pattern(
        "cn-id-number",
        PERSONAL,
        _rx(_L + r"(?P<v>[1-8]\d{5}(?:18|19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[0-9Xx])" + _R),
        check=lambda m: cn_id_ok(m.group("v")),
    ),
    _Pattern(
        "us-ssn",
        PERSONAL,
        _rx(r"(?<![A-Za-z0-9_-])(?P<v>(?P<a>\d{3})-(?P<g>\d{2})-(?P<s>\d{4}))(?![A-Za-z0-9_-])"),
        check=lambda m: ssn_ok(m.group("a"), m.group("g"), m.group("s")),
    ),
)

# -- contact details: only when asked for (contact=True) ----------------------------------------

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

CARD_KIND = "card-number"
# Card numbers rank last: an 18-digit resident id can pass Luhn too, and so can a phone number.
_CARD_RANK = len(_PATTERNS) + len(_CONTACT_PATTERNS)
_CATEGORIES = {p.kind: p.category for p in _PATTERNS + _CONTACT_PATTERNS} | {CARD_KIND: PERSONAL}
# What find() reports by default; contact=True adds CONTACT_KINDS.
KINDS = tuple(sorted(kind for kind in _CATEGORIES if kind not in CONTACT_KINDS))


def category(kind: str) -> str:
    """The category of a finding's kind: secret or personal (secret for a kind this module does not know)."""
    return _CATEGORIES.get(kind, SECRET)


# Runs of digit groups separated by one space or dash: where card numbers hide. Greedy with
# no look-ahead, so a long run is read once; what follows the run is checked in Python.
_DIGIT_RUN = _rx(r"(?<![A-Za-z0-9_.])\d+(?:[ -]\d+)*")
_DIGITS = _rx(r"\d+")


def _cards(text: str) -> Iterator[tuple[int, int]]:
    """Spans of card numbers: the longest Luhn-valid stretch of whole digit groups in each run."""
    for run in _DIGIT_RUN.finditer(text):
        groups = [(run.start() + m.start(), run.start() + m.end()) for m in _DIGITS.finditer(run.group())]
        after = text[run.end() : run.end() + 1]
        if after and (after.isascii() and (after.isalnum() or after == "_")):
            groups.pop()  # the last group is glued to a word: not part of a number
        i = 0
        while i < len(groups):
            digits = ""
            best = -1
            for j in range(i, len(groups)):
                digits += text[groups[j][0] : groups[j][1]]
                if len(digits) > 19:
                    break
                if card_ok(digits):
                    best = j
            if best < 0:
                i += 1
                continue
            yield groups[i][0], groups[best][1]
            i = best + 1


def _candidates(text: str, contact: bool) -> Iterator[tuple[int, int, int, str, str, bool]]:
    """(rank, start, end, kind, category, free) for every match of every pattern, overlaps included."""
    for rank, pattern in enumerate(_PATTERNS + _CONTACT_PATTERNS if contact else _PATTERNS):
        for match in pattern.regex.finditer(text):
            if match.start("v") == match.end("v"):
                continue
            if pattern.check is not None and not pattern.check(match):
                continue
            yield rank, match.start("v"), match.end("v"), pattern.kind, pattern.category, pattern.free
    for start, end in _cards(text):
        yield _CARD_RANK, start, end, CARD_KIND, PERSONAL, False


def _find_once(text: str, contact: bool) -> list[Finding]:
    # Spans no finding may enter: the markers already in the text, then each finding taken.
    blocked = [(m.start(), m.end()) for m in MARKER_RE.finditer(text)]
    starts = [s for s, _ in blocked]
    found: list[Finding] = []
    for _, start, end, kind, category, free in sorted(_candidates(text, contact), key=lambda c: (c[0], c[1])):
        k = bisect_left(starts, start)
        if k > 0 and blocked[k - 1][1] > start:
            continue
        if k < len(blocked) and blocked[k][0] < end:
            # A free-form value stops where a marker or a stronger finding begins.
            if not free or is_placeholder(text[start : blocked[k][0]]):
                continue
            end = blocked[k][0]
        starts.insert(k, start)
        blocked.insert(k, (start, end))
        found.append(Finding(kind, start, end, category))
    return sorted(found, key=lambda f: f.start)


def _replace(text: str, findings: list[Finding]) -> tuple[str, list[tuple[int, int]]]:
    """The text with findings replaced by markers, and (offset in output, offset in input) per kept segment."""
    parts: list[str] = []
    segments: list[tuple[int, int]] = []
    pos = out = 0
    for f in findings:
        segments.append((out, pos))
        parts.append(text[pos : f.start])
        out += f.start - pos
        label = marker(f.kind)
        parts.append(label)
        out += len(label)
        pos = f.end
    segments.append((out, pos))
    parts.append(text[pos:])
    return "".join(parts), segments


def find(text: str, *, contact: bool = False) -> list[Finding]:
    """Secrets and personal data in ``text``: non-overlapping, sorted by start; markers are skipped.

    ``contact=True`` also finds e-mail addresses and phone numbers (:data:`CONTACT_KINDS`).
    """
    findings = _find_once(text, contact)
    # A scan reads each pattern's matches left to right without overlap, so a match that
    # swallowed a neighbour and lost to a stronger finding can hide that neighbour until
    # the stronger one is a marker. Scan the redacted text again until nothing new turns
    # up; anything new lies in text copied verbatim from the input, so it maps back.
    while findings:
        redacted, segments = _replace(text, findings)
        more = _find_once(redacted, contact)
        if not more:
            break
        out_starts = [o for o, _ in segments]
        for f in more:
            i = bisect_left(out_starts, f.start + 1) - 1
            shift = segments[i][1] - segments[i][0]
            findings.append(Finding(f.kind, f.start + shift, f.end + shift, f.category))
        findings.sort(key=lambda f: f.start)
    return findings


def redact(text: str, *, contact: bool = False) -> tuple[str, list[Finding]]:
    """``text`` with every finding replaced by ``[REDACTED:<kind>]``, and the findings (spans in the input)."""
    findings = find(text, contact=contact)
    if not findings:
        return text, findings
    return _replace(text, findings)[0], findings


def redact_data(value: Any, *, contact: bool = False) -> tuple[Any, list[str]]:
    """Redact decoded JSON (metadata, event payloads): every string, and whole strings under secret names.

    Returns the new value and the kinds found. ``{"token": "abc"}`` has no label inside the
    string itself, so a string stored under a secret-holding key is redacted whole.
    """
    kinds: list[str] = []

    def walk(node: Any, key: str | None) -> Any:
        if isinstance(node, str):
            if key is not None and secret_name(key) and not is_placeholder(MARKER_RE.sub("", node)):
                kinds.append("password-assignment")
                return marker("password-assignment")
            text, found = redact(node, contact=contact)
            kinds.extend(f.kind for f in found)
            return text
        if isinstance(node, dict):
            return {k: walk(v, str(k)) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, None) for v in node]
        return node

    return walk(value, None), kinds
