"""Health checks for `engram doctor` and the model listing for `engram models`."""

from __future__ import annotations

import stat
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram_cli import config as configmod
from engram_cli.errors import EngramError
from engram_cli.serialize import to_json


@dataclass
class Check:
    """One thing `engram doctor` looked at: ok, warn or fail, and what to do about it."""

    check: str
    status: str  # ok, warn, fail
    detail: str
    hint: str | None = None


@dataclass
class DoctorReport:
    checks: list[Check]

    @property
    def failed(self) -> bool:
        return any(c.status == "fail" for c in self.checks)

    def json_form(self, **options: Any) -> Any:
        return to_json(self.checks, **options)


@dataclass
class ModelInfo:
    """One bundled model, as `engram models` lists it."""

    id: str
    name: str
    dim: int
    merge_threshold: float | None
    licence: str
    size_bytes: int
    path: Path
    active: bool  # new vectors are made with it
    vectors: int  # stored vectors it made


@dataclass
class ModelListing:
    models: list[ModelInfo]

    def json_form(self, **options: Any) -> Any:
        return to_json(self.models, **options)


def model_rows(active: str, vector_counts: dict[str, int] | None = None) -> ModelListing:
    """Installed models, the active one marked."""
    from engram_cli.embed import available_models

    rows = []
    for manifest in available_models():
        size = sum((manifest.path / name).stat().st_size for name in manifest.files if (manifest.path / name).exists())
        rows.append(
            ModelInfo(
                id=manifest.id,
                name=manifest.name,
                dim=manifest.dim,
                merge_threshold=manifest.merge_threshold,
                licence=manifest.licence,
                size_bytes=size,
                path=manifest.path,
                active=manifest.id == active,
                vectors=(vector_counts or {}).get(manifest.id, 0),
            )
        )
    return ModelListing(rows)


def run(paths: configmod.Paths) -> DoctorReport:
    """Every check, in the order a person would fix things."""
    return DoctorReport(_checks(paths))


def _checks(paths: configmod.Paths) -> list[Check]:
    results: list[Check] = []
    results.append(Check("python", "ok", sys.version.split()[0]))
    try:
        cfg = configmod.load(paths)
        results.append(
            Check("config", "ok", f"{paths.config_file} ({'present' if paths.config_file.exists() else 'defaults'})")
        )
        results.extend(
            Check("config", "warn", warning, "engram uses the default until config.toml is fixed")
            for warning in cfg.warnings
        )
    except EngramError as exc:
        results.append(Check("config", "fail", exc.message, exc.hint))
        return results

    try:
        from engram_cli.store.db import binding_versions, vec_version

        apsw_version, sqlite_version = binding_versions()
        results.append(Check("sqlite", "ok", f"apsw {apsw_version}, SQLite {sqlite_version}, FTS5"))
        results.append(Check("sqlite-vec", "ok", f"loaded {vec_version()}"))
    except EngramError as exc:
        results.append(Check("sqlite-vec", "fail", exc.message, exc.hint))
    except Exception as exc:  # any import or build problem of the binding
        results.append(Check("sqlite", "fail", str(exc), "pip install --force-reinstall apsw sqlite-vec"))

    db = paths.db
    active = cfg.settings.model
    if not db.exists():
        where = db.parent if db.parent.exists() else None
        hint = "it is created on the first `engram add`"
        if where is None and not paths.db_is_default:
            hint = f"create {db.parent} first, or choose another --db"
        results.append(Check("database", "warn", f"{db} does not exist yet", hint))
    else:
        mode = stat.S_IMODE(db.stat().st_mode)
        if mode & 0o077:
            results.append(
                Check("permissions", "warn", f"{db} is mode {mode:o}; others can read it", f"chmod 600 {db}")
            )
        else:
            results.append(Check("permissions", "ok", f"{db} mode {mode:o}"))
        try:
            from engram_cli.store.database import damaged, read_only_error
            from engram_cli.store.db import connect

            store = connect(db)
            try:
                if store.read_only is not None:
                    fix = read_only_error(db, store.read_only).hint
                    detail = f"{db} can be read but not changed: {store.read_only}"
                    results.append(Check("writable", "warn", detail, fix))
                found = store.maintenance.integrity_problems(quick=True)
                if found:
                    error = damaged(db, f"quick_check: {found[0]}")
                    results.append(Check("database", "fail", error.message, error.hint))
                else:
                    count = store.memories.count()
                    active = store.setting("active_model") or active
                    detail = f"{db}: schema {store.schema_version()}, {count} memories, quick_check ok"
                    results.append(Check("database", "ok", detail))
            finally:
                store.close()
        except EngramError as exc:
            results.append(Check("database", "fail", exc.message, exc.hint))

    try:
        from engram_cli.embed import available_models, load_embedder, verify

        manifests = available_models()
        if not manifests:
            results.append(Check("models", "fail", "no bundled models found", "reinstall engram-localmem"))
        for manifest in manifests:
            problems = verify(manifest)
            if problems:
                results.append(Check(f"model {manifest.id}", "fail", "; ".join(problems), "reinstall engram-localmem"))
            else:
                results.append(Check(f"model {manifest.id}", "ok", "files match their checksums"))
        embedder = load_embedder(active)
        vector = embedder.embed_batch(["doctor check 健康检查"], kind="query")
        results.append(Check("embedding", "ok", f"{active} gives {vector.shape[1]}-d vectors (active model)"))
    except EngramError as exc:
        results.append(Check("embedding", "fail", exc.message, exc.hint))
    results.append(_hooks(paths))
    return results


# Hook failures older than this are history, not a problem to report.
HOOK_FAILURE_DAYS = 14


def _hooks(paths: configmod.Paths) -> Check:
    """Failures that installed hooks recorded in hooks.log lately (their own output goes nowhere)."""
    from datetime import timedelta

    from engram_cli.integrations import hooklog
    from engram_cli.timeutil import now

    log = paths.data_dir / hooklog.LOG_FILE
    recent = hooklog.read(log, since=now() - timedelta(days=HOOK_FAILURE_DAYS))
    if not recent:
        return Check("hooks", "ok", f"no hook failures in the last {HOOK_FAILURE_DAYS} days")
    last = recent[-1]
    return Check(
        "hooks",
        "warn",
        f"{len(recent)} hook failure(s) in the last {HOOK_FAILURE_DAYS} days; the latest, {last.at[:16]}Z, "
        f"{last.hook} (exit {last.code}): {last.message}",
        f"see {log}; fix the cause (often a moved database or engram), then delete the file",
    )
