"""The loader's port: what it may use of an open store, and the writer that takes vectors made beforehand."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from engram_cli.ingest.report import IngestReport
from engram_cli.memory import remember


def test_the_port_carries_the_store_and_the_ingest_settings(engram: Any) -> None:
    s = engram.config.settings
    engram.config = replace(
        engram.config,
        settings=replace(
            s, namespace="webshop", extract=replace(s.extract, command="  my-extractor --fast \n", timeout_s=7.5),
            redact=replace(s.redact, contact_details=True),
        ),
    )  # fmt: skip
    port = engram.ingest_port()
    assert port.store is engram.store
    assert (port.namespace, port.extract_command, port.extract_timeout, port.contact) == (
        "webshop", "my-extractor --fast", 7.5, True,
    )  # fmt: skip
    prepared = port.prepare({"content": "Mail li.wei@webshop-team.io about deploys", "type": "semantic"})
    assert prepared.namespace == "webshop" and "[REDACTED:email]" in prepared.content


def test_ingest_returns_its_report(engram: Any, tmp_path: Any) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "deploy.md").write_text("# Deploys\n\nDeploys go through make release.\n", encoding="utf-8")
    report = engram.ingest("notes", path=tmp_path / "notes", dry_run=True)
    assert isinstance(report, IngestReport) and report.sources[0].memories


def test_a_writer_with_vectors_embeds_only_the_texts_it_was_not_given(engram: Any) -> None:
    calls: list[list[str]] = []

    def embed(texts: Sequence[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.full((len(texts), 4), 1.0, dtype=np.float32)

    policy = remember.MergePolicy(enabled=False, threshold=0.9, supersede=False, supersede_similarity=0.8)
    writer = remember.Writer(engram.store, "m", 4, embed, policy)
    given = np.full(4, 7.0, dtype=np.float32)
    cached = remember.with_vectors(writer, {"known": given})
    out = cached.embed(["known", "new", "known"])
    assert calls == [["new"]]
    assert out.tolist() == [[7.0] * 4, [1.0] * 4, [7.0] * 4]
    assert writer.embed is embed and cached is not writer  # the shared writer is left as it was
    assert (cached.store, cached.model_id, cached.dim, cached.policy) == (writer.store, "m", 4, policy)
