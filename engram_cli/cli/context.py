"""What every command shares: resolved paths, the configuration, the open store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from engram_cli import config as configmod

if TYPE_CHECKING:
    from engram_cli.api import Engram


@dataclass
class AppContext:
    db: str | None = None
    verbose: int = 0
    hook: str | None = None  # the hook that started this process (`--hook NAME`), if any
    shown: bool = False  # the command's result is printed (a later failure adds no JSON document)
    # False: the store searches without building a missing vector index (see Engram.open); set before engram().
    build_index: bool = True
    _paths: configmod.Paths | None = field(default=None, repr=False)
    _config: configmod.Config | None = field(default=None, repr=False)
    _engram: Engram | None = field(default=None, repr=False)

    @property
    def paths(self) -> configmod.Paths:
        if self._paths is None:
            self._paths = configmod.Paths.resolve(self.db)
        return self._paths

    @property
    def config(self) -> configmod.Config:
        if self._config is None:
            from engram_cli import render

            self._config = configmod.load(self.paths)
            # Said once per command, the first time anything reads a setting.
            render.config_warnings(self._config.warnings)
        return self._config

    def engram(self) -> Engram:
        """The store, opened (and created or migrated) on first use."""
        if self._engram is None:
            from engram_cli.api import Engram

            self._engram = Engram.open(config=self.config, paths=self.paths, build_index=self.build_index)
        return self._engram

    def record_hook_failure(self, code: int, message: str) -> None:
        """Note a hook's failure in hooks.log under the data directory (never raises)."""
        from engram_cli.api import hooks

        hooks.record_hook_failure(self.paths, self.hook or "hook", code, message)

    def close(self) -> None:
        if self._engram is not None:
            self._engram.close()
            self._engram = None
