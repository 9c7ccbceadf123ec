"""models, doctor, config, mcp."""

from __future__ import annotations

from typing import Annotated

import typer

from engram_cli import config as configmod
from engram_cli.api import ConfigChange, ConfigListing, system
from engram_cli.cli.common import JsonOpt, app_context, show

config_app = typer.Typer(help="Show, locate, change or unset settings (config.toml).", no_args_is_help=True)


def models(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the bundled embedding models; * marks the active one."""
    state = app_context(ctx)
    # Without a database, the configured model is the one a new database would use.
    listing = state.engram().models() if state.paths.db.exists() else system.models(state.config.settings.model)
    show(ctx, listing, json=as_json)


def doctor_cmd(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Check that the database opens, sqlite-vec loads, models load and permissions are right."""
    report = system.doctor(app_context(ctx).paths)
    show(ctx, report, json=as_json)
    if report.failed:
        raise typer.Exit(1)


@config_app.command("show")
def config_show(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Print every setting, its value and where it came from (problems in config.toml go to stderr)."""
    cfg = app_context(ctx).config
    show(ctx, ConfigListing(cfg.flat(), cfg.origins, configmod.docs()), json=as_json)


@config_app.command("path")
def config_path(ctx: typer.Context) -> None:
    """Print the path of config.toml (it may not exist yet)."""
    show(ctx, app_context(ctx).paths.config_file)


@config_app.command("set")
def config_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Setting, e.g. recall.k")],
    value: Annotated[str, typer.Argument(help="New value; 'none' returns it to the default.")],
) -> None:
    """Change one setting in config.toml, keeping its comments and layout."""
    show(ctx, ConfigChange(key, configmod.set_value(app_context(ctx).paths, key, value)))


@config_app.command("unset")
def config_unset(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Setting to return to its default (or an unknown key to remove).")],
) -> None:
    """Remove one key from config.toml, keeping the rest of the file as it is."""
    show(ctx, ConfigChange(key, changed=configmod.unset_value(app_context(ctx).paths, key)))


def mcp(ctx: typer.Context) -> None:
    """Serve engram's tools (recall, remember, get, set, edit, forget, inspect, recent) to an assistant over
    MCP on stdio. Its project is the directory it starts in. `engram hooks install ASSISTANT --mcp` registers it
    for Claude Code, Codex and Gemini CLI; for other assistants, add it to their MCP settings by hand."""
    from engram_cli.mcp_server import serve

    serve(app_context(ctx).db)


def register(app: typer.Typer) -> None:
    app.command()(mcp)
    app.command()(models)
    app.command(name="doctor")(doctor_cmd)
    app.add_typer(config_app, name="config")
