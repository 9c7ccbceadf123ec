"""`engram mcp`: the engine as Model Context Protocol tools, over stdio, so an assistant can recall and
remember in the middle of a session.

A front end like the CLI: it parses nothing itself (the SDK checks each call's arguments against the
tool's schema), calls one engine verb and returns its JSON form. The store is opened once, at the first
call, for the project of the client's first file root when the client declares roots, else of the
directory the client started the server in, with the global scope alongside, as on the command line.
The embedding model loads on the first call that needs it and stays loaded. An engine error becomes an
error result carrying its message and hint: the server keeps serving.

stdout is the protocol's channel: nothing here may print.
"""

from __future__ import annotations

import functools
import logging
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import unquote, urlparse

import anyio
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations

from engram_cli._version import __version__
from engram_cli.api import Engram
from engram_cli.errors import DatabaseDamaged, EngramError
from engram_cli.integrations.assistants import CONTEXT_BUDGET, CONTEXT_K
from engram_cli.render.recall import cards
from engram_cli.serialize import to_json

T = TypeVar("T")
log = logging.getLogger(__name__)

INSTRUCTIONS = (
    "engram is the user's long-term memory: facts, decisions, preferences and procedures from earlier sessions, "
    "for this project and for every project (the global scope). Call `recall` when the conversation turns to "
    "something that may have been settled before; call `remember` when the user states something worth keeping "
    "or asks you to remember it. Memories may be outdated: the current instruction wins over them."
)
CARD_URI = "engram://card"
# A client that declares roots but does not answer must not hold the first call up for long.
ROOTS_TIMEOUT_S = 5.0

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
WRITE_IDEMPOTENT = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
REMOVE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


async def client_root(ctx: Context) -> Path | None:
    """The first local directory among the client's roots, when it declares any and answers in time."""
    capabilities = ctx.session.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return None
    try:
        with anyio.fail_after(ROOTS_TIMEOUT_S), warnings.catch_warnings():
            # Deprecated in the 2026-07-28 protocol, still what today's clients send.
            warnings.simplefilter("ignore")
            listed = await ctx.session.list_roots()
    except Exception:  # no usable roots is not an error: the working directory stands in
        return None
    for root in listed.roots:
        uri = urlparse(str(root.uri))
        if uri.scheme == "file" and uri.netloc in ("", "localhost"):
            path = Path(unquote(uri.path))
            if path.is_dir():
                return path
    return None


