"""The patterns that find secrets and personal numbers, and the building blocks of their expressions.

A pattern finds one kind of value by its published format or by its label; its check then turns
away what an expression cannot tell apart (placeholders, prose, lengths). The order of
:data:`_PATTERNS` decides which finding wins where two overlap.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from engram_cli.lang.redact.checks import _mixed, cn_id_ok, is_placeholder, ssn_ok

SECRET = "secret"
PERSONAL = "personal"


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
