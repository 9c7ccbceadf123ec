"""Long inputs: the encoders read only as much of a text as its truncated ids need, and give the same ids."""

from __future__ import annotations

import random
from typing import Any

import pytest

from engram_cli.embed import DEFAULT_MODEL_ID, load_manifest
from engram_cli.embed.tokenize import RustEncoder, UnigramEncoder, load_text_encoder

MINILM = "all-minilm-l6-v2-q8-v1"
BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _pair(model_id: str) -> tuple[Any, Any]:
    """The engine's encoder and plain ``tokenizers`` on the same file, truncating alike."""
    from tokenizers import Tokenizer

    manifest = load_manifest(model_id)
    reference = Tokenizer.from_file(str(manifest.path / "tokenizer.json"))
    reference.encode_special_tokens = True
    reference.no_padding()
    reference.enable_truncation(max_length=manifest.max_tokens)
    return load_text_encoder(manifest.path, manifest.max_tokens), reference


@pytest.fixture(scope="module")
def e5() -> tuple[Any, Any]:
    encoder, reference = _pair(DEFAULT_MODEL_ID)
    assert isinstance(encoder, UnigramEncoder)
    return encoder, reference


@pytest.fixture(scope="module")
def minilm() -> tuple[Any, Any]:
    encoder, reference = _pair(MINILM)
    assert isinstance(encoder, RustEncoder)
    return encoder, reference


def _long_texts(seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabets = [BASE64, "abcdefghijklmnopqrstuvwxyz", "中文数据库迁移测试", "ab中.-_/:", "Ωμέγαéüß", "0123456789"]
    texts = []
    for length in (1_025, 2_000, 5_000, 9_000, 30_000):
        for alphabet in alphabets:
            word = "".join(rng.choice(alphabet) for _ in range(length))
            lead = " ".join(rng.choice(["deploy", "the", "api", "用", "pnpm"]) for _ in range(rng.randint(0, 300)))
            texts.append(f"{lead} {word} tail words" if lead else word)
    return texts


def test_e5_long_words_get_the_ids_of_the_whole_word(e5: tuple[Any, Any]) -> None:
    encoder, reference = e5
    for text in _long_texts(1):
        assert encoder.encode(text) == reference.encode(text).ids, text[:60]


def test_e5_run_of_one_character_is_cut_once_the_budget_is_full(e5: tuple[Any, Any]) -> None:
    """Such a run never settles (its odd piece goes first), so it is segmented as if it ended at the cut."""
    encoder, reference = e5
    short = "x" * 5_000  # below the cut: exactly tokenizers' ids
    assert encoder.encode(short) == reference.encode(short).ids
    ids = encoder.encode("x" * 100_000)
    assert len(ids) == 512 and ids[0] == 0 and ids[-1] == 2
    assert encoder.encode("x" * 100_001) == ids  # the text past the cut is not read


def test_minilm_long_texts_get_the_ids_of_the_whole_text(minilm: tuple[Any, Any]) -> None:
    encoder, reference = minilm
    rng = random.Random(2)
    texts = [
        *_long_texts(3),
        "中" * 100_000,
        "x" * 100_000,
        "x" * 4_000 + "中" * 96_000,  # the first prefix holds too few tokens: read twice as much
        " ".join("word" for _ in range(25_000)),
        "".join(rng.choice("aZ9_.-/:中 不'") for _ in range(100_000)),
    ]
    # The first prefix ends inside a 150-character word, which alone becomes [UNK] but cut to its
    # first 46 characters becomes word pieces, and the kept tokens reach into it: read on.
    cut_word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(150))
    texts.append(("q" * 120 + " ") * 30 + "w " * 210 + cut_word + " end")
    got = encoder.encode_batch(texts)
    for text, ids in zip(texts, got, strict=True):
        assert ids == reference.encode(text).ids, text[:60]
