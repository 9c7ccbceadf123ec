"""The loader: read each source file from its cursor, extract memories, redact, write, move the cursor.

One file is one transaction: the memories it yields, the digests of its sessions and
its cursor are committed together, so an ingest interrupted at any point and run again
ends exactly where one clean run would. Every extracted item is recorded with a key
stable across re-reads (``ingest_items``), so reading a log twice never stores a
memory twice; the episode of a session still being written is rewritten in place as
the session grows. Secrets are redacted before anything reaches the database: each
batch is scrubbed (:mod:`engram_cli.ingest.scrub`) before extraction, and the digest
once more before it is saved.

One file's trouble is that file's: a FIFO or broken link where a log should be is
skipped with a note, and an exception while reading, extracting or writing one file
is reported as its error (the file is read again next time) while the others go on.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from engram_cli import external, jsonl
from engram_cli.errors import EngramError, InvalidInput, NotFound, UsageError
from engram_cli.ingest import GIVEN_PATH_ONLY, SOURCES, conversation, files, importer, limits
from engram_cli.ingest.base import Batch, Cursor, Importer, Session, UnusableFile
from engram_cli.ingest.extract import Item, extract
from engram_cli.ingest.port import IngestPort
from engram_cli.ingest.report import IngestReport, Planned, SourceReport, describe
from engram_cli.ingest.scrub import scrub
from engram_cli.ingest.turns import TurnText, turns
from engram_cli.lang import redact
from engram_cli.lang import text as textmod
from engram_cli.memory import evidence as evidencemod
from engram_cli.memory import records, remember
from engram_cli.memory.model import MEMORY_TYPES
from engram_cli.project import GLOBAL_NAMESPACE, project_namespace
from engram_cli.store.codec import dumps
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now, normalize_iso

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
_T = TypeVar("_T")
# Items written per add_many batch inside a file's transaction.
WRITE_BATCH = 64
# Files read before their texts are embedded together and written (one transaction each): at most
# this many files, or fewer once they hold this many texts (memories and evidence turns). The texts
# bound the memory and the embedding call; the files only bound a window of many files with few texts.
# With 32 files, the benchmark's 39 logs (5.3 MB) went to the model in two calls and took 5.9-6.0 s;
# with 128, in one call, 5.2-5.6 s (the batches sorted by length over all of them pad less).
WINDOW_FILES = 128
WINDOW_TEXTS = 1000
# How long past --max-seconds a file may still be read before it is abandoned (see limits.hard_stop).
HARD_STOP_GRACE_S = 10.0
NOT_REGULAR = "not a regular file"
_EXAMPLE_PATHS = {
    "chatgpt": "~/Downloads/chatgpt-export/conversations.json",
    "claude-ai": "~/Downloads/claude-export/conversations.json",
    "chat": "~/chats/history.jsonl",
}


# -- where memories go ---------------------------------------------------------------------


class Namespaces:
    """Project -> namespace: the git repository's directory name, else the recorded cwd's, else the default."""

    def __init__(self, default: str, forced: str | None) -> None:
        self.default = default
        self.forced = forced
        self._cache: dict[str | None, str] = {}

    def of_item(self, item: Item, project_namespace: str) -> str:
        """Where an item of a session in ``project_namespace`` goes: the person's go to the global scope.

        A namespace given with ``-n`` takes everything, as it says.
        """
        if item.scope == "person" and not self.forced:
            return GLOBAL_NAMESPACE
        return project_namespace

    def __call__(self, project: str | None) -> str:
        if self.forced:
            return self.forced
        if project not in self._cache:
            self._cache[project] = self._resolve(project)
        return self._cache[project]

    def _resolve(self, project: str | None) -> str:
        if not project or not project.strip():
            return self.default
        path = Path(project.strip()).expanduser()
        if not path.is_absolute():
            return path.name or self.default
        try:
            return project_namespace(path) or self.default
        except OSError:
            return path.name or self.default


# -- cursors, digests, items ------------------------------------------------------------------


def load_cursor(store: Store, path: str) -> Cursor | None:
    row = store.ingest.cursor(path)
    if row is None:
        return None
    return Cursor(
        path=path, inode=row.inode, size=row.size, mtime_ns=row.mtime_ns, offset=row.offset,
        last_id=row.last_id, last_at=row.last_at, state=json.loads(row.state),
    )  # fmt: skip


def save_cursor(store: Store, source: str, cursor: Cursor) -> None:
    store.ingest.save_cursor(
        source, path=cursor.path, inode=cursor.inode, size=cursor.size, mtime_ns=cursor.mtime_ns,
        offset=cursor.offset, last_id=cursor.last_id, last_at=cursor.last_at, state=dumps(cursor.state),
    )  # fmt: skip


def load_digest(store: Store, source: str, key: str) -> dict[str, Any]:
    value = store.ingest.digest(source, key)
    return {} if value is None else dict(json.loads(value))


def save_digest(store: Store, source: str, session: Session, namespace: str, digest: dict[str, Any]) -> None:
    # The digest is drawn from redacted messages already; it is redacted again because it keeps
    # text (the first prompt, failing command lines) for as long as the session lives.
    safe, _ = redact.redact_data(textmod.clean_data(digest))
    store.ingest.save_digest(source, session.key, path=session.path, namespace=namespace, digest=dumps(safe))


# -- extraction --------------------------------------------------------------------------------


# Fields of a ready-made record that are passed through to the memory as they are.
RECORD_FIELDS = ("namespace", "agent", "metadata", "confidence", "summary")


def _record_item(record: Mapping[str, Any], index: int) -> Item:
    """A ready-made record (notes, JSONL) as an Item; bad values become InvalidInput."""
    content = record.get("content")
    if not isinstance(content, str) or not content.strip():
        raise InvalidInput(f"record {index} has no text content")
    mtype = record.get("type") or "semantic"
    if mtype not in MEMORY_TYPES:
        raise InvalidInput(f"record {index}: unknown memory type {mtype!r}")
    importance = record.get("importance", 0.5)
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0 <= importance <= 1:
        raise InvalidInput(f"record {index}: importance must be a number from 0 to 1")
    tags = record.get("tags") or []
    if isinstance(tags, str):
        tags = [tags]
    at = record.get("created_at")
    scope = record.get("scope") or "project"
    if scope not in ("person", "project"):
        raise InvalidInput(f"record {index}: scope must be 'person' or 'project', not {scope!r}")
    return Item(
        key=str(record.get("key") or f"record:{index}"),
        type=str(mtype),
        content=content,
        importance=float(importance),
        message_id=None if record.get("message_id") is None else str(record["message_id"]),
        at=None if at is None else str(at),
        tags=[str(t) for t in tags if isinstance(t, str) and t.strip()],
        scope=str(scope),
    )


def run_extract_command(command: str, session: Session, digest: dict[str, Any], timeout: float) -> list[Item]:
    """Hand the session to the user's extractor: JSON on stdin, memory records as JSONL on stdout."""
    payload = {
        "source": session.source,
        "session": session.key,
        "project": session.project,
        "title": session.title,
        "summary": session.summary,
        "started_at": session.started_at,
        "updated_at": session.updated_at,
        "restart": session.restart,
        "digest": digest,
        "messages": [m.__dict__ for m in session.messages],
    }
    output = external.run_json(command, payload, setting="extract.command", timeout=timeout)
    items: list[Item] = []
    for lineno, record in jsonl.read(output.splitlines()):
        if isinstance(record, jsonl.Problem):
            if record.reason == jsonl.NOT_OBJECT:
                raise InvalidInput(f"extract.command output line {lineno} is not an object")
            raise InvalidInput(f"extract.command output line {lineno} is not JSON: {record.detail or record.reason}")
        record = textmod.clean_data(record)  # JSON escapes can spell a lone surrogate
        record.setdefault("key", f"command:{lineno}:{textmod.content_hash(str(record.get('content')))[:12]}")
        items.append(_record_item(record, lineno))
    return items


