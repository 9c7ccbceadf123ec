"""eval --harvest: ingest a harvest benchmark's logs into a fresh database, then score what was kept.

Nothing of the caller's own setup is read or written: the benchmark's ``home/`` is copied to a
temporary directory and the importers are told to look there (an environment of its own, passed to
the ingest rather than set in this process), into a database made for the run and removed with it.
The scoring itself is :mod:`engram_cli.memory.harvest_eval`.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram_cli import config as configmod
from engram_cli.errors import InvalidInput
from engram_cli.memory import harvest_eval
from engram_cli.memory.harvest_eval import HarvestReport, Stored

if TYPE_CHECKING:
    from engram_cli.api.engram import Engram

# The home directory the benchmark's logs were written in: sessions name their projects
# /home/dev/src/<project>, and the run maps it to the temporary home.
BENCH_HOME = "/home/dev"
_BENCH_HOME = re.compile(re.escape(BENCH_HOME) + r"(?=[/\"'\s\\]|$)", re.MULTILINE)
# How much of a file is looked at to tell text from a binary file (a SQLite database is left as it is).
_SNIFF = 8192


def stage(source: Path, home: Path) -> None:
    """Copy a benchmark's ``home/`` to ``home``, its text files naming ``home`` where they name /home/dev.

    The projects the sessions worked in then resolve inside the copy, not on this machine (where a
    /home/dev of someone's own could decide a namespace). Binary files (OpenCode's SQLite database)
    are copied as they are; their paths stay /home/dev/…, whose namespace is the directory's name.
    """
    shutil.copytree(source, home, symlinks=True)
    target = home.as_posix()
    for path in sorted(home.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:_SNIFF] or BENCH_HOME.encode() not in data:
            continue
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        path.write_bytes(_BENCH_HOME.sub(target, text).encode("utf-8"))


def evaluate(
    directory: str | os.PathLike[str],
    *,
    paths: configmod.Paths | None = None,
    config: configmod.Config | None = None,
    progress: Any = None,
) -> HarvestReport:
    """Ingest the benchmark in ``directory`` (``home/`` + ``labels/*.jsonl``) into a fresh database and score it.

    The settings are the caller's (config.toml, ENGRAM_*), except a configured namespace: each
    session's project decides where its memories go, as it does when ingest runs unconfigured.
    """
    from engram_cli.api.engram import Engram

    root = Path(directory).expanduser()
    if not root.is_dir():
        raise InvalidInput(
            f"{root} is not a directory", hint="--harvest takes a benchmark directory, e.g. bench/harvest"
        )
    logs = root / "home"
    if not logs.is_dir():
        raise InvalidInput(
            f"{root} has no home/ directory",
            hint="a harvest benchmark holds home/ (each tool's logs where it writes them) and labels/*.jsonl",
        )
    labels = harvest_eval.read_labels(root, logs)
    paths = paths or configmod.Paths.resolve()
    cfg = config or configmod.load(paths)
    cfg = replace(cfg, settings=replace(cfg.settings, namespace=None))
    with tempfile.TemporaryDirectory(prefix="engram-harvest-") as tmp:
        home = Path(tmp) / "home"
        stage(logs, home)
        data = Path(tmp) / "engram"
        data.mkdir()
        run_paths = replace(paths, data_dir=data, db_explicit=data / "harvest.db")
        with Engram.open(config=cfg, paths=run_paths, cwd=tmp) as engram:
            env = {"HOME": str(home)}
            reports = [engram.ingest(env=env, home=home, progress=progress)]
            # Aider keeps its history in each repository, which the default places do not reach.
            reports.append(engram.ingest("aider", path=home, env=env, home=home, progress=progress))
            memories = stored(engram, home)
            return harvest_eval.score(
                labels,
                memories,
                searcher(engram, {m.id: m.text for m in memories}, home),
                directory=str(directory),
                ingest_errors=[e for r in reports for e in r.errors],
            )


def _unstage(home: Path) -> Callable[[str], str]:
    staged = home.as_posix()
    return lambda text: text.replace(staged, BENCH_HOME)


def stored(engram: Engram, home: Path) -> list[Stored]:
    """Every active memory with its text (its own words and those folded into it) and the sessions it came from."""
    from engram_cli.store.sources import REPLACED

    unstage = _unstage(home)
    flt = engram.filters(all_namespaces=True)
    out: list[Stored] = []
    for brief in engram.list(limit=max(1, engram.count(filters=flt)), filters=flt):
        memory = engram.get(brief.id)
        folded = [s.content for s in memory.sources if s.content and not s.metadata.get(REPLACED)]
        sessions: set[str] = set()
        for source in memory.sources:
            sessions |= harvest_eval.session_names(source.kind, source.ref, source.session, home)
        out.append(
            Stored(
                memory.id, memory.type, memory.namespace, unstage("\n".join([memory.content, *folded])),
                frozenset(sessions),
            )
        )  # fmt: skip
    return out


def searcher(engram: Engram, texts: dict[str, str], home: Path) -> harvest_eval.Search:
    """Questions asked the way a person asks ``engram recall``: the top hits' texts, best first.

    As there, the memories come first and evidence (turns of the conversations) fills the places
    that fewer than ``k`` relevant memories left; both count, as a person reads both.
    """
    unstage = _unstage(home)

    def search(question: str, namespaces: Any) -> list[str]:
        hits = engram.recall(question, k=harvest_eval.TOP_K, namespace=list(namespaces), bump=False)
        found = [texts.get(h.memory.id) or unstage(h.memory.content) for h in hits]
        found += [unstage(e.turn.content) for e in hits.evidence]
        return found[: harvest_eval.TOP_K]

    return search
