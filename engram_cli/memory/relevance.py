"""How likely a recalled memory is to be relevant: a calibrated probability from the raw evidence.

Recall ranks by fused reciprocal ranks, which say how a memory compares with the other
candidates, never whether any of them answers the query: the first hit of any list scores
1.0. This module turns what was measured about one candidate (its cosine to the query, how
much of the query's wording it holds, whether it falls in the time the query names) into an
absolute number in [0, 1], read as the chance that the hit is relevant. Below
``recall.min_relevance`` a hit is dropped, so a query whose answer is not in the store gets
nothing rather than the least unrelated memories.

A raw cosine means different things for different models (multilingual-e5 puts unrelated
sentences near 0.8, MiniLM near 0.05) and for different scripts, so the semantic evidence is
the cosine's place between the model's typical cosine of an unrelated query and passage (for
that pair of scripts, measured on the model) and 1. On top of the evidence sits a logistic
model per embedding model, fitted by ``scripts/calibrate_relevance.py`` on the benchmark sets'
candidate pools (queries with and without an answer in the store) and shipped in
``relevance.json`` beside this module. No weight is negative, so more evidence never lowers
the probability.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

CALIBRATION_FILE = Path(__file__).with_name("relevance.json")
# The features, in the order of a calibration's weights.
FEATURES = ("semantic", "keyword", "keyword_any", "time")


@dataclass(frozen=True)
class Evidence:
    """What recall measured about one candidate, before any ranking."""

    # Cosine of the query's vector and the memory's (same model); None when the memory has no vector.
    cosine: float | None
    # For a memory in the other script: cosine with the query moved into that script's region.
    cross_cosine: float | None
    # Share of the query's distinct terms (stop words left out) the memory's keyword row holds,
    # each term weighted by its inverse document frequency, so a rare name counts more than "use".
    keyword: float
    # Whether the query's time words name a window and the memory falls inside it (None: no time words).
    time: bool | None
    query_script: str = "latin"
    memory_script: str = "latin"

    def json_form(self, **options: Any) -> dict[str, Any]:
        return {
            "cosine": None if self.cosine is None else round(self.cosine, 6),
            "cross_cosine": None if self.cross_cosine is None else round(self.cross_cosine, 6),
            "keyword_share": round(self.keyword, 6),
            "time_window_match": self.time,
            "scripts": f"{self.query_script}-{self.memory_script}",
        }


@dataclass(frozen=True)
class Calibration:
    """A logistic model: P(relevant) = 1 / (1 + exp(-(intercept + sum(weight x feature))))."""

    model: str
    intercept: float
    weights: tuple[float, ...]  # one per FEATURES entry
    # "query script-memory script" -> the model's typical cosine of an unrelated query and passage.
    unrelated: dict[str, float]

    def baseline(self, query_script: str, memory_script: str) -> float:
        key = f"{query_script}-{memory_script}"
        if key in self.unrelated:
            return self.unrelated[key]
        return max(self.unrelated.values()) if self.unrelated else 0.0

    def semantic(self, evidence: Evidence) -> float:
        """How far the best cosine rises from "unrelated" (0) towards "the same text" (1); 0 without a vector."""
        lifted: list[float] = []
        if evidence.cosine is not None:
            lifted.append(_lift(evidence.cosine, self.baseline(evidence.query_script, evidence.memory_script)))
        if evidence.cross_cosine is not None:
            # The moved query sits in the memory's own region: compare it with that script's pairs.
            lifted.append(_lift(evidence.cross_cosine, self.baseline(evidence.memory_script, evidence.memory_script)))
        return max(lifted) if lifted else 0.0

    def features(self, evidence: Evidence) -> list[float]:
        return [
            self.semantic(evidence),
            evidence.keyword,
            1.0 if evidence.keyword > 0 else 0.0,
            1.0 if evidence.time else 0.0,
        ]

    def probability(self, evidence: Evidence) -> float:
        z = self.intercept + sum(w * x for w, x in zip(self.weights, self.features(evidence), strict=True))
        return sigmoid(z)


def sigmoid(z: float) -> float:
    # Written so that neither branch overflows for a large |z|.
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _lift(cosine: float, baseline: float) -> float:
    # Below the baseline is as unrelated as it gets: clamp there, so an odd pair cannot count against a
    # memory more than "unrelated" does.
    return max(0.0, (cosine - baseline) / (1.0 - baseline)) if baseline < 1.0 else 0.0


@cache
def _shipped() -> tuple[dict[str, Calibration], str]:
    data = json.loads(CALIBRATION_FILE.read_text(encoding="utf-8"))
    out: dict[str, Calibration] = {}
    for model, entry in data["models"].items():
        weights = entry["weights"]
        out[model] = Calibration(
            model,
            float(entry["intercept"]),
            tuple(float(weights[f]) for f in FEATURES),
            {k: float(v) for k, v in entry["unrelated_cosine"].items()},
        )
    return out, str(data["fallback"])


def calibrations() -> dict[str, Calibration]:
    """Every shipped calibration, by embedding model id."""
    return dict(_shipped()[0])


def calibration_for(model: str | None) -> Calibration:
    """The calibration of ``model``. A memory without a vector, or of a model never calibrated, gets the
    file's fallback (the default model's): the best guess there is."""
    shipped, fallback = _shipped()
    return shipped.get(model or fallback) or shipped[fallback]