class Service:
    """One open store shared by every tool call; calls take turns (each runs in a worker thread).

    Where it is (the directory whose project is in scope) is settled by the first tool call: the
    client's first root, else ``cwd``; it stays for the life of the server.
    """

    def __init__(self, opener: Callable[[Path], Engram], cwd: Path) -> None:
        self._opener = opener
        self._cwd = cwd
        self._where: Path | None = None
        self._engram: Engram | None = None
        self._lock = threading.Lock()

    @property
    def where(self) -> Path:
        return self._where or self._cwd

    async def call(self, ctx: Context, verb: Callable[[Engram], T]) -> T:
        if self._where is None:
            self._where = await client_root(ctx) or self._cwd
        return await anyio.to_thread.run_sync(functools.partial(self.run, verb))

    def run(self, verb: Callable[[Engram], T]) -> T:
        with self._lock:
            try:
                if self._engram is None:
                    self._engram = self._opener(self.where)
                return verb(self._engram)
            except EngramError as exc:
                if isinstance(exc, DatabaseDamaged) and self._engram is not None:
                    # The next call opens the file afresh: it may have been recovered or replaced meanwhile.
                    self._engram.close()
                    self._engram = None
                hint = f"\nHint: {exc.hint}" if exc.hint else ""
                raise ToolError(f"Error: {exc.message}{hint}") from exc
            except Exception as exc:
                # A defect, not the caller's mistake: its traceback goes to stderr (the client's log for
                # this server) and the model gets one line; the server goes on.
                log.exception("engram mcp: unexpected error")
                raise ToolError(f"Error: unexpected {type(exc).__name__}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            if self._engram is not None:
                self._engram.close()
                self._engram = None


def _hit(hit: Any) -> dict[str, Any]:
    memory = hit.memory
    return {
        "id": memory.id,
        "content": memory.content,
        "relevance": round(hit.relevance, 4),
        "scope": hit.scope,
        "namespace": memory.namespace,
        "type": memory.type,
        "key": memory.key,
        "tags": list(memory.tags),
        "importance": memory.importance,
    }


def _recent_entry(memory: Any, engram: Engram) -> dict[str, Any]:
    return {
        "id": memory.id,
        "content": memory.content,
        "scope": engram.scope.of(memory.namespace),
        "type": memory.type,
        "key": memory.key,
        "created_at": memory.created_at,
    }


def build(service: Service) -> MCPServer:
    """The MCP server with engram's tools and the session card, each working through ``service``."""
    server = MCPServer("engram", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(annotations=READ)
    async def recall(
        ctx: Context,
        query: str,
        k: int = 5,
        types: list[str] | None = None,
        scope: Literal["all", "project", "global"] = "all",
        format: Literal["hits", "card"] = "hits",
        budget: int | None = None,
    ) -> dict[str, Any]:
        """Search the user's long-term memories for what is relevant to `query` (a question or a topic, in any
        language). Call it before answering when the conversation touches something that may have been decided,
        learned or stated in an earlier session: conventions, commands, preferences, past fixes.

        `scope`: "all" (this project and the global scope, the default), "project" or "global". `types` limits
        to memory types (working, episodic, semantic, procedural). Returns `hits`, best first, each with id,
        content, relevance (the chance, 0 to 1, that it is relevant), scope, type and key; with `format` "card",
        also `card`, the hits as one text block for a prompt (within `budget` tokens if given). No hits means
        nothing relevant is remembered.
        """

        def verb(engram: Engram) -> dict[str, Any]:
            hits = engram.recall(
                query, k=k, type=types, global_scope=scope == "global", no_global=scope == "project", evidence=False
            )
            out: dict[str, Any] = {"hits": [_hit(h) for h in hits]}
            if format == "card":
                out["card"] = cards(hits, budget=budget)
            return out

        return await service.call(ctx, verb)

    @server.tool(annotations=WRITE)
    async def remember(
        ctx: Context,
        text: str,
        type: str | None = None,
        importance: float | None = None,
        tags: list[str] | None = None,
        key: str | None = None,
        global_scope: bool = False,
    ) -> dict[str, Any]:
        """Store one memory: a single self-contained fact, decision, preference or procedure worth knowing in a
        later session. Call it when the user asks you to remember something, or states something durable.

        It goes to this project, or with `global_scope` to what is true in every project. `type`: semantic
        (default), procedural, episodic or working; `importance` 0 to 1 (0.5 default, 0.8+ is high). `key` keeps
        it as the value of a named fact (like `set`). A near-copy of an existing memory is merged into it.
        Returns `action` (created, merged, duplicate; for a key: created, updated, unchanged), the memory's `id`,
        `superseded` (ids of older memories it replaces) and `redacted` (kinds of secrets removed from the text).
        """

        def verb(engram: Engram) -> dict[str, Any]:
            fields: dict[str, Any] = {"type": type, "importance": importance, "tags": tags or [], "key": key}
            result = engram.add(text, global_scope=global_scope, source={"kind": "mcp"}, **fields)
            return {
                "action": result.action,
                "id": result.id,
                "scope": engram.scope.of(result.memory.namespace),
                "superseded": list(result.superseded),
                "redacted": list(result.redacted),
                "content": result.memory.content,
            }

        return await service.call(ctx, verb)

    @server.tool(annotations=READ)
    async def get(ctx: Context, key: str) -> dict[str, Any]:
        """The value of the keyed fact `key` (an exact lookup, set with `set` or `remember` with a key): this
        project's, else the global one. Returns key, value, scope and the id of the memory that holds it; an
        error result when no such key exists."""
        return await service.call(ctx, lambda engram: to_json(engram.lookup(key, cwd=service.where)))

    @server.tool(annotations=WRITE_IDEMPOTENT)
    async def set(ctx: Context, key: str, value: str, global_scope: bool = False) -> dict[str, Any]:
        """Give the keyed fact `key` the value `value` (in this project, or with `global_scope` in every project).
        An existing value is replaced in place and kept in the memory's history. Use it for facts that have one
        current value: a version, a command, a person's role. Returns `action` (created, updated, unchanged),
        the memory's id and the `previous` value when it changed."""

        def verb(engram: Engram) -> dict[str, Any]:
            result = engram.set(key, value, namespace="global" if global_scope else None, cwd=service.where)
            return {"action": result.action, "id": result.id, "previous": result.previous, "key": key}

        return await service.call(ctx, verb)

    @server.tool(annotations=WRITE_IDEMPOTENT)
    async def edit(
        ctx: Context,
        id: str,
        text: str | None = None,
        importance: float | None = None,
        type: str | None = None,
        tags: list[str] | None = None,
        untag: list[str] | None = None,
    ) -> dict[str, Any]:
        """Correct one memory in place (by id or unique id prefix, as `recall` returned it): its text,
        importance, type, or add `tags` / remove `untag`. Its id and history stay. Use it when a memory is
        wrong or out of date. Returns the memory as it is now and `changed`, the fields that changed."""

        def verb(engram: Engram) -> dict[str, Any]:
            result = engram.edit(id, text=text, importance=importance, type=type, tags=tags or [], untag=untag or [])
            return dict(to_json(result))

        return await service.call(ctx, verb)

    @server.tool(annotations=REMOVE)
    async def forget(ctx: Context, ids: list[str], hard: bool = False) -> dict[str, Any]:
        """Archive memories (by id or unique prefix) so recall no longer finds them; they stay inspectable and
        can come back. Only with `hard` true, and only when the user explicitly asks to erase them, are they
        purged for good with every copy of their text. Returns each id with its action (archived, purged,
        unchanged)."""
        return await service.call(ctx, lambda engram: {"forgotten": to_json(engram.forget(ids, hard=hard))})

    @server.tool(annotations=READ)
    async def inspect(ctx: Context, id: str) -> dict[str, Any]:
        """Everything about one memory (by id or unique prefix): its fields, tags, sources, history of events
        and the parts of its score that do not depend on a query. Use it to see why a memory says what it
        says, or what it replaced."""
        return await service.call(ctx, lambda engram: dict(to_json(engram.inspect(id))))

    @server.tool(annotations=READ)
    async def recent(ctx: Context, limit: int = 10) -> dict[str, Any]:
        """What was learned lately: the newest memories of this project and the global scope, newest first,
        each with id, content, scope, type, key and when it was created. Use it to catch up at the start of
        work, or to check what an earlier session stored."""

        def verb(engram: Engram) -> dict[str, Any]:
            memories = engram.list(limit=limit, filters=engram.filters(with_global=True))
            return {"memories": [_recent_entry(m, engram) for m in memories]}

        return await service.call(ctx, verb)

    @server.resource(
        CARD_URI,
        name="session-card",
        title="engram: what this project remembers",
        description="The project's and the global scope's strongest memories (importance x decay x recency, no "
        "query) as one text block for the start of a session: what the SessionStart hook shows.",
        mime_type="text/markdown",
    )
    async def card() -> str:
        # A resource read carries no client context to ask for roots with: it uses the place the first
        # tool call settled, else the server's working directory.
        def verb(engram: Engram) -> str:
            return cards(engram.card(CONTEXT_K), budget=CONTEXT_BUDGET)

        try:
            text = await anyio.to_thread.run_sync(functools.partial(service.run, verb))
        except ToolError as exc:
            raise ResourceError(str(exc)) from exc
        return text or "Nothing remembered yet for this project or the global scope."

    return server


def serve(db: str | None = None, cwd: Path | None = None) -> None:
    """Serve over stdio until the client closes the connection."""
    service = Service(lambda where: Engram.open(db, cwd=where), cwd or Path.cwd())
    try:
        build(service).run("stdio")
    finally:
        service.close()
