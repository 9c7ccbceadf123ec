"""Embedding models: the ``Embedder`` protocol and the loader for the models engram ships.

Importing this package is cheap; numpy, onnxruntime and tokenizers are imported when a model is loaded.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from engram_cli.embed.manifest import ModelManifest, available_models, load_manifest, models_dir, verify

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DEFAULT_MODEL_ID",
    "Embedder",
    "ModelManifest",
    "available_models",
    "load_embedder",
    "load_manifest",
    "models_dir",
    "verify",
]

DEFAULT_MODEL_ID = "multilingual-e5-small-q4-v1"


class Embedder(Protocol):
    """Turns texts into unit-length vectors of ``dim`` floats."""

    model_id: str
    dim: int

    def embed_batch(
        self,
        texts: Sequence[str],
        *,
        kind: Literal["query", "passage"] = "passage",
        batch_size: int = 32,
    ) -> np.ndarray:
        """float32 array of shape (len(texts), dim); rows are L2-normalised."""
        ...


def load_embedder(model_id: str | None = None) -> Embedder:
    """The embedder for ``model_id`` (default: ``DEFAULT_MODEL_ID``), loaded once per process."""
    return _load(model_id or DEFAULT_MODEL_ID)


@functools.cache
def _load(model_id: str) -> Embedder:
    from engram_cli.embed.onnx import OnnxEmbedder

    return OnnxEmbedder(load_manifest(model_id))
