"""The Engram class: an open memory store and every verb that works on it."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from engram_cli import config as configmod
from engram_cli import timeutil
from engram_cli.api import scope as scopemod
from engram_cli.api.results import Inspection, NamespaceListing, Page
from engram_cli.errors import EngramError, InvalidInput, ModelError, UsageError
from engram_cli.memory.model import (
    AddResult,
    Event,
    Filters,
    Memory,
    normalize_name,
    normalize_namespace,
)
from engram_cli.project import GLOBAL_NAMESPACE, Scope
from engram_cli.timeutil import parse_time

# The engine's modules (and numpy) are imported by the methods that use them: a command pays for
# what it does, so `engram list` never loads what `engram compact` needs.
if TYPE_CHECKING:
    import numpy as np

    from engram_cli.doctor import ModelListing
    from engram_cli.ingest.port import IngestPort
    from engram_cli.ingest.report import IngestReport
    from engram_cli.memory import audit as auditmod
    from engram_cli.memory import cards as cardsmod
    from engram_cli.memory import compact as compactmod
    from engram_cli.memory import decay as decaymod
    from engram_cli.memory import edit as editmod
    from engram_cli.memory import evaluation as evalmod
    from engram_cli.memory import evidence as evidencemod
    from engram_cli.memory import keys as keysmod
    from engram_cli.memory import manage, remember, transfer
    from engram_cli.memory import recover as recovermod
    from engram_cli.memory import reembed as reembedmod
    from engram_cli.memory.recall import Hit, Hits, RecallSettings
    from engram_cli.store.db import Store
    from engram_cli.store.embed_cache import VectorCache

ACTIVE_MODEL_KEY = "active_model"
ADD_BATCH = 64
# Items whose texts add_many embeds in one call: big enough that the model sees few calls, small
# enough that a window's vectors (1.5 KB each at 384-d) and prepared items stay a few MB.
EMBED_WINDOW = 1024
DEFAULT_MERGE_THRESHOLD = 0.92


def _passages(model_id: str, cache: VectorCache | None = None) -> tuple[remember.EmbedFn, int]:
    """A function embedding passages with a bundled model (through ``cache`` when given), and its dimension."""
    import numpy as np

    from engram_cli.embed import Embedder, load_embedder

    embedder: Embedder = load_embedder(model_id)
    if cache is not None and cache.usable:
        from engram_cli.embed import load_manifest
        from engram_cli.embed.cache import CachedEmbedder

        embedder = CachedEmbedder(embedder, load_manifest(model_id), cache)

    def embed(texts: Sequence[str]) -> np.ndarray:
        return np.asarray(embedder.embed_batch(list(texts), kind="passage"), dtype=np.float32)

    return embed, int(embedder.dim)


class Criteria(TypedDict, total=False):
    """The filters ``recall``, ``list``, ``count`` and ``export`` take as keywords, beside ``namespace``.

    They mean what the CLI's flags of the same names mean (``global_scope`` is ``-g/--global``);
    see :meth:`Engram.filters`.
    """

    all_namespaces: bool
    global_scope: bool
    agent: str | None
    type: str | Sequence[str] | None
    tags: Sequence[str] | None
    since: str | None
    until: str | None
    accessed_since: str | None
    accessed_until: str | None
    status: str | Sequence[str] | None
    include_archived: bool
    include_superseded: bool
    embedding_model: str | None
    session: str | None


class Engram:
    """An open memory store.

    >>> with Engram.open() as mem:
    ...     mem.add("Deploys go through `make release`", tags=["ops"])
    ...     hits = mem.recall("how do we deploy?")

    Where it reads and writes when not told is its :attr:`scope`: the git project of the directory
    it was opened in (``cwd``), together with the global scope of what is true in every project.
    """

    def __init__(self, store: Store, cfg: configmod.Config, scope: Scope | None = None) -> None:
        self.store = store
        self.config = cfg
        self.scope = scope or _scope(cfg, None)
        self._embed_cache: VectorCache | None = None

    @property
    def settings(self) -> configmod.Settings:
        """The effective settings (``config.settings``): defaults, config.toml, ENGRAM_* variables."""
        return self.config.settings

    # -- lifecycle ---------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        config: configmod.Config | None = None,
        paths: configmod.Paths | None = None,
        cwd: str | os.PathLike[str] | None = None,
        build_index: bool = True,
    ) -> Engram:
        """Open the database at ``path`` (default: ENGRAM_DB, ENGRAM_HOME or the user data dir).

        ``cwd`` (default: the current directory) decides the :attr:`scope`: inside a git repository,
        that project and the global scope; outside one, the global scope only. A configured
        ``namespace`` (config.toml, ENGRAM_NAMESPACE) names the project instead.

        ``build_index`` False: searches use the vector index only if its file is already there and usable,
        and sqlite-vec's own (exact, slower) search otherwise, instead of first reading every vector to
        build it (minutes at a million memories); see :meth:`build_vector_index`.
        """
        from engram_cli.store import connect

        paths = paths or configmod.Paths.resolve(path)
        cfg = config or configmod.load(paths)
        scope = _scope(cfg, None if cwd is None else Path(cwd))
        from engram_cli.store.knn import IndexOptions

        settings = cfg.settings.store
        index = IndexOptions(
            cache_dir=paths.cache_dir / "vectors", approx_min_rows=settings.vector_approx_rows,
            rerank=settings.vector_rerank, enabled=settings.vector_index, build=build_index,
        )  # fmt: skip
        store = connect(
            paths.db, create_dirs=paths.db_is_default, busy_timeout_ms=settings.busy_timeout_ms, index=index
        )
        return cls(store, cfg, scope)

    @classmethod
    def recover(
        cls,
        path: str | os.PathLike[str] | None = None,
        output: str | os.PathLike[str] | None = None,
        *,
        config: configmod.Config | None = None,
        paths: configmod.Paths | None = None,
        progress: Any = None,
    ) -> recovermod.RecoverReport:
        """Copy every row the (damaged) database at ``path`` still yields into the new database ``output``.

        ``output`` defaults to ``<db>.recovered-<timestamp>.db`` beside it and is never overwritten.
        The damaged file is only read, so this works when ``Engram.open`` cannot. Vectors that no
        longer read are made again from their memory's text; the keyword index is rebuilt.
        """
        from engram_cli.memory import recover as recovermod

        paths = paths or configmod.Paths.resolve(path)
        cfg = config or configmod.load(paths)
        return recovermod.run(
            paths.db,
            None if output is None else Path(output).expanduser(),
            embedder=_passages,
            fallback_model=cfg.settings.model,
            progress=progress,
        )

    def build_vector_index(self) -> None:
        """Bring the vector index file of every model in use up to date now, building it if it is missing."""
        vectors = self.store.vectors
        for model_id, _ in vectors.in_use():
            vectors.warm(model_id)

    def keep_keyword_scorer(self) -> None:
        """Rank keyword matches in memory from the next recall on, as a process does from its second search
        (see ``store.keywords``): for a long-lived process, so that its first answer does not pay for it."""
        self.store.keywords.keep_scorer()

    def scoped(self, scope: Scope) -> Engram:
        """This store seen from another :attr:`scope` (a hook speaks for the assistant's project, not its cwd).

        The two share the store: close one of them, not both.
        """
        return type(self)(self.store, self.config, scope)

    def close(self) -> None:
        if self._embed_cache is not None:
            self._embed_cache.close()
        self.store.close()

    def __enter__(self) -> Engram:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def path(self) -> Path:
        return self.store.path

    @property
    def read_only(self) -> bool:
        """True when the file (or its directory) is not writable: reads work, every change raises ReadOnlyDatabase."""
        return self.store.read_only is not None

    # -- models ----------------------------------------------------------------------

    @property
    def active_model(self) -> str:
        """The model new vectors are made with: the database's own record, else the config."""
        return self.store.setting(ACTIVE_MODEL_KEY) or self.settings.model

    def _embedder(self, model_id: str) -> Any:
        from engram_cli.embed import load_embedder

        return load_embedder(model_id)

    def thresholds(self, model_id: str | None = None) -> tuple[float, float]:
        """(merge threshold, supersede min similarity) for a model's vectors (default: the active model).

        The config overrides; otherwise the model's calibrated value, or 0.92 for a model
        without one (or one engram does not ship).
        """
        from engram_cli.memory.similarity import SUPERSEDE_MARGIN

        threshold = self.settings.merge.threshold
        if threshold is None:
            from engram_cli.embed import load_manifest

            try:
                threshold = load_manifest(model_id or self.active_model).merge_threshold
            except ModelError:
                if model_id is None:
                    raise
        merge_at = threshold if threshold is not None else DEFAULT_MERGE_THRESHOLD
        supersede_at = self.settings.supersede.min_similarity
        return merge_at, supersede_at if supersede_at is not None else merge_at - SUPERSEDE_MARGIN

    def merge_policy(self, no_merge: bool = False) -> remember.MergePolicy:
        from engram_cli.memory import remember

        merge_at, supersede_at = self.thresholds()
        return remember.MergePolicy(
            enabled=self.settings.merge.enabled and not no_merge,
            threshold=merge_at,
            supersede=self.settings.supersede.enabled,
            supersede_similarity=supersede_at,
        )

    def _passage_embedder(self, model_id: str) -> tuple[remember.EmbedFn, int]:
        """A function embedding passages with ``model_id`` through the embedding cache, and the model's dimension."""
        return _passages(model_id, self.embedding_cache())

    def embedding_cache(self) -> VectorCache:
        """The cache of passage vectors in engram's cache directory (shared by every database; see ``embed.*``)."""
        if self._embed_cache is None:
            from engram_cli.embed.cache import VectorCache, cache_path

            paths = self.config.paths or configmod.Paths.resolve()
            self._embed_cache = VectorCache(cache_path(paths.cache_dir), self.settings.embed.cache_entries)
        return self._embed_cache

    def _writing_model(self) -> tuple[str, remember.EmbedFn, int]:
        """The active model for new vectors; a new database records it as its own on first write."""
        model_id = self.active_model
        embed, dim = self._passage_embedder(model_id)
        if self.store.setting(ACTIVE_MODEL_KEY) is None:
            self.store.set_setting(ACTIVE_MODEL_KEY, model_id)
        return model_id, embed, dim

    def _writer(self, no_merge: bool) -> remember.Writer:
        from engram_cli.memory import remember

        model_id, embed, dim = self._writing_model()
        return remember.Writer(self.store, model_id, dim, embed, self.merge_policy(no_merge))

    # -- verbs -----------------------------------------------------------------------

    def _prepare(
        self, fields: Mapping[str, Any], *, keep_secrets: bool = False, namespace: str | None = None
    ) -> remember.NewMemory:
        """``fields`` checked and completed; without a namespace of their own they go to ``namespace``
        (default: the :attr:`scope`'s)."""
        from engram_cli.memory import remember

        return remember.prepare(
            fields, namespace=namespace or self.scope.default, agent=self.settings.agent,
            keep_secrets=keep_secrets, contact=self.settings.redact.contact_details,
        )  # fmt: skip

    def add(
        self, content: str, *, no_merge: bool = False, keep_secrets: bool = False, global_scope: bool = False,
        **fields: Any,
    ) -> AddResult:  # fmt: skip
        """Remember one text. Returns what happened (created, merged, duplicate) and the memory.

        It goes to ``namespace`` when given, to the global scope with ``global_scope``, else to the
        :attr:`scope`'s project (the global scope outside one). A new namespace is simply started.
        Secrets in any field are replaced by ``[REDACTED:<kind>]`` first (``result.redacted`` lists
        the kinds) unless ``keep_secrets`` is set.
        """
        if global_scope:
            _exclusive(namespace=fields.get("namespace") is not None, global_scope=True)
            fields["namespace"] = GLOBAL_NAMESPACE
        self.store.require_writable()
        item = self._prepare({"content": content, **fields}, keep_secrets=keep_secrets)
        return self._writer(no_merge).write_batch([item])[0]

    def add_many(
        self,
        items: Iterable[Mapping[str, Any]],
        *,
        no_merge: bool = False,
        batch_size: int = ADD_BATCH,
        keep_secrets: bool = False,
    ) -> list[AddResult]:
        """Remember many texts: one transaction per batch of ``batch_size``.

        Every item of a batch is validated before the batch writes anything. Secrets are
        redacted as in :meth:`add`. The texts of up to EMBED_WINDOW items are embedded together
        (each distinct text once, sorted by length, through the embedding cache) before their
        batches are written, so the model works on a few big calls.
        """
        if batch_size < 1:
            raise InvalidInput("batch_size must be at least 1")
        self.store.require_writable()
        # Whole batches per window, so that a bad item stops the writing where it always did.
        window = batch_size * max(1, EMBED_WINDOW // batch_size)
        with self.store.bulk():
            return self._add_windows(items, window, batch_size, no_merge=no_merge, keep_secrets=keep_secrets)

    def _add_windows(
        self, items: Iterable[Mapping[str, Any]], window: int, batch_size: int, *, no_merge: bool, keep_secrets: bool
    ) -> list[AddResult]:
        """:meth:`add_many`'s work, ``window`` items at a time."""
        from engram_cli.memory import remember

        writer: remember.Writer | None = None
        results: list[AddResult] = []
        offset = 0
        for group in remember.chunked(items, window):
            prepared: list[remember.NewMemory] = []
            error: InvalidInput | None = None
            for index, fields in enumerate(group, start=offset):
                if not isinstance(fields, Mapping):
                    error = InvalidInput(f"item {index}: expected an object with a 'content' field")
                    break
                try:
                    prepared.append(self._prepare(fields, keep_secrets=keep_secrets))
                except InvalidInput as exc:
                    error = InvalidInput(f"item {index}: {exc.message}", hint=exc.hint)
                    error.__cause__ = exc
                    break
            offset += len(group)
            if error is not None:
                del prepared[len(prepared) - len(prepared) % batch_size :]  # the bad item's batch writes nothing
            if prepared:
                writer = writer or self._writer(no_merge)
                texts = writer.texts_to_embed(prepared)
                vectors = dict(zip(texts, writer.embed(texts), strict=True)) if texts else {}
                ready = remember.with_vectors(writer, vectors)
                results.extend(ready.write_batches(prepared, batch_size))
            if error is not None:
                raise error
        return results

    def filters(
        self,
        *,
        namespace: str | Sequence[str] | None = None,
        all_namespaces: bool = False,
        global_scope: bool = False,
        with_global: bool = False,
        agent: str | None = None,
        type: str | Sequence[str] | None = None,
        tags: Sequence[str] | None = None,
        since: str | None = None,
        until: str | None = None,
        accessed_since: str | None = None,
        accessed_until: str | None = None,
        status: str | Sequence[str] | None = None,
        include_archived: bool = False,
        include_superseded: bool = False,
        embedding_model: str | None = None,
        session: str | None = None,
    ) -> Filters:
        """Build Filters with this store's defaults.

        The namespaces are ``namespace`` (each must hold a memory: a typo is an error that names the
        closest ones), every one with ``all_namespaces``, the global scope with ``global_scope``, else
        the :attr:`scope`: its project alone, or with ``with_global`` the project and the global scope.
        """
        from engram_cli.memory import namespaces as nsmod

        _exclusive(namespace=namespace is not None, global_scope=global_scope, all_namespaces=all_namespaces)
        if all_namespaces:
            namespaces = None
        elif global_scope:
            namespaces = [GLOBAL_NAMESPACE]
        elif namespace is None:
            namespaces = self.scope.namespaces if with_global else [self.scope.default]
        else:
            namespaces = _namespaces(namespace) or []
            nsmod.require_namespaces(self.store, namespaces, exempt=self.scope.namespaces)
        statuses = [status] if isinstance(status, str) else list(status or ["active"])
        if include_archived and "archived" not in statuses:
            statuses.append("archived")
        if include_superseded and "superseded" not in statuses:
            statuses.append("superseded")
        return Filters(
            namespaces=namespaces,
            agent=None if agent is None else normalize_name("agent", agent),
            types=[type] if isinstance(type, str) else list(type or []),
            tags=list(tags or []),
            since=since,
            until=until,
            accessed_since=accessed_since,
            accessed_until=accessed_until,
            statuses=statuses,
            embedding_model=embedding_model,
            session=session,
        )

    def recall_settings(self) -> RecallSettings:
        """How recall ranks, from the settings (the only place its numbers come from)."""
        from engram_cli.memory.recall import RecallSettings

        cfg = self.settings.recall
        return RecallSettings(
            candidates=cfg.candidates,
            rrf_k=cfg.rrf_k,
            vector_weight=cfg.vector_weight,
            keyword_weight=cfg.keyword_weight,
            cross_weight=cfg.cross_weight,
            time_weight=cfg.time_weight,
            weigh=True,
            diversity=self.thresholds()[0] if cfg.diversify else None,
            min_relevance=cfg.min_relevance,
        )

    def _filtered(
        self,
        filters: Filters | None,
        namespace: str | Sequence[str] | None,
        criteria: Criteria,
        *,
        with_global: bool = False,
    ) -> Filters:
        """``filters`` as given, or built from the keywords; both at once would leave one of them unheard."""
        if filters is None:
            return self.filters(namespace=namespace, with_global=with_global, **criteria)
        if namespace is not None or criteria:
            raise UsageError(
                "give either filters or filter keywords, not both",
                hint="engram.filters(namespace=…, tags=…) builds Filters from the keywords",
            )
        return filters

    def recall(
        self, query: str, k: int | None = None, namespace: str | Sequence[str] | None = None, *,
        filters: Filters | None = None, bump: bool | None = None, settings: RecallSettings | None = None,
        now: str | None = None, no_global: bool = False, min_relevance: float | None = None,
        evidence: bool | None = None, **criteria: Unpack[Criteria],
    ) -> Hits:  # fmt: skip
        """The best memories for ``query``: filtered first, then ranked by fused ranks x importance x decay.

        Filter with keywords (``namespace``, ``tags``, ``since`` … see :class:`Criteria`) or with a
        ready ``filters``. Without a namespace it searches the :attr:`scope`'s project and the global
        scope together (``no_global``: the project alone); each hit's ``scope`` says which it came
        from. Hits whose relevance (the calibrated chance that they are relevant) is under
        ``min_relevance`` (default: the ``recall.min_relevance`` setting; 0 keeps all) are dropped, and
        only the hits returned count as accessed. On a read-only database the access counts are left as
        they are (``bump`` is ignored).

        The turns of ingested conversations (evidence) come after the memories, in ``hits.evidence``:
        by default (the ``evidence.fill`` setting) they fill the places of the ``k`` that relevant memories
        left; ``evidence=True`` adds up to ``k`` of them whatever the memories found; ``evidence=False``
        leaves them out.
        """
        import numpy as np

        from engram_cli.memory import evidence as evidencemod
        from engram_cli.memory.recall import recall

        if no_global:
            self._check_no_global(filters, namespace, criteria)
        flt = self._filtered(filters, namespace, criteria, with_global=not no_global)
        if bump is None:
            bump = self.settings.recall.bump
        settings = settings or self.recall_settings()
        if min_relevance is not None:
            settings = replace(settings, min_relevance=min_relevance)

        embedded: dict[tuple[str, str], np.ndarray] = {}

        def embed_query(model_id: str, text: str) -> np.ndarray:
            # The memories and the evidence are searched with the same query: it is embedded once.
            if (model_id, text) not in embedded:
                vector = self._embedder(model_id).embed_batch([text], kind="query")[0]
                embedded[model_id, text] = np.asarray(vector, dtype=np.float32)
            return embedded[model_id, text]

        wanted = k if k is not None else self.settings.recall.k
        fill = evidence is not False and (evidence or self.settings.evidence.fill)
        at = parse_time(now, param="now") if now else None
        hits = recall(
            self.store, query, k=wanted, filters=flt, embed_query=embed_query, settings=settings,
            # With evidence to fill, who is bumped is known only once evidence has taken its places.
            bump=bump and not self.read_only and not fill, at=at,
        )  # fmt: skip
        for hit in hits:
            hit.scope = self.scope.of(hit.memory.namespace)
            hit.explain["scope"] = {"scope": hit.scope, "namespace": hit.memory.namespace}
        if not fill:
            return hits
        memory_only = evidencemod.memory_only(flt)
        if memory_only:
            if evidence:
                raise UsageError(
                    f"evidence (turns of conversations) has no {' or '.join(memory_only)} to filter on",
                    hint="drop those filters to search the evidence, or drop `evidence`",
                    param="evidence",
                )
            self._bump(hits, bump)
            return hits
        # Memories that are likely relevant keep their places; a weak one (under evidence.fill_below) gives
        # its place to an evidence hit that is at least as likely to be relevant, and keeps it otherwise.
        strong = [h for h in hits if h.relevance >= self.settings.evidence.fill_below]
        places = wanted if evidence else wanted - len(strong)
        if places < 1:
            self._bump(hits, bump)
            return hits
        found, below = evidencemod.search(
            self.store, query, k=places, filters=flt, embed_query=embed_query, candidates=settings.candidates,
            rrf_k=settings.rrf_k, vector_weight=settings.vector_weight, keyword_weight=settings.keyword_weight,
            min_relevance=settings.min_relevance, half_life_days=self.settings.decay.half_life_days.episodic,
            at=at,
        )  # fmt: skip
        if not evidence:
            weak = [h for h in hits if h.relevance < self.settings.evidence.fill_below]
            best_turn = max((t.relevance for t in found), default=0.0)
            kept_weak = [h for h in weak if h.relevance >= best_turn][: max(0, places - len(found))]
            kept_weak += [h for h in weak if h not in kept_weak][: max(0, places - len(found) - len(kept_weak))]
            found = found[: max(0, places - len(kept_weak))]
            hits[:] = [h for h in hits if h in strong or h in kept_weak]
        for turn_hit in found:
            turn_hit.scope = self.scope.of(turn_hit.turn.namespace)
        hits.evidence = found
        hits.below.extend(below)
        self._bump(hits, bump)
        return hits

    def _bump(self, hits: builtins.list[Hit], bump: bool) -> None:
        """Count the memory hits finally returned as accessed (not on a read-only database)."""
        from engram_cli.memory import recall as recallmod

        if bump and hits and not self.read_only:
            recallmod.count_access(self.store, hits)

    def card(self, k: int = 8, *, now: str | None = None) -> builtins.list[cardsmod.CardEntry]:
        """What a new session in the :attr:`scope` should start with: no query, the ``k`` strongest memories.

        Strength is importance x decay (from when it was learned or last used) x recency (of when it
        happened), over the project and the global scope together (the global scope holds at most half
        the places while the project can fill them); near-copies appear once. Reading is not an access.
        """
        from engram_cli.memory import cards as cardsmod

        entries = cardsmod.session_card(
            self.store, self.scope.namespaces, k=k,
            moment=parse_time(now, param="now") if now else timeutil.now(),
            half_lives=self.settings.decay.half_life_days.by_type(), global_namespace=self.scope.global_ns,
        )  # fmt: skip
        for entry in entries:
            entry.scope = self.scope.of(entry.memory.namespace)
        return entries

    def _check_no_global(self, filters: Filters | None, namespace: Any, criteria: Criteria) -> None:
        """``no_global`` narrows the default scope to the project: it needs one, and no other choice of namespace."""
        if (
            filters is not None
            or namespace is not None
            or criteria.get("all_namespaces")
            or criteria.get("global_scope")
        ):
            raise UsageError(
                "`no_global` only narrows the default scope; it cannot go with a namespace of your choosing",
                hint="drop `no_global`",
                param="no_global",
            )
        if self.scope.project is None:
            raise UsageError(
                "`no_global` needs a project, and this is not inside a git repository (no namespace is configured)",
                hint="run it inside the project's repository, or name the project with -n",
                param="no_global",
            )

    def namespaces(self) -> NamespaceListing:
        """Every namespace that holds memories, counted by status, and which of them are this scope's."""
        from engram_cli.memory import namespaces as nsmod

        return NamespaceListing(nsmod.namespace_counts(self.store, self.scope), scope=self.scope)

    def get(self, ref: str) -> Memory:
        """One memory by id or unique id prefix, with tags and sources."""
        from engram_cli.memory import manage

        return manage.get(self.store, ref)

    def history(self, ref: str) -> tuple[Memory, list[Event]]:
        from engram_cli.memory import manage

        return manage.history(self.store, ref)

    def events(self, *, limit: int = 50, kinds: Sequence[str] | None = None) -> builtins.list[Event]:
        """The latest events across the database, newest first."""
        from engram_cli.memory import manage

        return manage.recent_events(self.store, limit=limit, kinds=list(kinds or []))

    def export(
        self,
        *,
        with_vectors: bool = False,
        tombstones: bool = True,
        namespace: str | Sequence[str] | None = None,
        filters: Filters | None = None,
        **criteria: Unpack[Criteria],
    ) -> Iterable[dict[str, Any]]:
        """Memories as export records (every status unless ``status`` is given), oldest first, then
        (with ``tombstones``) one record per memory of those namespaces that was purged or folded away.

        Without a namespace, the :attr:`scope`'s project (or the global scope outside one).
        """
        from engram_cli.memory import transfer

        if filters is None:
            criteria.setdefault("status", ["active", "superseded", "archived"])
        flt = self._filtered(filters, namespace, criteria)
        return transfer.export(self.store, flt, with_vectors=with_vectors, tombstones=tombstones)

    def import_lines(self, lines: Iterable[str], *, atomic: bool = False) -> transfer.ImportReport:
        """Import export records (JSONL lines; ids, timestamps and history are kept) or minimal records."""
        from engram_cli.embed import available_models
        from engram_cli.memory import transfer

        self.store.require_writable()
        model_id, embed, dim = self._writing_model()
        known = {m.id: m.dim for m in available_models()}
        with self.store.bulk():
            return transfer.import_lines(
                self.store, lines, active_model=model_id, dim=dim, embed=embed, known_models=known,
                namespace=self.scope.default, agent=self.settings.agent, atomic=atomic,
                contact=self.settings.redact.contact_details, embedder=self._passage_embedder,
            )  # fmt: skip

    def reembed(
        self, model_id: str, *, batch: int = 64, limit: int | None = None, progress: Any = None
    ) -> reembedmod.ReembedReport:
        """Re-embed memories with another bundled model (resumable); it becomes active when all rows are done."""
        from engram_cli.embed import load_manifest
        from engram_cli.memory import reembed as reembedmod

        load_manifest(model_id)  # unknown ids fail here, with the list of bundled models
        self.store.require_writable()
        embed, dim = self._passage_embedder(model_id)
        with self.store.bulk():
            return reembedmod.run(self.store, model_id, dim, embed, batch=batch, limit=limit, progress=progress)

    def list(
        self,
        *,
        limit: int = 20,
        offset: int = 0,
        namespace: str | Sequence[str] | None = None,
        filters: Filters | None = None,
        **criteria: Unpack[Criteria],
    ) -> builtins.list[Memory]:
        """Memories, newest first (by when they happened); without a namespace, the :attr:`scope`'s project."""
        from engram_cli.memory import manage

        flt = self._filtered(filters, namespace, criteria)
        return manage.list_memories(self.store, flt, limit=limit, offset=offset)

    def count(
        self,
        *,
        namespace: str | Sequence[str] | None = None,
        filters: Filters | None = None,
        **criteria: Unpack[Criteria],
    ) -> int:
        """How many memories pass the filters that ``list`` takes (all of them, not one page)."""
        from engram_cli.memory import manage

        return manage.count(self.store, self._filtered(filters, namespace, criteria))

    def page(self, filters: Filters, *, limit: int = 20, offset: int = 0) -> Page:
        """One page of memories, newest first, and how many match in all when the page is full."""
        memories = self.list(limit=limit, offset=offset, filters=filters)
        # Counted only when the page is full: a short page already says it is everything.
        total = self.count(filters=filters) if len(memories) == limit else None
        return Page(memories, total=total, offset=offset)

    def inspect(self, ref: str) -> Inspection:
        """One memory with its history and the parts of its score that do not depend on a query."""
        from engram_cli.memory import evidence as evidencemod
        from engram_cli.memory import manage

        memory, events = self.history(ref)
        return Inspection(memory, events, manage.score_factors(memory), evidencemod.of_memory(self.store, memory.pk))

    def models(self) -> ModelListing:
        """The bundled models, the active one marked, with the number of this store's vectors each made."""
        from engram_cli import doctor

        return doctor.model_rows(self.active_model, self.store.memories.count_by_model())

    def decay(
        self, *, now: str | None = None, namespace: str | Sequence[str] | None = None, dry_run: bool = False
    ) -> decaymod.DecayReport:
        """Recompute decay scores (all namespaces unless given) and archive what has faded."""
        from engram_cli.memory import decay as decaymod
        from engram_cli.memory import evidence as evidencemod

        if not dry_run:
            self.store.require_writable()
        half_lives = self.settings.decay.half_life_days.by_type()
        at = parse_time(now, param="now") if now else None
        namespaces = _namespaces(namespace)
        report = decaymod.run(self.store, half_lives, at=at, namespaces=namespaces, dry_run=dry_run)
        report.evidence_pruned = evidencemod.prune(
            self.store, self.evidence_bounds(), namespaces=namespaces, at=at, dry_run=dry_run
        )
        return report

    def _cluster_thresholds(self, model_id: str) -> compactmod.Thresholds | None:
        """The configured cluster threshold (one for all scripts), else the model's calibrated ones."""
        from engram_cli.embed import load_manifest
        from engram_cli.memory import compact as compactmod

        configured = self.settings.compact.cluster_threshold
        if configured is not None and model_id == self.active_model:
            return compactmod.Thresholds.uniform(configured)
        try:
            manifest = load_manifest(model_id)
        except EngramError:
            return None
        calibrated = manifest.cluster_thresholds
        if set(calibrated) >= {"latin", "cjk", "cross"}:
            return compactmod.Thresholds(calibrated["latin"], calibrated["cjk"], calibrated["cross"])
        return None if manifest.cluster_threshold is None else compactmod.Thresholds.uniform(manifest.cluster_threshold)

    def compact(
        self,
        *,
        now: str | None = None,
        namespace: str | Sequence[str] | None = None,
        dry_run: bool = False,
        progress: Any = None,
    ) -> compactmod.CompactReport:
        """Consolidate episodes into semantic memories, fold near duplicates, enforce the cap (see memory/compact)."""
        from engram_cli.memory import compact as compactmod
        from engram_cli.memory import evidence as evidencemod
        from engram_cli.store.lock import exclusive

        if not dry_run:
            self.store.require_writable()
        cfg = self.settings
        models = [model for model, _ in self.store.vectors.in_use()]
        clusters = {m: t for m in models if (t := self._cluster_thresholds(m))}
        merges = {m: self.thresholds(m)[0] for m in models}
        settings = compactmod.Settings(
            cluster_threshold=clusters,
            merge_threshold=merges,
            half_lives=cfg.decay.half_life_days.by_type(),
            min_cluster=cfg.compact.min_cluster,
            max_cluster=cfg.compact.max_cluster,
            window_days=cfg.compact.window_days,
            min_age_days=cfg.compact.min_age_days,
            max_active=cfg.compact.max_active,
            summarizer_command=cfg.summarizer.command.strip(),
            summarizer_timeout_s=cfg.summarizer.timeout_s,
        )
        at = parse_time(now, param="now") if now else None
        namespaces = _namespaces(namespace)

        def embed_for(model_id: str) -> remember.EmbedFn:
            return self._passage_embedder(model_id)[0]

        def run() -> compactmod.CompactReport:
            return compactmod.run(
                self.store, settings, embed_for, at=at, namespaces=namespaces, dry_run=dry_run, progress=progress
            )

        def pruned(report: compactmod.CompactReport) -> compactmod.CompactReport:
            # Evidence ages out with the episodes: compact's decay pass prunes it too.
            gone = evidencemod.prune(self.store, self.evidence_bounds(), namespaces=namespaces, at=at, dry_run=dry_run)
            if report.decay is not None:
                report.decay.evidence_pruned = gone
            return report

        if self.read_only:
            return pruned(run())  # a dry run that writes nothing has nothing to keep apart (no lock file)
        with exclusive(self.path, "compact"):
            return pruned(run())

    def audit(
        self,
        *,
        namespace: str | Sequence[str] | None = None,
        fix: bool = False,
        quick: bool = False,
        now: str | None = None,
    ) -> auditmod.AuditReport:
        """Check the store's health (all namespaces unless given); ``fix`` repairs what is safe to repair.

        ``quick`` uses SQLite's quick_check and skips the pairwise checks (near-duplicates, conflicts).
        On a damaged file the report's integrity check says so, ``report.damage`` holds the error,
        and nothing is repaired.
        """
        from engram_cli.memory import audit as auditmod
        from engram_cli.memory import repair as repairmod

        if fix:
            self.store.require_writable()
        cfg = self.settings
        settings = auditmod.AuditSettings(
            active_model=self.active_model,
            thresholds=self.thresholds,
            stale_days=cfg.audit.stale_days,
            stale_decay=cfg.audit.stale_decay,
            low_confidence=cfg.audit.low_confidence,
            never_accessed_days=cfg.audit.never_accessed_days,
            examples=cfg.audit.examples,
            quick=quick,
            contact=cfg.redact.contact_details,
        )
        at = parse_time(now, param="now") if now else None
        namespaces = _namespaces(namespace)
        repairs = repairmod.Repairs(
            embedder=self._passage_embedder,
            decay=lambda: self.decay(now=now, namespace=namespaces),
        )
        return auditmod.run(self.store, settings, namespaces=namespaces, at=at, fix=fix, repairs=repairs)

    def ingest(
        self,
        source: str | None = None,
        *,
        path: str | os.PathLike[str] | None = None,
        dry_run: bool = False,
        namespace: str | None = None,
        max_seconds: float | None = None,
        progress: Any = None,
        env: Mapping[str, str] | None = None,
        home: str | os.PathLike[str] | None = None,
    ) -> IngestReport:
        """Harvest one source's logs (or every source found in its default place); see engram_cli.ingest.

        The default places are found from ``env`` and ``home`` (default: this process's environment and
        the user's home directory), so that a caller can harvest another home without touching its own.
        """
        from engram_cli.ingest import loader
        from engram_cli.store.lock import exclusive

        forced = None if namespace is None else normalize_namespace(namespace)

        def run() -> IngestReport:
            return loader.run(
                self.ingest_port(), source, path=None if path is None else Path(path).expanduser(), dry_run=dry_run,
                namespace=forced, max_seconds=max_seconds, progress=progress, env=env,
                home=None if home is None else Path(home).expanduser(),
            )  # fmt: skip

        def checked() -> IngestReport:
            # The loader reports a file it cannot store and goes on with the next; when the
            # database itself is damaged, that is the error, not a list of failed files.
            self.store.damage = None
            report = run()
            if self.store.damage is not None:
                raise self.store.damage
            return report

        if dry_run:
            return checked()
        self.store.require_writable()
        # A hook and cron may start ingests at the same moment: one does the work, the other leaves.
        with exclusive(self.path, "ingest"), self.store.bulk():
            return checked()

    def ingest_sources(self) -> builtins.list[dict[str, Any]]:
        """Every known source: files found in its default place, what is new, the cursors' state."""
        from engram_cli.ingest import listing

        return listing.sources(self.store)

    def ingest_port(self) -> IngestPort:
        """What the ingest loader may use of this store: its writer, its checks and the ingest settings."""
        from engram_cli.ingest.port import IngestPort

        # A session whose project is unknown belongs to no project: the configured namespace, else global
        # (not the project engram happens to run in: ingest runs from cron and hooks).
        namespace = scopemod.configured(self.config) or GLOBAL_NAMESPACE
        model_id = self.active_model  # read here: the warm-up runs in another thread, away from the database

        def warm() -> None:
            from engram_cli.embed import load_embedder

            embedder = load_embedder(model_id)
            if hasattr(embedder, "warm"):
                embedder.warm()

        return IngestPort(
            store=self.store,
            writer=lambda: self._writer(no_merge=False),
            warm=warm,
            prepare=lambda fields: self._prepare(fields, namespace=namespace),
            namespace=namespace,
            extract_command=self.settings.extract.command.strip(),
            extract_timeout=self.settings.extract.timeout_s,
            contact=self.settings.redact.contact_details,
            keep_evidence=self.settings.evidence.keep,
            evidence_bounds=self.evidence_bounds(),
        )

    def evidence_bounds(self) -> evidencemod.Bounds:
        """How much evidence is kept, from the ``evidence.*`` settings."""
        from engram_cli.memory import evidence as evidencemod

        cfg = self.settings.evidence
        return evidencemod.Bounds(max_per_namespace=cfg.max_per_namespace, max_age_days=cfg.max_age_days)

    @classmethod
    def open_dataset(
        cls, directory: str | os.PathLike[str], *, paths: configmod.Paths | None = None, rebuild: bool = False
    ) -> tuple[Engram, builtins.list[evalmod.Query]]:
        """A database holding a dataset's memories (built once, cached by content), and its queries.

        Merging and supersession are off while loading, so every record stays the memory its
        queries point at.
        """
        from engram_cli.memory import evaluation as evalmod

        paths = paths or configmod.Paths.resolve()
        cfg = configmod.load(paths)
        loading = replace(cfg, settings=replace(cfg.settings, supersede=replace(cfg.settings.supersede, enabled=False)))

        def load(db: Path, records: builtins.list[dict[str, Any]]) -> None:
            with cls.open(config=loading, paths=replace(paths, db_explicit=db)) as mem:
                mem.add_many(records, no_merge=True)
                mem.store.maintenance.checkpoint()

        target, queries = evalmod.cached_dataset(
            directory, cache_dir=paths.cache_dir, model=cfg.settings.model, load=load, rebuild=rebuild
        )
        return cls.open(config=cfg, paths=replace(paths, db_explicit=target)), queries

    def evaluate(
        self, queries: Sequence[evalmod.Query], *, ks: Sequence[int] = (1, 5, 10), mode: str = "hybrid"
    ) -> evalmod.EvalReport:
        """Score recall on labelled queries (``mode``: hybrid = engram's recall, bm25 or dense alone).

        The baselines are the bare retrievers: no weighing, no relevance floor."""
        from engram_cli.memory import evaluation as evalmod

        base = self.recall_settings()
        bare = replace(base, weigh=False, diversity=None, min_relevance=0.0)
        modes = {
            "hybrid": base,
            "bm25": replace(bare, vector_weight=0.0, keyword_weight=1.0, cross_weight=0.0),
            "dense": replace(bare, vector_weight=1.0, keyword_weight=0.0, cross_weight=0.0),
        }
        if mode not in modes:
            raise InvalidInput(f"unknown mode {mode!r}", hint=f"use one of: {', '.join(modes)}")
        settings = modes[mode]

        def search(query: evalmod.Query, depth: int) -> builtins.list[Memory]:
            try:
                flt = self.filters(namespace=query.namespace, all_namespaces=query.namespace is None, **query.filters)
            except TypeError as exc:
                raise InvalidInput(f"line {query.line}: unknown filter in 'filters': {exc}") from exc
            except InvalidInput as exc:
                raise InvalidInput(f"line {query.line}: {exc.message}", hint=exc.hint) from exc
            hits = self.recall(query.text, k=depth, bump=False, settings=settings, filters=flt, now=query.now)
            return [h.memory for h in hits]

        return evalmod.run(queries, search, ks=ks, mode=mode)

    def touch(self, ref: str | Sequence[str]) -> builtins.list[Memory]:
        """Remember again: access +1, decay back to 1.0, archived memories restored."""
        from engram_cli.memory import decay as decaymod

        self.store.require_writable()
        return decaymod.touch(self.store, [ref] if isinstance(ref, str) else list(ref))

    def edit(
        self,
        ref: str,
        *,
        text: str | None = None,
        importance: float | None = None,
        type: str | None = None,
        tags: Sequence[str] = (),
        untag: Sequence[str] = (),
        namespace: str | None = None,
        version: int | None = None,
        keep_secrets: bool = False,
    ) -> editmod.EditResult:
        """Change a memory in place: its text (embedded and indexed again), importance, type, tags or namespace.

        One transaction and one ``edited`` event with the values before and after. ``version``: the version
        you read; if the memory changed since, nothing is edited (ConflictError). Text that another memory of
        the namespace already says word for word is refused (an edit never merges). Secrets in the new text
        and tags are redacted unless ``keep_secrets``.
        """
        import numpy as np

        from engram_cli.memory import edit as editmod

        self.store.require_writable()
        change = editmod.prepare(
            text=text, importance=importance, type=type, tag=tags, untag=untag, namespace=namespace,
            keep_secrets=keep_secrets, contact=self.settings.redact.contact_details,
        )  # fmt: skip

        def embed(passage: str) -> tuple[str, np.ndarray]:
            model_id, fn, _ = self._writing_model()
            return model_id, np.asarray(fn([passage]), dtype=np.float32)[0]

        return editmod.edit(self.store, ref, change, embed=embed, expected_version=version)

    # -- keyed facts -------------------------------------------------------------------

    def key_scope(self, cwd: str | os.PathLike[str] | None = None) -> Scope:
        """Where keys are looked up from ``cwd`` (default: the working directory): the project, then global."""
        return scopemod.resolve(self.config, None if cwd is None else Path(cwd))

    def set(
        self,
        key: str,
        value: str,
        *,
        namespace: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        keep_secrets: bool = False,
        **fields: Any,
    ) -> AddResult:
        """Give ``key`` the value ``value`` in ``namespace`` (default: the project of ``cwd``, else global).

        The memory holding the key is updated in place (its old value stays in its history as an
        ``edited`` event); a key unset before comes back; otherwise a memory is created, with importance
        0.8 unless told. ``fields`` are those of :meth:`add` (type, importance, tags, source, …).
        """
        target = namespace if namespace is not None else self.key_scope(cwd).default
        return self.add(value, no_merge=True, keep_secrets=keep_secrets, key=key, namespace=target, **fields)

    def lookup(
        self,
        key: str,
        *,
        namespace: str | None = None,
        cwd: str | os.PathLike[str] | None = None,
        touch: bool = True,
    ) -> keysmod.KeyValue:
        """The value of ``key``: in ``namespace`` if given, else the project's, else the global one (NotFound if
        none). An exact lookup: no model is loaded. ``touch`` counts it as an access."""
        from engram_cli.memory import keys as keysmod

        scope = self.key_scope(cwd)
        return keysmod.get(
            self.store, key, scopemod.namespaces_for(scope, namespace), scope.of, touch=touch and not self.read_only
        )

    def unset(
        self, key: str, *, namespace: str | None = None, cwd: str | os.PathLike[str] | None = None
    ) -> keysmod.KeyUnset:
        """Archive the memory :meth:`lookup` would return for ``key`` (its history stays; `set` brings it back)."""
        from engram_cli.memory import keys as keysmod

        self.store.require_writable()
        scope = self.key_scope(cwd)
        return keysmod.unset(self.store, key, scopemod.namespaces_for(scope, namespace), scope.of)

    def keys(
        self,
        prefix: str = "",
        *,
        namespace: str | None = None,
        all_namespaces: bool = False,
        cwd: str | os.PathLike[str] | None = None,
    ) -> keysmod.KeyListing:
        """The active keys starting with ``prefix``: of the project and global (default), one namespace, or all."""
        from engram_cli.memory import keys as keysmod

        scope = self.key_scope(cwd)
        namespaces = None if all_namespaces else scopemod.namespaces_for(scope, namespace)
        return keysmod.listing(self.store, prefix, namespaces, scope.of)

    def forget(
        self,
        ref: str | Sequence[str],
        *,
        hard: bool = False,
        namespace: str | Sequence[str] | None = None,
        all_namespaces: bool = False,
        global_scope: bool = False,
    ) -> builtins.list[manage.ForgetResult]:
        """Archive (default) or purge (``hard=True``) memories, a purge with every copy of their text.

        Each memory must be in the :attr:`scope` (its project or the global scope), or in
        ``namespace`` (the global scope with ``global_scope``, anywhere with ``all_namespaces``):
        an id typed in the wrong project is refused, and nothing changes.
        """
        from engram_cli.memory import manage

        self.store.require_writable()
        refs = [ref] if isinstance(ref, str) else list(ref)
        within = self.filters(
            namespace=namespace, all_namespaces=all_namespaces, global_scope=global_scope, with_global=True
        ).namespaces
        return manage.forget(self.store, refs, hard=hard, embedder=self._passage_embedder, within=within)


def _scope(cfg: configmod.Config, cwd: Path | None) -> Scope:
    return scopemod.resolve(cfg, cwd)


def _exclusive(**given: bool) -> None:
    """Refuse two ways of choosing namespaces at once (`namespace`, `global_scope`, `all_namespaces`)."""
    chosen = [f"`{name}`" for name, on in given.items() if on]
    if len(chosen) > 1:
        raise UsageError(
            f"{' and '.join(chosen)} exclude each other",
            hint="choose one: a namespace, the global scope or every namespace",
            param=tuple(name for name, on in given.items() if on),
        )


def _namespaces(namespace: str | Sequence[str] | None) -> builtins.list[str] | None:
    """The namespaces a verb is limited to (None: all of them), each normalised as stored."""
    if namespace is None:
        return None
    return [normalize_namespace(n) for n in ([namespace] if isinstance(namespace, str) else namespace)]
