"""Where the warm service of a database listens, found the same way by the hook and by the service.

Imported by the hook on every prompt, so it uses only the standard library's cheapest modules.
One service serves one database for one engram install and one environment: the socket's name is
a hash of the database's resolved path, engram's version, the interpreter and package that run
it, and every environment variable that could change what a command prints (``KEY_ENV``). A
service started from another environment therefore never answers for this one.
"""

from __future__ import annotations

import os
import stat
import sys

from engram_cli._version import __version__

# typing costs the hook tens of milliseconds; mypy treats this name like typing.TYPE_CHECKING.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

# CPython's own SHA-256 rather than hashlib's: hashlib loads and initialises OpenSSL first, which
# costs a hook tens of milliseconds; the digest is the same.
if TYPE_CHECKING:
    from hashlib import sha256
else:
    try:
        from _sha256 import sha256  # Python 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # Python 3.12 and later
        except ImportError:
            from hashlib import sha256

PROTOCOL = 1
APP_NAME = "engram"
DB_FILENAME = "engram.db"

# A Unix socket's path must fit in sun_path (108 bytes on Linux, with its terminating zero).
MAX_SOCKET_PATH = 100

# Variables that decide where engram reads, what it reads, how it encodes and colours output.
KEY_ENV_PREFIXES = ("ENGRAM_", "XDG_", "LC_")
KEY_ENV_NAMES = (
    "HOME", "TZ", "LANG", "LANGUAGE", "PYTHONIOENCODING", "PYTHONUTF8", "NO_COLOR", "FORCE_COLOR", "TERM",
    "COLORTERM", "COLUMNS", "LINES", "TTY_COMPATIBLE", "TTY_INTERACTIVE",
)  # fmt: skip
# Variables that may differ from one prompt to the next: the assistants' project directories.
REQUEST_ENV_NAMES = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR")


def supported() -> bool:
    """Whether this platform has what the warm path needs: Unix sockets whose peer's user can be checked.

    Linux has SO_PEERCRED; elsewhere the hook always runs cold.
    """
    return sys.platform.startswith("linux") and hasattr(os, "getuid")


def forwarded_env(env: Mapping[str, str]) -> dict[str, str]:
    """The variables a request carries: those that decide the output, and nothing else (no secrets)."""
    return {
        name: value
        for name, value in env.items()
        if name.startswith(KEY_ENV_PREFIXES) or name in KEY_ENV_NAMES or name in REQUEST_ENV_NAMES
    }


def database(db: str | None, env: Mapping[str, str]) -> str | None:
    """The database a command with ``--db db`` opens, resolved; None for the platform's data directory.

    The same precedence as ``config.Paths.resolve``: --db, ENGRAM_DB, ENGRAM_HOME, the platform's data
    directory (which only ``env`` decides, so it enters the key through the variables instead).
    """
    explicit = db if db is not None else env.get("ENGRAM_DB") or None
    if explicit:
        return os.path.realpath(os.path.expanduser(explicit))
    home = env.get("ENGRAM_HOME")
    if home:
        return os.path.realpath(os.path.join(os.path.expanduser(home), DB_FILENAME))
    return None


def service_key(db: str | None, env: Mapping[str, str]) -> str:
    """The name of the service for this database, install and environment."""
    digest = sha256()
    package = os.path.dirname(os.path.abspath(__file__))
    parts = [str(PROTOCOL), __version__, sys.executable, package, db or "<platform data dir>"]
    keyed = forwarded_env(env)
    parts += [f"{name}={keyed[name]}" for name in sorted(keyed) if name not in REQUEST_ENV_NAMES]
    for part in parts:
        digest.update(os.fsencode(part) + b"\0")
    return digest.hexdigest()[:24]


def runtime_dir(env: Mapping[str, str]) -> str:
    """The per-user directory for sockets: $XDG_RUNTIME_DIR/engram, else ``run`` in engram's cache directory."""
    runtime = env.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, APP_NAME)
    home = env.get("ENGRAM_HOME")
    if home:
        return os.path.join(os.path.expanduser(home), "cache", "run")
    cache = env.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
    return os.path.join(cache, APP_NAME, "run")


def private_dir(path: str, *, create: bool) -> bool:
    """Whether ``path`` is a real directory of this user that nobody else may enter (made so if ``create``)."""
    if create:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError:
            return False
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and info.st_mode & 0o077 == 0


def socket_path(db: str | None, env: Mapping[str, str]) -> str | None:
    """Where the service for ``db`` (as :func:`database` resolves it) listens; None when no socket can be there."""
    path = os.path.join(runtime_dir(env), f"{service_key(db, env)}.sock")
    return path if len(os.fsencode(path)) <= MAX_SOCKET_PATH else None


def lock_path(sock: str) -> str:
    """The lock a service holds while it lives (and its starter while it starts it)."""
    return sock[: -len(".sock")] + ".lock"


def version_file() -> str:
    """The file that holds engram's version: replaced whenever engram is upgraded or reinstalled."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_version.py")