# -- the loader ------------------------------------------------------------------------------


@dataclass
class _FilePlan:
    path: str
    batch: Batch
    sessions: list[tuple[Session, str, list[Item], dict[str, Any]]]
    # item key -> fields a ready-made record sets itself (namespace, agent, metadata …)
    extras: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # session key -> the turns of it kept as evidence
    turns: dict[str, list[TurnText]] = field(default_factory=dict)


@dataclass
class _Staged:
    new: list[tuple[Planned, remember.NewMemory, Item, Session]] = field(default_factory=list)
    rewrites: list[tuple[Planned, str, Item]] = field(default_factory=list)
    talk: list[conversation.SessionTurns] = field(default_factory=list)


@dataclass
class _Window:
    """Files read and extracted, waiting to be written together (see Loader.run_source)."""

    plans: list[_FilePlan] = field(default_factory=list)
    sessions: set[str] = field(default_factory=set)
    texts: int = 0

    def add(self, plan: _FilePlan) -> None:
        self.plans.append(plan)
        self.sessions.update(session.key for session, _, _, _ in plan.sessions)
        self.texts += sum(len(items) for _, _, items, _ in plan.sessions) + sum(map(len, plan.turns.values()))

    def full(self) -> bool:
        return len(self.plans) >= WINDOW_FILES or self.texts >= WINDOW_TEXTS


