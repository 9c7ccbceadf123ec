"""The ONNX embedder: tokenize, run the encoder with onnxruntime, mean-pool and L2-normalise in numpy.

Heavy imports (numpy, onnxruntime, tokenizers) happen inside functions so that importing this module is cheap.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engram_cli.embed.manifest import ModelManifest
from engram_cli.embed.tokenize import TextEncoder, load_text_encoder
from engram_cli.errors import InvalidInput, ModelError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"


class OnnxEmbedder:
    """Embeds texts with a shipped ONNX encoder."""

    def __init__(self, manifest: ModelManifest, *, threads: int | None = None) -> None:
        self.manifest = manifest
        self.model_id = manifest.id
        self.dim = manifest.dim
        self._threads = threads
        # Missing files are said now; reading them waits for the first text to embed.
        _require(manifest, TOKENIZER_FILE)
        _require(manifest, MODEL_FILE)
        self._loaded_encoder: TextEncoder | None = None
        self._loaded_session: Any = None
        self._loading = threading.Lock()  # two threads embedding at once load each file once

    def __repr__(self) -> str:
        return f"OnnxEmbedder({self.model_id!r}, dim={self.dim})"

    # The tokenizer and the session load when the first text is embedded: a command that may embed
    # and then does not (add or set of a text already stored, import of records with their vectors)
    # never pays for them.
    @property
    def _encoder(self) -> TextEncoder:
        with self._loading:
            if self._loaded_encoder is None:
                self._loaded_encoder = _load_encoder(self.manifest)
            return self._loaded_encoder

    @property
    def _session(self) -> Any:
        with self._loading:
            if self._loaded_session is None:
                self._loaded_session = _load_session(self.manifest, self._threads)
            return self._loaded_session

    def warm(self) -> None:
        """Load the tokenizer and the session now (another thread may do this while one reads its input:
        a thread that embeds meanwhile waits for them, and they are loaded once)."""
        _ = self._encoder, self._session

    def embed_batch(
        self,
        texts: Sequence[str],
        *,
        kind: Literal["query", "passage"] = "passage",
        batch_size: int = 32,
    ) -> np.ndarray:
        """Embed ``texts`` as queries or passages: float32 array (len(texts), dim), rows of unit length.

        The manifest's prefix for ``kind`` is added and inputs are truncated to the model's ``max_tokens``.
        Texts are sorted by token count into batches of ``batch_size`` so that little padding is computed.
        """
        import numpy as np

        if kind not in ("query", "passage"):
            raise InvalidInput(f"kind must be 'query' or 'passage', not {kind!r}")
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, not {batch_size}")
        if isinstance(texts, str):
            raise InvalidInput("embed_batch takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        prefix = self.manifest.prefix(kind)
        encodings = self._encoder.encode_batch([prefix + text for text in texts])
        lengths = np.fromiter((len(ids) for ids in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(lengths, kind="stable")
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            width = int(lengths[rows].max())
            ids = np.full((len(rows), width), self._encoder.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                n = int(lengths[i])
                ids[r, :n] = encodings[i]
                mask[r, :n] = 1
            hidden = self._session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": mask})[0]
            out[rows] = _mean_pool(hidden, mask, normalize=self.manifest.normalize)
        return out


def _mean_pool(hidden: np.ndarray, mask: np.ndarray, *, normalize: bool) -> np.ndarray:
    import numpy as np

    weights = mask.astype(np.float32)[:, :, None]
    pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
    if normalize:
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
    result: np.ndarray = pooled.astype(np.float32, copy=False)
    return result


def _require(manifest: ModelManifest, name: str) -> str:
    path = manifest.file(name)
    if not path.is_file():
        raise ModelError(
            f"model {manifest.id} is missing {name} (looked in {manifest.path})",
            hint="reinstall engram, or rebuild the models with scripts/build_models.py",
        )
    return str(path)


def _load_encoder(manifest: ModelManifest) -> TextEncoder:
    path = _require(manifest, TOKENIZER_FILE)
    try:
        return load_text_encoder(Path(path).parent, manifest.max_tokens)
    except Exception as exc:  # json, KeyError, or tokenizers' bare Exception for a malformed file
        raise _corrupt(manifest, "tokenizer", exc) from exc


def _load_session(manifest: ModelManifest, threads: int | None) -> Any:
    os.environ["ORT_DISABLE_TELEMETRY"] = "1"  # set again in case onnxruntime is used without engram_cli first
    import onnxruntime as ort

    ort.disable_telemetry_events()

    path = _require(manifest, MODEL_FILE)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    # The extended and all levels made no measurable difference to session creation or latency for these graphs.
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    # Worker threads that spin between runs steal the CPU from whatever else the machine is doing (measured on
    # 2 busy cores: 63 ms per text with spinning off, 75-92 ms with it on).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads:
        options.intra_op_num_threads = threads
    try:
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
        raise _corrupt(manifest, MODEL_FILE, exc) from exc


def _corrupt(manifest: ModelManifest, name: str, exc: Exception) -> ModelError:
    log.debug("loading %s of %s failed", name, manifest.id, exc_info=exc)
    return ModelError(
        f"model {manifest.id}: {name} cannot be loaded ({type(exc).__name__}: {str(exc)[:200]})",
        hint="the file is probably damaged; reinstall engram or rebuild the models with scripts/build_models.py",
    )
