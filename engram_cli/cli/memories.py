"""add, recall, inspect, list, forget."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from engram_cli.api import Forgotten, Recalled
from engram_cli.cli.common import JsonOpt, app_context, read_stdin, show
from engram_cli.errors import UsageError

NamespaceOpt = Annotated[
    str | None, typer.Option("--namespace", "-n", help="Namespace (default: $ENGRAM_NAMESPACE, config, 'default').")
]
AllNsOpt = Annotated[bool, typer.Option("--all-namespaces", "-A", help="Search every namespace.")]
AgentOpt = Annotated[str | None, typer.Option("--agent", help="Only memories of this agent.")]
TypeOpt = Annotated[
    list[str] | None, typer.Option("--type", help="Memory type: working, episodic, semantic, procedural (repeatable).")
]
TagOpt = Annotated[list[str] | None, typer.Option("--tag", "-t", help="Require this tag (repeatable: all must match).")]
SinceOpt = Annotated[str | None, typer.Option("--since", help="Created at or after (ISO 8601 or a span like 7d).")]
UntilOpt = Annotated[str | None, typer.Option("--until", help="Created at or before (ISO 8601 or a span like 7d).")]
AccessedSinceOpt = Annotated[
    str | None, typer.Option("--accessed-since", help="Last accessed at or after (ISO 8601 or a span like 30d).")
]
AccessedUntilOpt = Annotated[
    str | None, typer.Option("--accessed-until", help="Last accessed at or before (ISO 8601 or a span like 30d).")
]
SessionOpt = Annotated[str | None, typer.Option("--session", help="Only memories of this session id.")]
ArchivedOpt = Annotated[bool, typer.Option("--include-archived", help="Also archived memories.")]
SupersededOpt = Annotated[bool, typer.Option("--include-superseded", help="Also superseded memories.")]


class Format(StrEnum):
    table = "table"
    json = "json"
    card = "card"
    markdown = "markdown"


def _meta(pairs: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--meta takes KEY=VALUE, not {pair!r}")
        out[key.strip()] = value
    return out


def add(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The memory's text, or - to read it from standard input.")],
    mtype: Annotated[str, typer.Option("--type", help="working, episodic, semantic or procedural.")] = "semantic",
    namespace: NamespaceOpt = None,
    agent: Annotated[str | None, typer.Option("--agent", help="Who is remembering (default: config agent).")] = None,
    importance: Annotated[float, typer.Option("--importance", "-i", help="0 to 1; 0.8 and above is high.")] = 0.5,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Tag (repeatable).")] = None,
    source: Annotated[str | None, typer.Option("--source", help="Where it came from (a file, URL, command).")] = None,
    session: Annotated[str | None, typer.Option("--session", help="Session id it belongs to.")] = None,
    at: Annotated[str | None, typer.Option("--at", help="When it happened (ISO 8601); default now.")] = None,
    meta: Annotated[list[str] | None, typer.Option("--meta", help="KEY=VALUE metadata (repeatable).")] = None,
    no_merge: Annotated[bool, typer.Option("--no-merge", help="Never merge into a near-duplicate.")] = False,
    keep_secrets: Annotated[
        bool,
        typer.Option("--keep-secrets", help="Store the text as given, secrets included (default: redact them)."),
    ] = False,
    supersedes: Annotated[
        str | None, typer.Option("--supersedes", metavar="ID", help="This memory replaces memory ID.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember TEXT. Prints its id; says so when it merged into an existing memory."""
    content = read_stdin() if text == "-" else text
    fields: dict[str, Any] = {
        "type": mtype, "namespace": namespace, "agent": agent, "importance": importance, "tags": tag or [],
        "source": {"kind": "cli", "ref": source} if source else {"kind": "cli"}, "session": session,
        "created_at": at, "metadata": _meta(meta), "supersedes": supersedes,
    }  # fmt: skip
    result = app_context(ctx).engram().add(content, no_merge=no_merge, keep_secrets=keep_secrets, **fields)
    show(ctx, result, json=as_json)