class Loader:
    def __init__(
        self,
        port: IngestPort,
        *,
        dry_run: bool,
        namespace: str | None,
        progress: Progress | None,
        deadline: limits.Deadline | None,
    ) -> None:
        self.port = port
        self.store = port.store
        self.dry_run = dry_run
        self._warming: threading.Thread | None = None  # the embedding model's warm-up, once started
        self.namespaces = Namespaces(port.namespace, namespace)
        self.contact = port.contact
        self.progress = progress or (lambda done, total: None)
        self.deadline = deadline
        self.stopped_early = False
        self.abandoned: list[str] = []
        self._writer: remember.Writer | None = None
        # Vectors of the texts of the files being written, by text; emptied after each window.
        self._vectors: dict[str, np.ndarray] = {}
        # Items the window's first staging prepared (checked, redacted), for their write; by id of the Item,
        # which the window's plans hold until it is written.
        self._prepared: dict[int, remember.NewMemory] = {}
        self._staging_ahead = False

    # reading and extracting (no database writes)

    def plan_file(self, imp: Importer, path: Path, report: SourceReport) -> _FilePlan | None:
        """Read ``path`` from its cursor and extract its memories; None when there is nothing to write."""
        read = self.read_file(imp, path, report)
        if read is None or isinstance(read, _FilePlan):
            return read
        return self.extract_file(imp, *read, report)

    def read_file(self, imp: Importer, path: Path, report: SourceReport) -> tuple[str, Batch] | _FilePlan | None:
        """The new part of ``path`` (its key and batch, scrubbed), a plan that only moves its cursor, or None."""
        key = textmod.clean(str(path))
        kind = files.irregular(path)
        if kind is not None:
            # Never opened: a FIFO would block the run (and the lock) for good, a loop would raise.
            report.skip(NOT_REGULAR, f"{key}: {kind}, not read")
            return None
        cursor = load_cursor(self.store, key)
        try:
            stat = path.stat()
        except OSError as exc:
            report.error(f"{key}: {exc.strerror or exc}")
            return None
        if cursor is not None and cursor.unchanged(stat):
            return None
        try:
            with limits.reading_until(self.deadline):
                batch = imp.read(path, cursor)
        except files.NotRegularFile as exc:
            report.skip(NOT_REGULAR, f"{key}: {exc.strerror}, not read")  # swapped for one since the check
            return None
        except UnusableFile as exc:
            report.error(f"{key}: {exc}")
            return None
        except OSError as exc:
            report.error(f"{key}: cannot read: {exc.strerror or exc}")
            return None
        except RecursionError:
            # JSON nested deeper than Python's parser goes is not a log anyone wrote: skip the file as it
            # is now (counted), and read it again only when it changes.
            report.skip("too deeply nested JSON", f"{key}: too deeply nested JSON")
            at_end = Cursor(path=key, inode=stat.st_ino, size=stat.st_size, mtime_ns=stat.st_mtime_ns)
            at_end.offset = stat.st_size
            return _FilePlan(key, Batch([], at_end), [])
        except Exception as exc:  # one importer's bug must not stop the other files
            log.debug("importer %s failed on %s", imp.name, key, exc_info=True)
            report.error(f"{key}: the {imp.name} importer failed ({describe(exc)})")
            return None
        report.redacted.update(scrub(batch, contact=self.contact))
        if batch.stopped:
            # The deadline ended the read inside the file: keep what was read, go on from there next time.
            batch.cursor.unfinish()
            self.stopped_early = True
        if batch.sessions:
            # A SQLite store is read on every run (its -wal may have changed); it only counts when it had news.
            report.changed += 1
        report.skipped.update(batch.skipped)
        report.notes.extend(batch.notes)
        return key, batch

    def extract_file(self, imp: Importer, key: str, batch: Batch, report: SourceReport) -> _FilePlan | None:
        """The memories of a read batch; None (an error reported, the cursor kept) when extraction fails."""
        try:
            return self._extract(imp, key, batch, report)
        except InvalidInput as exc:
            report.error(f"{key} {exc.message}")
        except Exception as exc:  # a bug in the rules must not stop the other files either
            log.debug("extracting memories from %s failed", key, exc_info=True)
            report.error(f"{key}: extracting memories failed ({describe(exc)})")
        return None  # the cursor stays: the file is read again once the problem is fixed

    def _extract(self, imp: Importer, key: str, batch: Batch, report: SourceReport) -> _FilePlan:
        planned: list[tuple[Session, str, list[Item], dict[str, Any]]] = []
        extras: dict[tuple[str, str], dict[str, Any]] = {}
        for session in batch.sessions:
            namespace = self.namespaces(session.project)
            digest = {} if session.restart else load_digest(self.store, imp.name, session.key)
            try:
                if session.records:
                    items = [_record_item(r, i) for i, r in enumerate(session.records, 1)]
                    for item, record in zip(items, session.records, strict=True):
                        given = {k: record[k] for k in RECORD_FIELDS if record.get(k) is not None}
                        if given:
                            extras[(session.key, item.key)] = given
                elif self.port.extract_command:
                    items = run_extract_command(self.port.extract_command, session, digest, self.port.extract_timeout)
                else:
                    items, digest = extract(session, digest)
            except InvalidInput as exc:
                raise InvalidInput(f"session {session.key}: {exc.message}") from exc
            for item in items:
                # Drawn from redacted text already; an extract.command may still print anything.
                item.content, found = redact.redact(textmod.clean(item.content), contact=self.contact)
                item.key = redact.redact(textmod.clean(item.key), contact=self.contact)[0]
                report.redacted.update(f.kind for f in found)
            planned.append((session, namespace, [i for i in items if i.content.strip()], digest))
            report.sessions += 1
        kept = {s.key: turns(s) for s in batch.sessions} if self.port.keep_evidence else {}
        return _FilePlan(key, batch, planned, extras, kept)

    # writing (one transaction per file)

    def writer(self) -> remember.Writer:
        if self._writer is None:
            self._writer = self.port.writer()
        return self._writer

    def write_file(self, imp: Importer, plan: _FilePlan, report: SourceReport) -> None:
        staged = self._stage(imp, plan, report)
        if self.dry_run:
            return
        # Embed outside the write transaction so other writers wait for our rows, not our model.
        writer = self.writer()
        new, rewrites, talk = staged.new, staged.rewrites, staged.talk
        passages = conversation.passages(talk)
        self._embed(self._texts(writer, staged) + passages)
        vectors = self._vectors
        turn_vectors = (
            np.stack([vectors[p] for p in passages]) if passages else np.zeros((0, writer.dim), dtype=np.float32)
        )
        writer = remember.with_vectors(writer, vectors)
        at = iso_now()
        made: list[tuple[str, Item, str]] = []  # (session, item, the memory it is in)
        with self.store.write():
            for start in range(0, len(new), WRITE_BATCH):
                chunk = new[start : start + WRITE_BATCH]
                results = writer.write_batch([n for _, n, _, _ in chunk])
                for (planned, _, item, session), result in zip(chunk, results, strict=True):
                    planned.action = result.action
                    planned.memory_id = result.memory.id
                    self._remember_item(imp.name, session.key, item, result.memory.id, at)
                    made.append((session.key, item, result.memory.id))
            for planned, memory_id, item in rewrites:
                self._rewrite(planned, memory_id, item, vectors[item.content], imp.name, at)
            if talk:
                conversation.write(self.store, talk, turn_vectors, writer.model_id, at, contact=self.contact)
                self._link(talk, plan, imp.name, made)
                touched = sorted({t.namespace for t in talk})
                bounds = replace(self.port.evidence_bounds, max_age_days=0.0)
                evidencemod.prune(self.store, bounds, namespaces=touched)
            for session, namespace, _, digest in plan.sessions:
                save_digest(self.store, imp.name, session, namespace, digest)
            save_cursor(self.store, imp.name, plan.batch.cursor)

    def _stage(self, imp: Importer, plan: _FilePlan, report: SourceReport) -> _Staged:
        """What writing ``plan`` would do, from the database as it is now: new memories, rewrites, turns."""
        staged = _Staged()
        for session, project_ns, items, _ in plan.sessions:
            for item in items:
                namespace = self.namespaces.of_item(item, project_ns)
                planned = Planned(
                    imp.name, session.key, item.key, namespace, item.type, round(item.importance, 3), item.content
                )
                report.memories.append(planned)
                known = self.store.ingest.known_item(imp.name, session.key, item.key)
                if known is not None:
                    planned.memory_id = known.memory_id
                    if known.content_hash == textmod.content_hash(item.content):
                        planned.action = "unchanged"
                    else:
                        planned.action = "updated"
                        staged.rewrites.append((planned, known.memory_id, item))
                    continue
                fields: dict[str, Any] = {
                    "content": item.content,
                    "type": item.type,
                    "namespace": namespace,
                    "agent": imp.agent,
                    "importance": item.importance,
                    "tags": item.tags,
                    "session": session.key,
                    "source": {
                        "kind": imp.name,
                        "ref": session.path,
                        "message_id": item.message_id,
                        "session": session.key,
                        "metadata": {"item": item.key},
                    },
                }
                fields.update(plan.extras.get((session.key, item.key), {}))
                if "namespace" in fields:
                    planned.namespace = str(fields["namespace"])
                when = item.at or session.updated_at or session.started_at
                if when:
                    try:
                        fields["created_at"] = normalize_iso(when)
                    except InvalidInput:
                        report.skipped["unreadable time"] += 1
                try:
                    staged.new.append((planned, self._prepare(item, fields), item, session))
                except InvalidInput as exc:
                    planned.action = "unchanged"
                    report.skipped["unusable memory"] += 1
                    report.notes.append(f"{plan.path} {session.key} {item.key}: {exc.message}")
        staged.talk = [
            conversation.plan(self.store, imp.name, session, project_ns, plan.turns[session.key])
            for session, project_ns, _, _ in plan.sessions
            if plan.turns.get(session.key)
        ]
        report.evidence += sum(len(t.new) for t in staged.talk)
        return staged

    def _prepare(self, item: Item, fields: dict[str, Any]) -> remember.NewMemory:
        """``port.prepare(fields)``, or what the window's first staging of this item prepared (not yet written)."""
        prepared = self._prepared.pop(id(item), None)
        if prepared is None:
            prepared = self.port.prepare(fields)
            if self._staging_ahead:
                self._prepared[id(item)] = prepared
        return prepared

    @staticmethod
    def _texts(writer: remember.Writer, staged: _Staged) -> list[str]:
        """The memory texts writing ``staged`` embeds: new memories' passages, rewritten contents."""
        return writer.texts_to_embed([n for _, n, _, _ in staged.new]) + [i.content for _, _, i in staged.rewrites]

    def _embed(self, texts: Sequence[str]) -> None:
        """Vectors for those of ``texts`` the window has none for yet, in one call to the embedder."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, self.writer().embed(missing), strict=True))

    def _prefetch(self, imp: Importer, plans: Sequence[_FilePlan]) -> None:
        """Embed what the window's files will need in one call, so the model gets few big batches.

        The files are staged against a scratch report, as the database is now; each is staged again
        when it is written (after the files before it), and embeds then whatever this missed. Any
        failure here is left for that write to meet and report as the file's own.
        """
        texts: list[str] = []
        self._staging_ahead = True
        try:
            writer = self.writer()
            for plan in plans:
                staged = self._stage(imp, plan, SourceReport(imp.name))
                texts += self._texts(writer, staged) + conversation.passages(staged.talk)
            self._embed(texts)
        except Exception:
            log.debug("embedding %d files' texts together failed; each file embeds its own", len(plans), exc_info=True)
        finally:
            self._staging_ahead = False

    def _link(
        self, talk: list[conversation.SessionTurns], plan: _FilePlan, source: str, made: list[tuple[str, Item, str]]
    ) -> None:
        """Tie each memory of the file (new, rewritten or already stored) to the turns it was made from."""
        by_session = {t.session: t for t in talk}
        seen = {(session, item.key) for session, item, _ in made}
        for session, _, items, _ in plan.sessions:
            for item in items:
                if (session.key, item.key) in seen:
                    continue
                known = self.store.ingest.known_item(source, session.key, item.key)
                if known is not None:
                    made.append((session.key, item, known.memory_id))
        for session_key, item, memory_id in made:
            planned = by_session.get(session_key)
            if planned is None:
                continue
            try:
                pk = records.resolve_pk(self.store, memory_id)
            except NotFound:
                continue  # forgotten with --hard meanwhile
            conversation.link(self.store, planned, item, pk)

    def _remember_item(self, source: str, session: str, item: Item, memory_id: str, at: str) -> None:
        self.store.ingest.remember_item(
            source, session, item.key, memory_id=memory_id,
            content_hash=textmod.content_hash(item.content), at=at,
        )  # fmt: skip

    def _rewrite(self, planned: Planned, memory_id: str, item: Item, vector: np.ndarray, source: str, at: str) -> None:
        writer = self.writer()
        try:
            memory = self.store.memories.load(records.resolve_pk(self.store, memory_id), with_sources=False)
        except NotFound:
            planned.action = "unchanged"  # forgotten with --hard: not brought back
            return
        changed = remember.rewrite(
            self.store, memory, item.content, vector, model_id=writer.model_id, dim=writer.dim, at=at,
            actor=source, note=f"{source} session {planned.session} grew",
        )  # fmt: skip
        if not changed:
            planned.action = "unchanged"
        self._remember_item(source, planned.session, item, memory_id, at)

    def run_source(self, imp: Importer, paths: Sequence[Path], report: SourceReport) -> None:
        """Read, extract and write ``paths``, one transaction per file.

        Files are read and extracted a window at a time (WINDOW_FILES files or WINDOW_TEXTS texts),
        then the window's texts are embedded together and its files written in order, so the model
        gets a few big calls rather than one per file. A file that continues a session of the
        window is read only after the window is written, since its extraction starts from what
        the session's earlier part left in the database.
        """
        report.files = len(paths)
        window = _Window()
        finished = False
        for done, path in enumerate(paths):
            if self.deadline is not None and self.deadline.passed():
                self.stopped_early = True
                break
            self.progress(done, len(paths))
            read = self._in_time(path, report, functools.partial(self.read_file, imp, path, report))
            if self.abandoned:
                break
            if isinstance(read, tuple):
                key, batch = read
                self._warm_model()
                if window.sessions & {session.key for session in batch.sessions}:
                    self._flush(imp, window, report)
                    window = _Window()
                read = self._in_time(path, report, functools.partial(self.extract_file, imp, key, batch, report))
                if self.abandoned:
                    break
            if read is not None:
                window.add(read)
            if window.full():
                self._flush(imp, window, report)
                window = _Window()
        else:
            finished = True
        self._flush(imp, window, report)
        if finished:
            self.progress(len(paths), len(paths))

    def _flush(self, imp: Importer, window: _Window, report: SourceReport) -> None:
        """Write the window's files in order, their texts embedded together first."""
        if not window.plans:
            return
        try:
            if not self.dry_run:
                self._prefetch(imp, window.plans)
            for plan in window.plans:
                self._write_or_report(imp, plan, report)
        finally:
            self._vectors.clear()
            self._prepared.clear()

    def _warm_model(self) -> None:
        """Start loading the embedding model in a thread, once, when a file first has something new: it
        loads (about 0.2 s) while the window's files are read and extracted, instead of after them."""
        if self._warming is not None or self.dry_run:
            return

        def warm() -> None:
            try:
                self.port.warm()
            except Exception:  # the first embedding loads it again and reports what is wrong
                log.debug("loading the embedding model ahead failed", exc_info=True)

        self._warming = threading.Thread(target=warm, name="engram-model-warm-up", daemon=True)
        self._warming.start()

    def finish(self) -> None:
        """Wait for the model's warm-up, if one started: nothing is left running when ingest returns."""
        if self._warming is not None:
            self._warming.join()

    def _in_time(self, path: Path, report: SourceReport, step: Callable[[], _T]) -> _T | None:
        """``step`` (reading or extracting ``path``), given up (nothing written, the run ends) if it runs far
        past the deadline."""
        budget = None if self.deadline is None else self.deadline.left() + HARD_STOP_GRACE_S
        try:
            with limits.hard_stop(budget):
                return step()
        except limits.Abandoned:
            where = textmod.clean(str(path))
            self.abandoned.append(where)
            self.stopped_early = True
            report.notes.append(f"{where}: still being read {HARD_STOP_GRACE_S:.0f} s after --max-seconds; "
                                "left for the next run")  # fmt: skip
            return None

    def _write_or_report(self, imp: Importer, plan: _FilePlan, report: SourceReport) -> None:
        """``write_file``; any failure is this file's error (its transaction rolled back, read again next run)."""
        before = len(report.memories)
        try:
            self.write_file(imp, plan, report)
        except EngramError as exc:
            del report.memories[before:]
            report.error(f"{plan.path}: {exc.message}")
        except Exception as exc:
            del report.memories[before:]
            log.debug("writing what was read from %s failed", plan.path, exc_info=True)
            report.error(f"{plan.path}: could not be written ({describe(exc)})")


