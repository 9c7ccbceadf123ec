"""Domain errors. The library raises these; only ``engram_cli.cli`` turns them into exit codes."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Self


class EngramError(Exception):
    """Base class: a problem the user can act on. ``hint`` says what to do next.

    ``param`` names the Python parameter (or parameters) the error is about. The message quotes each
    as `name`, in backticks, so that a front end can call it by its own name: the CLI says --now
    where the library says `now` (see :meth:`naming`).
    """

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None, *, param: str | tuple[str, ...] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.params: tuple[str, ...] = (param,) if isinstance(param, str) else tuple(param or ())

    @property
    def param(self) -> str | None:
        """The parameter the error is about (the first, when it names several), or None."""
        return self.params[0] if self.params else None

    def naming(self, names: Mapping[str, str]) -> Self:
        """This error with its parameters called ``names[param]`` in the message and hint (itself if none is named)."""
        renames = {f"`{p}`": names[p] for p in self.params if p in names}
        if not renames:
            return self
        named = copy.copy(self)
        for quoted, name in renames.items():
            named.message = named.message.replace(quoted, name)
            named.hint = None if named.hint is None else named.hint.replace(quoted, name)
        named.args = (named.message,)
        return named


class UsageError(EngramError):
    """The call itself is wrong (bad flag value, conflicting options)."""

    exit_code = 2


class InvalidInput(EngramError):
    """A value given to the engine is not acceptable (empty text, bad type, out of range)."""


class UnknownNamespace(InvalidInput):
    """A namespace named for reading holds no memory: most often a typo of one that does."""


class NotFound(EngramError):
    """No memory (or other object) matches the given id or prefix."""


class AmbiguousId(EngramError):
    """An id prefix matches more than one memory."""


class StoreError(EngramError):
    """The database cannot be opened, created, migrated or written."""


class DatabaseDamaged(StoreError):
    """Part of the database file cannot be read: pages were overwritten, cut off or unreadable on disk."""


class ReadOnlyDatabase(StoreError):
    """The database, or the directory SQLite keeps its -wal and -shm files in, is not writable."""


class ModelError(EngramError):
    """An embedding model is missing, corrupt or cannot be loaded."""


class ConflictError(EngramError):
    """A concurrent writer changed a memory and retries were exhausted."""


class BusyError(EngramError):
    """Another process holds a lock this command needs; running again later will work."""

    exit_code = 75  # EX_TEMPFAIL: cron wrappers and hooks read it as "try again later"


class ProblemsRemain(EngramError):
    """`audit --strict` found problems that are still there: a non-zero exit for cron alerts."""


class IntegrationError(EngramError):
    """A hook, settings file or repository is not in a state engram can change safely; nothing was changed."""