def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to remember, or - to read it from standard input.")],
    k: Annotated[int | None, typer.Option("-k", min=1, help="How many memories (default: config recall.k, 5).")] = None,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNsOpt = False,
    agent: AgentOpt = None,
    mtype: TypeOpt = None,
    tag: TagOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    accessed_since: AccessedSinceOpt = None,
    accessed_until: AccessedUntilOpt = None,
    session: SessionOpt = None,
    model: Annotated[str | None, typer.Option("--model", help="Only memories embedded by this model id.")] = None,
    include_archived: ArchivedOpt = False,
    include_superseded: SupersededOpt = False,
    fmt: Annotated[Format, typer.Option("--format", "-f", help="table, json, card (prompt block) or markdown.")] = (
        Format.table
    ),
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    explain: Annotated[bool, typer.Option("--explain", help="Show every factor of every score.")] = False,
    budget: Annotated[
        int | None, typer.Option("--budget", min=1, help="For cards: stop before this many tokens.")
    ] = None,
    no_touch: Annotated[bool, typer.Option("--no-touch", help="Do not count this as an access.")] = False,
    now: Annotated[
        str | None, typer.Option("--now", help="Read time words in QUERY ('last week') as of this time (ISO 8601).")
    ] = None,
    min_relevance: Annotated[
        float | None,
        typer.Option(
            "--min-relevance",
            help="Drop hits less likely than this to be relevant, 0–1 (default: config recall.min_relevance; "
            "0 shows every hit).",
        ),
    ] = None,
) -> None:
    """Find the memories most relevant to QUERY (hybrid vector + keyword, weighed by importance and decay).

    Each hit's relevance is the calibrated chance that it is relevant; hits under the floor are dropped,
    and when none is left, recall says "nothing relevant" and counts no access.
    """
    if namespace and all_namespaces:
        raise UsageError("--namespace and --all-namespaces exclude each other")
    if query == "-":
        query = read_stdin()
    engram = app_context(ctx).engram()
    unbumped = engram.read_only and not no_touch and engram.settings.recall.bump
    hits = engram.recall(
        query, k=k, namespace=namespace, all_namespaces=all_namespaces, agent=agent, type=mtype, tags=tag,
        since=since, until=until, accessed_since=accessed_since, accessed_until=accessed_until, session=session,
        embedding_model=model, include_archived=include_archived, include_superseded=include_superseded,
        bump=False if no_touch else None, now=now, min_relevance=min_relevance,
    )  # fmt: skip
    recalled = Recalled(
        hits, read_only=engram.path if unbumped and hits else None, held_back=len(hits.below), floor=hits.floor
    )
    show(ctx, recalled, json=as_json or fmt == Format.json, fmt=fmt.value, explain=explain, budget=budget)


def inspect(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="Memory id or unique prefix.")],
    as_json: JsonOpt = False,
) -> None:
    """Everything about one memory: fields, tags, sources, history and score factors."""
    show(ctx, app_context(ctx).engram().inspect(memory_id), json=as_json)


def list_(
    ctx: typer.Context,
    limit: Annotated[int, typer.Option("--limit", "-l", min=1, help="How many.")] = 20,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip this many first.")] = 0,
    namespace: NamespaceOpt = None,
    all_namespaces: AllNsOpt = False,
    agent: AgentOpt = None,
    mtype: TypeOpt = None,
    tag: TagOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    accessed_since: AccessedSinceOpt = None,
    accessed_until: AccessedUntilOpt = None,
    session: SessionOpt = None,
    status: Annotated[
        list[str] | None, typer.Option("--status", help="active, superseded, archived (repeatable).")
    ] = None,
    include_archived: ArchivedOpt = False,
    all_statuses: Annotated[bool, typer.Option("--all", help="Every status.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List memories, newest first."""
    if namespace and all_namespaces:
        raise UsageError("--namespace and --all-namespaces exclude each other")
    statuses = ["active", "superseded", "archived"] if all_statuses else status
    engram = app_context(ctx).engram()
    flt = engram.filters(
        namespace=namespace, all_namespaces=all_namespaces, agent=agent, type=mtype, tags=tag, since=since,
        until=until, accessed_since=accessed_since, accessed_until=accessed_until, session=session, status=statuses,
        include_archived=include_archived,
    )  # fmt: skip
    show(ctx, engram.page(flt, limit=limit, offset=offset), json=as_json)


def forget(
    ctx: typer.Context,
    memory_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Memory ids or unique prefixes.")],
    hard: Annotated[
        bool, typer.Option("--hard", help="Purge the row, its vector, keyword and source rows (keeps a tombstone).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Archive memories (out of recall, still inspectable), or purge them with --hard."""
    show(ctx, Forgotten(app_context(ctx).engram().forget(memory_ids, hard=hard)), json=as_json)


def register(app: typer.Typer) -> None:
    app.command()(add)
    app.command()(recall)
    app.command()(inspect)
    app.command(name="list")(list_)
    app.command()(forget)
