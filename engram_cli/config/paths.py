"""Where engram keeps its data, configuration and cache."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

APP_NAME = "engram"
DB_FILENAME = "engram.db"


@dataclass(frozen=True)
class Paths:
    """Where engram keeps its data, configuration and cache."""

    data_dir: Path
    config_dir: Path
    cache_dir: Path
    db_explicit: Path | None = None

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def db(self) -> Path:
        return self.db_explicit if self.db_explicit is not None else self.data_dir / DB_FILENAME

    @property
    def db_is_default(self) -> bool:
        return self.db_explicit is None

    @classmethod
    def resolve(cls, db: str | os.PathLike[str] | None = None) -> Paths:
        """Apply the precedence --db > ENGRAM_DB > ENGRAM_HOME > platform directories."""
        home = os.environ.get("ENGRAM_HOME")
        if home:
            base = Path(home).expanduser()
            data, conf, cache = base, base, base / "cache"
        else:
            import platformdirs

            data = Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
            conf = Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))
            cache = Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
        explicit = db if db is not None else os.environ.get("ENGRAM_DB") or None
        return cls(
            data_dir=data,
            config_dir=conf,
            cache_dir=cache,
            db_explicit=Path(explicit).expanduser() if explicit else None,
        )
