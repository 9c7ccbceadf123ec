"""An embedder that remembers: each text's vector is kept under a hash of the exact text the model sees.

A vector is looked up by (the model's id and a digest of its files, sha256 of prefix + text), so the
same text is embedded once across files, batches and runs, and a rebuilt model never reads vectors of
the old one. Only digests and vectors are stored, never text. The texts given are the ones that would
have reached the model anyway (already redacted by whoever calls), so the cache sees nothing new.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from engram_cli.embed import Embedder
from engram_cli.embed.manifest import ModelManifest
from engram_cli.errors import InvalidInput
from engram_cli.store.embed_cache import CACHE_FILENAME, VectorCache

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

__all__ = ["CACHE_FILENAME", "CachedEmbedder", "VectorCache", "cache_path", "model_key", "text_digest"]


def cache_path(cache_dir: Path) -> Path:
    """Where the embedding cache lives inside engram's cache directory."""
    return cache_dir / CACHE_FILENAME


def model_key(manifest: ModelManifest) -> str:
    """The model's id and a digest of the file digests its manifest lists (a rebuilt model gets a new key)."""
    files = "\n".join(f"{name}={digest}" for name, digest in sorted(manifest.files.items()))
    return f"{manifest.id}@{hashlib.sha256(files.encode()).hexdigest()[:16]}"


def text_digest(prefix: str, text: str) -> bytes:
    """sha256 of the exact text the model is given (a lone surrogate hashes as itself, not as an error)."""
    return hashlib.sha256((prefix + text).encode("utf-8", "surrogatepass")).digest()


class CachedEmbedder:
    """``inner`` with a :class:`VectorCache` in front: embeds each distinct text of a call once, and only
    the texts the cache does not hold, in one call to ``inner`` (which sorts them by length)."""

    def __init__(self, inner: Embedder, manifest: ModelManifest, cache: VectorCache) -> None:
        self.inner = inner
        self.manifest = manifest
        self.cache = cache
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.key = model_key(manifest)

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {self.cache.path})"

    def embed_batch(
        self,
        texts: Sequence[str],
        *,
        kind: Literal["query", "passage"] = "passage",
        batch_size: int = 32,
    ) -> np.ndarray:
        """float32 array (len(texts), dim), as ``inner.embed_batch`` gives, from the cache where it can."""
        import numpy as np

        if kind not in ("query", "passage"):
            raise InvalidInput(f"kind must be 'query' or 'passage', not {kind!r}")
        if isinstance(texts, str):
            raise InvalidInput("embed_batch takes a sequence of texts, not a single string")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        prefix = self.manifest.prefix(kind)
        rows: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            rows.setdefault(text, []).append(i)
        digests = {text: text_digest(prefix, text) for text in rows}
        found = self.cache.get(self.key, list(digests.values()), self.dim)
        missing = [text for text, digest in digests.items() if digest not in found]
        if missing:
            fresh = self.inner.embed_batch(missing, kind=kind, batch_size=batch_size)
            for text, vector in zip(missing, fresh, strict=True):
                found[digests[text]] = vector
            self.cache.put(self.key, [(digests[text], found[digests[text]]) for text in missing])
        log.debug("embedded %d of %d distinct texts (%d given)", len(missing), len(rows), len(texts))
        for text, at in rows.items():
            out[at] = found[digests[text]]
        return out
