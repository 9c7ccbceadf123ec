"""add, recall, inspect, list, edit, forget, namespaces."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer

from engram_cli.api import Forgotten, Recalled
from engram_cli.cli.common import JsonOpt, app_context, read_stdin, show
from engram_cli.errors import UsageError

NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        help="Namespace (default: this git repository's project, else 'global'; `engram namespaces` lists them).",
    ),
]
GlobalOpt = Annotated[
    bool, typer.Option("--global", "-g", help="The global scope: what is true of you in every project.")
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
    mtype: Annotated[
        str | None, typer.Option("--type", help="working, episodic, semantic (default) or procedural.")
    ] = None,
    namespace: NamespaceOpt = None,
    global_scope: GlobalOpt = False,
    agent: Annotated[str | None, typer.Option("--agent", help="Who is remembering (default: config agent).")] = None,
    importance: Annotated[
        float | None,
        typer.Option("--importance", "-i", help="0 to 1; 0.8 and above is high (default 0.5; 0.8 with --key)."),
    ] = None,
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
    key: Annotated[
        str | None,
        typer.Option(
            "--key", metavar="KEY", help="Keep it under KEY, like `engram set`: a new value replaces the old."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Remember TEXT (in this git project, or with -g for every project). Prints its id; says so when it merged."""
    content = read_stdin() if text == "-" else text
    fields: dict[str, Any] = {
        "type": mtype, "namespace": namespace, "agent": agent, "importance": importance, "tags": tag or [],
        "source": {"kind": "cli", "ref": source} if source else {"kind": "cli"}, "session": session,
        "created_at": at, "metadata": _meta(meta), "supersedes": supersedes, "key": key,
    }  # fmt: skip
    engram = app_context(ctx).engram()
    result = engram.add(content, no_merge=no_merge, keep_secrets=keep_secrets, global_scope=global_scope, **fields)
    show(ctx, result, json=as_json)


def recall(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="What to remember, or - to read it from standard input.")],
    k: Annotated[int | None, typer.Option("-k", min=1, help="How many memories (default: config recall.k, 5).")] = None,
    namespace: NamespaceOpt = None,
    global_scope: GlobalOpt = False,
    no_global: Annotated[
        bool, typer.Option("--no-global", help="In a project, search the project alone (not the global scope).")
    ] = False,
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
    evidence: Annotated[
        bool | None,
        typer.Option(
            "--evidence/--no-evidence",
            help="--evidence: also up to k turns of ingested conversations after the memories; --no-evidence: none "
            "(default: config evidence.fill, turns fill the places relevant memories left).",
        ),
    ] = None,
) -> None:
    """Find the memories most relevant to QUERY (hybrid vector + keyword, weighed by importance and decay).

    In a git repository it searches that project and the global scope together; each hit says which.
    Each hit's relevance is the calibrated chance that it is relevant; hits under the floor are dropped,
    and when none is left, recall says "nothing relevant" and counts no access. Turns of ingested
    conversations (evidence) come after the memories, labelled as such and naming their session.
    """
    if query == "-":
        query = read_stdin()
    engram = app_context(ctx).engram()
    unbumped = engram.read_only and not no_touch and engram.settings.recall.bump
    hits = engram.recall(
        query, k=k, namespace=namespace, global_scope=global_scope, no_global=no_global,
        all_namespaces=all_namespaces, agent=agent, type=mtype, tags=tag,
        since=since, until=until, accessed_since=accessed_since, accessed_until=accessed_until, session=session,
        embedding_model=model, include_archived=include_archived, include_superseded=include_superseded,
        bump=False if no_touch else None, now=now, min_relevance=min_relevance, evidence=evidence,
    )  # fmt: skip
    recalled = Recalled(
        hits,
        read_only=engram.path if unbumped and hits else None,
        held_back=len(hits.below),
        floor=hits.floor,
        evidence=hits.evidence,
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
    global_scope: GlobalOpt = False,
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
    """List memories, newest first (by when they happened): this git project's, else the global scope's."""
    statuses = ["active", "superseded", "archived"] if all_statuses else status
    engram = app_context(ctx).engram()
    flt = engram.filters(
        namespace=namespace, all_namespaces=all_namespaces, global_scope=global_scope, agent=agent, type=mtype,
        tags=tag, since=since,
        until=until, accessed_since=accessed_since, accessed_until=accessed_until, session=session, status=statuses,
        include_archived=include_archived,
    )  # fmt: skip
    show(ctx, engram.page(flt, limit=limit, offset=offset), json=as_json)


def edit(
    ctx: typer.Context,
    memory_id: Annotated[str, typer.Argument(metavar="ID", help="Memory id or unique prefix.")],
    text: Annotated[
        str | None, typer.Option("--text", metavar="TEXT", help="New text (- reads it from standard input).")
    ] = None,
    importance: Annotated[float | None, typer.Option("--importance", "-i", help="New importance, 0 to 1.")] = None,
    mtype: Annotated[
        str | None, typer.Option("--type", help="New type: working, episodic, semantic or procedural.")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Add this tag (repeatable).")] = None,
    untag: Annotated[list[str] | None, typer.Option("--untag", help="Remove this tag (repeatable).")] = None,
    namespace: Annotated[str | None, typer.Option("--namespace", "-n", help="Move it to this namespace.")] = None,
    global_: Annotated[bool, typer.Option("--global", "-g", help="Move it to the global scope.")] = False,
    if_version: Annotated[
        int | None,
        typer.Option("--if-version", min=1, help="Edit only if the memory is still at this version (see inspect)."),
    ] = None,
    keep_secrets: Annotated[
        bool, typer.Option("--keep-secrets", help="Store the new text as given, secrets included.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Change a memory in place: text, importance, type, tags or namespace; its id and history stay."""
    if namespace is not None and global_:
        raise UsageError("--namespace and --global exclude each other")
    if text == "-":
        text = read_stdin()
    result = app_context(ctx).engram().edit(
        memory_id, text=text, importance=importance, type=mtype, tags=tag or [], untag=untag or [],
        namespace="global" if global_ else namespace, version=if_version, keep_secrets=keep_secrets,
    )  # fmt: skip
    show(ctx, result, json=as_json)


def forget(
    ctx: typer.Context,
    memory_ids: Annotated[list[str], typer.Argument(metavar="ID...", help="Memory ids or unique prefixes.")],
    hard: Annotated[
        bool, typer.Option("--hard", help="Purge the row, its vector, keyword and source rows (keeps a tombstone).")
    ] = False,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="The memories are in this namespace (not this project).")
    ] = None,
    global_scope: Annotated[bool, typer.Option("--global", "-g", help="The memories are in the global scope.")] = False,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="The memories may be in any namespace.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Archive memories (out of recall, still inspectable), or purge them with --hard.

    The memories must be in this git project or the global scope, unless -n or -A says otherwise.
    """
    engram = app_context(ctx).engram()
    results = engram.forget(
        memory_ids, hard=hard, namespace=namespace, global_scope=global_scope, all_namespaces=all_namespaces
    )
    show(ctx, Forgotten(results), json=as_json)


def namespaces(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the namespaces with their memories, and which are this directory's project and global scope."""
    show(ctx, app_context(ctx).engram().namespaces(), json=as_json)


def register(app: typer.Typer) -> None:
    app.command()(add)
    app.command()(recall)
    app.command()(inspect)
    app.command(name="list")(list_)
    app.command()(edit)
    app.command()(forget)
    app.command()(namespaces)