def _files(imp: Importer, path: Path | None, env: Mapping[str, str], home: Path) -> list[Path]:
    if path is None:
        return sorted(set(imp.locate(env, home)))
    if not os.path.lexists(path):
        raise NotFound(f"{path} does not exist", hint="check the path given with `path`", param="path")
    if not path.is_dir() and files.irregular(path) is not None:
        return [path]  # a FIFO, a loop …: reported as skipped, rather than as nothing found
    return sorted(set(imp.files(path)))


def source_names(source: str | None, path: Path | None) -> list[str]:
    names = list(dict.fromkeys(SOURCES))
    if source is None:
        if path is not None:
            raise UsageError(
                "`path` needs a source", hint="e.g. engram ingest aider --path ~/src/webshop", param="path"
            )
        return names
    if source not in SOURCES:
        raise UsageError(f"unknown source {source!r}", hint=f"the sources are: {', '.join(names)}")
    if source in GIVEN_PATH_ONLY and path is None:
        raise UsageError(
            f"{source} reads a file you give it, not a default place",
            hint=f"e.g. engram ingest {source} {_EXAMPLE_PATHS[source]}",
            param="path",
        )
    return [source]


def run(
    port: IngestPort,
    source: str | None = None,
    *,
    path: Path | None = None,
    dry_run: bool = False,
    namespace: str | None = None,
    max_seconds: float | None = None,
    progress: Progress | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
) -> IngestReport:
    """Ingest one source (or every source found in its default place) through ``port``."""
    env = dict(os.environ if env is None else env)
    home = home or Path.home()
    report = IngestReport(dry_run=dry_run)
    deadline = None if max_seconds is None else limits.Deadline.after(max_seconds)
    loader = Loader(port, dry_run=dry_run, namespace=namespace, progress=progress, deadline=deadline)
    try:
        return _run(loader, report, source, path, env, home)
    finally:
        loader.finish()


def _run(
    loader: Loader, report: IngestReport, source: str | None, path: Path | None, env: dict[str, str], home: Path
) -> IngestReport:
    looked: list[dict[str, str | None]] = []
    for name in source_names(source, path):
        imp = importer(name)
        part = SourceReport(name)
        try:
            found = _files(imp, path, env, home)
        except EngramError:
            raise  # a --path that does not exist: the whole command is wrong, not one file
        except Exception as exc:  # a listing that trips (a permission, a loop) costs this source, not the run
            log.debug("listing the files of %s failed", name, exc_info=True)
            part.error(f"its files could not be listed ({describe(exc)})")
            report.sources.append(part)
            continue
        if not found:
            where = None if path is None else textmod.clean(str(path))
            looked.append({"source": name, "path": where, "reads": imp.description})
            if source is None:
                continue
        report.sources.append(part)
        loader.run_source(imp, found, part)
        if loader.stopped_early:
            report.stopped_early = True
            break
    report.abandoned = loader.abandoned
    if not any(s.files or s.errors for s in report.sources) and not report.stopped_early:
        report.looked = looked
    return report
