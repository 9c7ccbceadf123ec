"""Storage: one SQLite file opened through apsw with sqlite-vec and FTS5."""

from engram_cli.store.db import Store, connect, migrate

__all__ = ["Store", "connect", "migrate"]
