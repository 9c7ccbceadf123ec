"""Model manifests: what a shipped embedding model is, where it lives, and whether its files are intact."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from engram_cli.errors import ModelError

MODELS_ENV = "ENGRAM_MODELS_DIR"
MANIFEST_NAME = "manifest.json"


@dataclass(frozen=True)
class ModelManifest:
    """The contents of a model's ``manifest.json`` plus the directory it was read from."""

    id: str
    name: str
    dim: int
    pooling: str
    normalize: bool
    query_prefix: str
    passage_prefix: str
    max_tokens: int
    licence: str
    licence_file: str
    path: Path
    files: dict[str, str] = field(default_factory=dict, compare=False)
    source: dict[str, Any] = field(default_factory=dict, compare=False)
    languages: tuple[str, ...] = ()
    scripts: tuple[str, ...] = ()
    merge_threshold: float | None = None
    cluster_threshold: float | None = None
    # Per pair of scripts ("latin", "cjk", "cross"), when calibrated so; else cluster_threshold for all.
    cluster_thresholds: dict[str, float] = field(default_factory=dict, compare=False)
    build: str = ""

    @classmethod
    def from_file(cls, path: Path) -> ModelManifest:
        """Read ``path`` (a manifest.json); raise ModelError when it is unreadable or incomplete."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                id=str(data["id"]),
                name=str(data["name"]),
                dim=int(data["dim"]),
                pooling=str(data["pooling"]),
                normalize=bool(data["normalize"]),
                query_prefix=str(data["query_prefix"]),
                passage_prefix=str(data["passage_prefix"]),
                max_tokens=int(data["max_tokens"]),
                licence=str(data["licence"]),
                licence_file=str(data["licence_file"]),
                path=path.parent,
                files=dict(data["files"]),
                source=dict(data.get("source") or {}),
                languages=tuple(data.get("languages") or ()),
                scripts=tuple(data.get("scripts") or ()),
                merge_threshold=None if data.get("merge_threshold") is None else float(data["merge_threshold"]),
                cluster_threshold=None if data.get("cluster_threshold") is None else float(data["cluster_threshold"]),
                cluster_thresholds={str(k): float(v) for k, v in (data.get("cluster_thresholds") or {}).items()},
                build=str(data.get("build", "")),
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ModelError(
                f"cannot read model manifest {path}: {exc}",
                hint="reinstall engram, or rebuild the models with scripts/build_models.py",
            ) from exc

    def prefix(self, kind: Literal["query", "passage"]) -> str:
        """The text the model expects in front of a query or a passage."""
        return self.query_prefix if kind == "query" else self.passage_prefix

    def file(self, name: str) -> Path:
        return self.path / name


def _candidate_dirs() -> list[Path]:
    here = Path(__file__).resolve()
    return [
        here.parents[1] / "models",  # engram_cli/models: where the wheel puts them
        here.parents[2] / "models",  # the repository's models/ in an editable install
    ]


def models_dir() -> Path:
    """The directory holding one sub-directory per shipped model.

    ``ENGRAM_MODELS_DIR`` wins when set; otherwise the first of ``engram_cli/models`` (installed wheel) and the
    repository's top-level ``models/`` (editable install) that exists.
    """
    override = os.environ.get(MODELS_ENV)
    if override:
        return Path(override).expanduser()
    candidates = _candidate_dirs()
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


def available_models() -> list[ModelManifest]:
    """Manifests of every model found in ``models_dir()``, sorted by id."""
    root = models_dir()
    if not root.is_dir():
        return []
    found = [ModelManifest.from_file(p) for p in sorted(root.glob(f"*/{MANIFEST_NAME}"))]
    return sorted(found, key=lambda m: m.id)


def load_manifest(model_id: str) -> ModelManifest:
    """The manifest of ``model_id``; ModelError with the available ids when there is no such model."""
    root = models_dir()
    path = root / model_id / MANIFEST_NAME
    if not path.is_file():
        known = ", ".join(m.id for m in available_models()) or "none"
        raise ModelError(
            f"unknown embedding model {model_id!r} (no {MANIFEST_NAME} under {root / model_id})",
            hint=f"available models: {known}; set {MODELS_ENV} to a directory of built models to use others",
        )
    manifest = ModelManifest.from_file(path)
    if manifest.id != model_id:
        raise ModelError(
            f"{path} describes model {manifest.id!r}, not {model_id!r}",
            hint="the models directory is inconsistent; reinstall engram or rebuild the models",
        )
    return manifest


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verify(manifest: ModelManifest) -> list[str]:
    """Check every file listed in the manifest against its sha256; return the problems found (empty = intact)."""
    problems = []
    for name, expected in sorted(manifest.files.items()):
        path = manifest.file(name)
        if not path.is_file():
            problems.append(f"{name}: missing")
        elif (actual := sha256_file(path)) != expected:
            problems.append(f"{name}: sha256 {actual[:12]}… does not match the manifest ({expected[:12]}…)")
    return problems
