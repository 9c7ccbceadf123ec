"""`engram get`: a keyed fact's value by exact lookup, without the Engram facade.

The facade imports the engine's numpy-backed modules; a lookup needs only the store. Opening the store
here keeps `engram get KEY` as quick as opening SQLite (no numpy, no onnxruntime, no model), which is
what a shell prompt or a script reading `user:tz` many times a day wants.
"""

from __future__ import annotations

import os
from pathlib import Path

from engram_cli import config as configmod
from engram_cli.api import scope as scopemod
from engram_cli.memory import keys as keysmod
from engram_cli.store import connect


def get_key(
    key: str,
    *,
    namespace: str | None = None,
    path: str | os.PathLike[str] | None = None,
    paths: configmod.Paths | None = None,
    config: configmod.Config | None = None,
    cwd: str | os.PathLike[str] | None = None,
    touch: bool = True,
) -> keysmod.KeyValue:
    """The value of ``key`` in ``namespace``, else in the project of ``cwd`` and then globally (NotFound if none).

    Same answer as ``Engram.lookup``; ``touch`` counts the lookup as an access (not on a read-only file).
    """
    paths = paths or configmod.Paths.resolve(path)
    cfg = config or configmod.load(paths)
    scope = scopemod.resolve(cfg, None if cwd is None else Path(cwd))
    store = connect(paths.db, create_dirs=paths.db_is_default, busy_timeout_ms=cfg.settings.store.busy_timeout_ms)
    try:
        return keysmod.get(store, key, scopemod.namespaces_for(scope, namespace), scope.of, touch=touch)
    finally:
        store.close()
