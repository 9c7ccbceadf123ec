"""set, get, unset, keys: facts kept under a stable key (`user:tz`, `deploy:geo-tiles`)."""

from __future__ import annotations

from typing import Annotated

import typer

from engram_cli.cli.common import JsonOpt, app_context, read_stdin, show
from engram_cli.errors import UsageError

KeyArg = Annotated[str, typer.Argument(metavar="KEY", help="The key: lower-case letters, digits and _ . : / -.")]
KeyNamespaceOpt = Annotated[
    str | None, typer.Option("--namespace", "-n", help="This namespace only (default: the project, then global).")
]
GlobalOpt = Annotated[bool, typer.Option("--global", "-g", help="The global scope: facts about you, in every project.")]


def _namespace(namespace: str | None, global_: bool) -> str | None:
    if namespace is not None and global_:
        raise UsageError("--namespace and --global exclude each other")
    return "global" if global_ else namespace


def set_(
    ctx: typer.Context,
    key: KeyArg,
    value: Annotated[str, typer.Argument(metavar="VALUE", help="The value, or - to read it from standard input.")],
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Namespace (default: the project, else global).")
    ] = None,
    global_: GlobalOpt = False,
    mtype: Annotated[
        str | None, typer.Option("--type", help="semantic (default), procedural (a task's steps), working, episodic.")
    ] = None,
    importance: Annotated[
        float | None, typer.Option("--importance", "-i", help="0 to 1 (default for a new key: 0.8).")
    ] = None,
    tag: Annotated[list[str] | None, typer.Option("--tag", "-t", help="Tag (repeatable).")] = None,
    keep_secrets: Annotated[
        bool, typer.Option("--keep-secrets", help="Store the value as given, secrets included (default: redact them).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Set KEY to VALUE: the memory holding KEY is updated in place, its old value kept in its history."""
    content = read_stdin() if value == "-" else value
    result = app_context(ctx).engram().set(
        key, content, namespace=_namespace(namespace, global_), keep_secrets=keep_secrets,
        type=mtype, importance=importance, tags=tag or [], source={"kind": "cli"},
    )  # fmt: skip
    show(ctx, result, json=as_json)


def get(
    ctx: typer.Context,
    key: KeyArg,
    namespace: KeyNamespaceOpt = None,
    global_: GlobalOpt = False,
    no_touch: Annotated[bool, typer.Option("--no-touch", help="Do not count this as an access.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Print the value of KEY: the project's, else the global one. An exact lookup; no model is loaded."""
    from engram_cli.api.lookup import get_key

    state = app_context(ctx)
    found = get_key(
        key, namespace=_namespace(namespace, global_), paths=state.paths, config=state.config, touch=not no_touch
    )
    show(ctx, found, json=as_json)


def unset(
    ctx: typer.Context,
    key: KeyArg,
    namespace: KeyNamespaceOpt = None,
    global_: GlobalOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Archive the memory holding KEY (the one `engram get KEY` prints); `engram set` brings it back."""
    show(ctx, app_context(ctx).engram().unset(key, namespace=_namespace(namespace, global_)), json=as_json)


def keys(
    ctx: typer.Context,
    prefix: Annotated[str, typer.Argument(metavar="[PREFIX]", help="Only keys starting with this.")] = "",
    namespace: KeyNamespaceOpt = None,
    global_: GlobalOpt = False,
    all_namespaces: Annotated[bool, typer.Option("--all-namespaces", "-A", help="Every namespace.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """List the keys and their values: the project's and the global ones (a project key shadows a global one)."""
    chosen = _namespace(namespace, global_)
    if chosen is not None and all_namespaces:
        raise UsageError("--all-namespaces excludes --namespace and --global")
    listing = app_context(ctx).engram().keys(prefix, namespace=chosen, all_namespaces=all_namespaces)
    show(ctx, listing, json=as_json)


def register(app: typer.Typer) -> None:
    app.command(name="set")(set_)
    app.command()(get)
    app.command()(unset)
    app.command()(keys)
