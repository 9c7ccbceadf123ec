"""Checks run beside the audit's own: in a thread, on a second read-only connection to the file.

SQLite's integrity check reads every page in C, without Python's lock, and the secrets check reads
every text column; either can run while the audit's own connection serves the other checks. When no
second connection can be had, or the job fails there, the caller runs it on its own connection, where
any error surfaces as it always did.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from engram_cli.store.database import Database
from engram_cli.store.db import open_reader

log = logging.getLogger(__name__)

T = TypeVar("T")


class Beside(Generic[T]):
    """``job`` run in a thread of its own on a second connection to the database at ``path``."""

    def __init__(self, path: Path, job: Callable[[Database], T], name: str) -> None:
        self._path, self._job, self._name = path, job, name
        self._reader: Database | None = None
        self._opened = threading.Event()
        self._found: T | None = None
        # A daemon: an audit stopped by an error or ^C does not wait for SQLite to finish reading.
        self._thread = threading.Thread(target=self._run, name=f"engram-{name}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            try:
                self._reader = open_reader(self._path)
            finally:
                self._opened.set()
            self._found = self._job(self._reader)
        # Whatever went wrong here, the caller runs the job again on its own connection, where it surfaces.
        except Exception as exc:
            log.info("%s on a second connection failed (%s); running it on the first", self._name, exc)
        finally:
            if self._reader is not None:
                self._reader.close()

    def result(self) -> T | None:
        """What the job returned (waiting for it); None when it could not run here."""
        self._thread.join()
        return self._found

    def stop(self) -> None:
        """Interrupt the job and wait for its thread: the audit it was for has failed."""
        self._opened.wait()
        if self._reader is not None:
            self._reader.interrupt()
        self._thread.join()
