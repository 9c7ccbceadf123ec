"""models, doctor, config."""

from __future__ import annotations

from typing import Annotated

import typer

from engram_cli import config as configmod
from engram_cli import render
from engram_cli.cli.context import AppContext

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]

config_app = typer.Typer(help="Show, locate, change or unset settings (config.toml).", no_args_is_help=True)


def _app(ctx: typer.Context) -> AppContext:
    obj = ctx.find_root().obj
    assert isinstance(obj, AppContext)
    return obj


def models(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the bundled embedding models; * marks the active one."""
    from engram_cli import doctor

    app = _app(ctx)
    active = app.config.settings.model
    counts: dict[str, int] = {}
    if app.paths.db.exists():
        engram = app.engram()
        active = engram.active_model
        counts = engram.store.memories.count_by_model()
    render.models(doctor.model_rows(active, counts), as_json=as_json)


def doctor_cmd(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Check that the database opens, sqlite-vec loads, models load and permissions are right."""
    from engram_cli import doctor

    results = doctor.run(_app(ctx).paths)
    render.checks(results, as_json=as_json)
    if any(r["status"] == "fail" for r in results):
        raise typer.Exit(1)


@config_app.command("show")
def config_show(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Print every setting, its value and where it came from (problems in config.toml go to stderr)."""
    cfg = _app(ctx).config
    render.config_table(cfg.flat(), cfg.origins, {k: spec.doc for k, spec in configmod.KEYS.items()}, as_json=as_json)


@config_app.command("path")
def config_path(ctx: typer.Context) -> None:
    """Print the path of config.toml (it may not exist yet)."""
    render.out(str(_app(ctx).paths.config_file))


@config_app.command("set")
def config_set(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Setting, e.g. recall.k")],
    value: Annotated[str, typer.Argument(help="New value; 'none' returns it to the default.")],
) -> None:
    """Change one setting in config.toml, keeping its comments and layout."""
    stored = configmod.set_value(_app(ctx).paths, key, value)
    render.out(f"{key} = {'default' if stored is None else stored}")


@config_app.command("unset")
def config_unset(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="Setting to return to its default (or an unknown key to remove).")],
) -> None:
    """Remove one key from config.toml, keeping the rest of the file as it is."""
    removed = configmod.unset_value(_app(ctx).paths, key)
    render.config_unset(key, removed)


def register(app: typer.Typer) -> None:
    app.command()(models)
    app.command(name="doctor")(doctor_cmd)
    app.add_typer(config_app, name="config")
