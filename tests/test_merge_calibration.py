"""The committed merge pairs are well-formed, and each model's merge_threshold still holds on them.

A model rebuild (new export, new quantisation, tokenizer change) can shift the
cosine scale. If the threshold recorded in the model's manifest then merges
distinct facts noticeably more often than when it was calibrated, this fails;
re-run ``python scripts/calibrate_merge.py`` to recalibrate.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_DIR = REPO_ROOT / "models"
THRESHOLDS_JSON = REPO_ROOT / "scripts" / "merge_thresholds.json"
PRECISION_SLACK = 0.02


def _load_calibrate_module():
    path = REPO_ROOT / "scripts" / "calibrate_merge.py"
    spec = importlib.util.spec_from_file_location("calibrate_merge", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered first: dataclasses look their module up in sys.modules.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


cm = _load_calibrate_module()


def _calibrated_models() -> list[str]:
    ids = []
    for manifest_path in sorted(MODELS_DIR.glob("*/manifest.json")):
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if manifest.get("merge_threshold") is not None:
            ids.append(manifest_path.parent.name)
    return ids


# ---------------------------------------------------------------- data file shape


def test_pairs_file_shape():
    pairs = cm.load_pairs()
    assert len(pairs) >= 240

    labels = Counter(p.label for p in pairs)
    assert set(labels) == {"merge", "distinct"}
    # The distinct (must-not-merge) set is about as large as the merge set.
    assert 0.4 <= labels["distinct"] / len(pairs) <= 0.6

    langs = Counter(p.lang for p in pairs)
    assert langs["en"] >= 100 and langs["zh"] >= 100
    for lang in ("en", "zh"):
        by_label = Counter(p.label for p in pairs if p.lang == lang)
        assert by_label["merge"] > 0 and by_label["distinct"] > 0, lang

    seen = set()
    for p in pairs:
        for text in (p.a, p.b):
            assert isinstance(text, str) and text.strip(), p
        assert isinstance(p.kind, str) and p.kind, p
        assert p.a.strip() != p.b.strip(), p
        key = frozenset((p.a.strip(), p.b.strip()))
        assert key not in seen, f"duplicate pair: {p}"
        seen.add(key)


def test_pairs_file_lines_are_plain_json_objects():
    path = REPO_ROOT / "tests" / "data" / "merge_pairs.jsonl"
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        obj = json.loads(line)
        assert set(obj) == {"a", "b", "label", "lang", "kind"}, f"line {lineno}"


# ------------------------------------------------------------- threshold still holds


@pytest.mark.parametrize("model_id", _calibrated_models())
def test_manifest_threshold_keeps_precision(model_id):
    manifest = cm.read_manifest(model_id)
    threshold = float(manifest["merge_threshold"])

    model_dir = MODELS_DIR / model_id
    if not any(model_dir.glob("*.onnx")):
        pytest.skip(f"{model_id}: model weights not present in {model_dir}")

    recorded_all = json.loads(THRESHOLDS_JSON.read_text(encoding="utf-8"))
    assert model_id in recorded_all, f"{model_id} has a merge_threshold but no entry in {THRESHOLDS_JSON.name}"
    recorded = recorded_all[model_id]

    langs = cm.calibration_langs(model_id, manifest)
    pairs = [p for p in cm.load_pairs() if p.lang in langs]
    assert len(pairs) == recorded["pairs"], "pair set changed since calibration; re-run scripts/calibrate_merge.py"

    cos = cm.pair_cosines(model_id, pairs)
    is_merge = np.array([p.label == "merge" for p in pairs])
    same, blocked = cm.lexical(pairs)
    scores = cm.score(cos, is_merge, threshold, same, blocked)

    # Something must still merge: precision is vacuously 1.0 when nothing does.
    assert scores.tp > 0, f"{model_id}: nothing merges at {threshold}"
    # onnxruntime picks its int8 kernels by CPU (AVX2, AVX-512 VNNI, ...), so cosines can move
    # in the third decimal between machines: one pair crossing the threshold is that, not a regression.
    one_pair = 1 / (scores.tp + scores.fp)
    assert scores.precision >= recorded["precision"] - max(PRECISION_SLACK, one_pair), (
        f"{model_id}: precision {scores.precision:.3f} at threshold {threshold} "
        f"(recorded {recorded['precision']:.3f}); recalibrate with scripts/calibrate_merge.py"
    )
    assert scores.recall >= recorded["recall"] / 2, (
        f"{model_id}: recall {scores.recall:.3f} at threshold {threshold} collapsed "
        f"(recorded {recorded['recall']:.3f}); recalibrate with scripts/calibrate_merge.py"
    )
