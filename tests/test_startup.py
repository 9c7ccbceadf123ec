"""Start-up stays lean: each command imports what it uses, and the lazy command line looks exactly like the eager one.

The commands run as real processes (the console script's ``main()``) and report the modules they
imported when they exit. No timing is asserted here; scripts/bench_startup.py measures it.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer._coercion import build_runtime_param
from typer.testing import CliRunner

from engram_cli import render
from engram_cli.api import Engram
from engram_cli.cli import COMMANDS, app, registrations
from engram_cli.cli.coerce import PlainCoercion
from engram_cli.render import console

REPO = Path(__file__).resolve().parent.parent

# What no command that leaves the model alone may load: the model's runtime, numpy, pydantic (Typer's
# coercion of odd values), the sqlite-vec package (its extension is found without importing it).
HEAVY = ("numpy", "onnxruntime", "tokenizers", "pydantic", "sqlite_vec")
# Engine modules that reading a memory or a key never calls.
ENGINE = (
    "engram_cli.memory.recall",
    "engram_cli.memory.remember",
    "engram_cli.memory.compact",
    "engram_cli.memory.audit",
    "engram_cli.memory.repair",
    "engram_cli.memory.evaluation",
    "engram_cli.memory.transfer",
    "engram_cli.memory.recover",
    "engram_cli.memory.reembed",
    "engram_cli.memory.similarity",
    "engram_cli.memory.crosslingual",
    "engram_cli.lang.redact",
    "engram_cli.lang.timeexpr",
    "engram_cli.embed.onnx",
    "engram_cli.ingest",
    "engram_cli.integrations",
    "engram_cli.api.hooks",
)


def _run(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``engram ARGS`` as the console script runs it, and the modules it had imported when it exited."""
    probe = (
        "import atexit, json, pathlib, sys\n"
        "report = pathlib.Path(sys.argv[1])\n"
        "atexit.register(lambda: report.write_text(json.dumps(sorted(sys.modules)), encoding='utf-8'))\n"
        "from engram_cli.cli import main\n"
        "sys.argv = ['engram', *sys.argv[2:]]\n"
        "main()\n"
    )
    report = cwd / "modules.json"
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    done = subprocess.run(
        [sys.executable, "-c", probe, str(report), *args],
        capture_output=True, text=True, env=env, cwd=cwd, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done, set(json.loads(report.read_text(encoding="utf-8")))


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.fixture
def stored(engram_home: Path) -> str:
    with Engram.open() as mem:
        added = mem.add("Deploys of the tile server go through `make release`", tags=["ops"])
        mem.set("user:tz", "Europe/Berlin")
    return added.memory.id


def test_list_inspect_and_get_load_no_model_no_numpy_and_no_engine_they_do_not_call(
    stored: str, tmp_path: Path
) -> None:
    for args in (["list"], ["inspect", stored[:8]], ["get", "user:tz"], ["list", "--json", "-l", "5", "--tag", "ops"]):
        done, modules = _run(*args, cwd=tmp_path)
        assert done.stdout, args
        # Into a pipe, their tables and text need no rich either (render.console prints the same bytes).
        assert _loaded(modules, (*HEAVY, *ENGINE, "rich")) == [], args
    assert done.stdout.startswith("[")  # the last one: JSON, still without numpy


def test_help_loads_neither_the_store_nor_the_engine(tmp_path: Path) -> None:
    done, modules = _run("--help", cwd=tmp_path)
    assert "Usage: engram" in done.stdout
    store_and_engine = ("apsw", "engram_cli.store", "engram_cli.api.engram", "engram_cli.memory")
    assert _loaded(modules, HEAVY + store_and_engine) == []


def test_recall_loads_the_model_but_not_the_writing_or_maintenance_engine(stored: str, tmp_path: Path) -> None:
    done, modules = _run("recall", "how do we deploy tiles", "--no-touch", cwd=tmp_path)
    assert stored[:8] in done.stdout
    assert {"onnxruntime", "numpy", "engram_cli.memory.recall"} <= modules
    writing = (
        "pydantic",
        "engram_cli.memory.remember",
        "engram_cli.memory.compact",
        "engram_cli.memory.audit",
        "engram_cli.memory.repair",
        "engram_cli.lang.redact",
        "engram_cli.ingest",
        "engram_cli.integrations",
    )
    assert _loaded(modules, writing) == []


def test_a_command_that_embeds_nothing_loads_no_model(stored: str, tmp_path: Path) -> None:
    """`set` of the value a key already has writes no new vector: the tokenizer and the session stay unread."""
    done, modules = _run("set", "user:tz", "Europe/Berlin", cwd=tmp_path)
    assert "user:tz" in done.stdout + done.stderr
    assert _loaded(modules, ("onnxruntime", "tokenizers")) == []


# -- the lazy command line is the eager one ----------------------------------------------------


def _eager() -> typer.Typer:
    """The root app with every module's commands registered up front, as it was built before."""
    eager = copy.copy(app)
    eager.registered_commands = []
    eager.registered_groups = []
    for module in dict.fromkeys(COMMANDS.values()):
        holder = registrations(module)
        eager.registered_commands.extend(holder.registered_commands)
        eager.registered_groups.extend(holder.registered_groups)
    return eager


def _paths(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = []
    for name in group.list_commands(typer.Context(group)):
        found.append((*prefix, name))
        command = group.get_command(typer.Context(group), name)
        if hasattr(command, "commands"):
            found.extend(_paths(command, (*prefix, name)))
    return found


def test_the_command_table_lists_every_command_in_the_order_help_shows_them() -> None:
    eager = typer.main.get_command(_eager())
    assert list(COMMANDS) == eager.list_commands(typer.Context(eager))  # type: ignore[attr-defined]


def test_help_of_every_command_is_the_eager_apps_help(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    eager_app = _eager()
    lazy_paths = _paths(typer.main.get_command(app))
    assert lazy_paths == _paths(typer.main.get_command(eager_app))
    assert len(lazy_paths) > len(COMMANDS)  # the groups' subcommands too
    runner = CliRunner()
    for path in [(), *lazy_paths]:
        lazy = runner.invoke(app, [*path, "--help"])
        eager = runner.invoke(eager_app, [*path, "--help"])
        assert lazy.exit_code == eager.exit_code == 0, path
        assert lazy.output == eager.output, path


def test_every_renderer_named_for_a_result_type_exists() -> None:
    for human, remarks in render._SHOWN.values():
        for where in filter(None, (human, remarks)):
            assert callable(render.renderer(where)), where


# -- plain coercion gives what Typer's gives -------------------------------------------------------

SAMPLES: list[Any] = [
    None, "", "0", "1", "20", "-3", "+5", " 5", "007", "1_000", "1.5", "-0.25", ".5", "1e3", "nan", "abc",
    "table", "json", "JSON", "x" * 40, "9" * 30, 0, 7, -2, 2.5, True, False,
    ["a", "b"], ("a",), ("1", "2"), [], ("1", "x"),
]  # fmt: skip


def _outcome(coercion: Any, value: Any, param: Any, ctx: Any) -> tuple[str, Any]:
    try:
        result = coercion.coerce(value, param=param, ctx=ctx)
    except Exception as exc:
        return "error", (type(exc).__name__, str(exc))
    return "value", (type(result), repr(result))  # repr: nan is not equal to itself


def test_plain_coercion_gives_typers_value_or_typers_error_for_every_parameter() -> None:
    root = typer.main.get_command(app)
    commands = [root] + [root.get_command(typer.Context(root), name) for name in COMMANDS]  # type: ignore[attr-defined]
    checked = 0
    while commands:
        command = commands.pop()
        commands.extend(getattr(command, "commands", {}).values())
        ctx = typer.Context(command)
        for param in command.params:
            if not hasattr(param, "type_descriptor"):
                continue
            plain, typers = PlainCoercion(param), build_runtime_param(param.type_descriptor)
            for value in SAMPLES:
                assert _outcome(plain, value, param, ctx) == _outcome(typers, value, param, ctx), (
                    command.name,
                    param.name,
                    value,
                )
                checked += 1
    assert checked > 3000


# -- tables into a pipe without rich ----------------------------------------------------------------

_CELL = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E)
    | st.sampled_from("…—，。：；（）「」、！？")
    | st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
    | st.characters(min_codepoint=0x3041, max_codepoint=0x30FF)
    | st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3)
    | st.characters(min_codepoint=0xFF01, max_codepoint=0xFF60)
    | st.characters(min_codepoint=0x3001, max_codepoint=0x303E),
    max_size=30,
)


def _rich_table(headers: list[str], rows: list[list[str]]) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    buffer = StringIO()
    table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
    for i, column in enumerate(headers):
        table.add_column(column, no_wrap=i < len(headers) - 1)
    for row in rows:
        table.add_row(*row)
    Console(file=buffer, soft_wrap=False, width=console.PIPE_WIDTH, highlight=False).print(table)
    return buffer.getvalue()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    table=st.integers(1, 7).flatmap(
        lambda n: st.tuples(
            st.lists(_CELL, min_size=n, max_size=n), st.lists(st.lists(_CELL, min_size=n, max_size=n), max_size=5)
        )
    )
)
def test_a_plain_table_is_byte_for_byte_what_rich_prints_into_a_pipe(
    table: tuple[list[str], list[list[str]]], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    headers, rows = table
    capsys.readouterr()
    if console.plain_table(headers, rows):
        assert capsys.readouterr().out == _rich_table(headers, rows)
    else:
        assert capsys.readouterr().out == ""


def test_a_table_rich_would_change_is_left_to_rich(capsys: pytest.CaptureFixture[str]) -> None:
    for cell in ("[bold]x[/]", "a :smile: b", "tiles:a:b", "a :100: b", "é", "🙂", "tab\there", "x" * 250):
        assert not console.plain_table(["h"], [[cell]]), cell
    assert console.plain_table(["h", "k"], [["user:tz = Europe/Berlin", "at 12:30:00"]])
    assert capsys.readouterr().out == "h                        k          \nuser:tz = Europe/Berlin  at 12:30:00\n"


_WORDS = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E)
    | st.sampled_from("—…，。")
    | st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF),
    max_size=120,
)
_STYLED = st.tuples(st.sampled_from(["bold", "dim"]), _WORDS).map(lambda p: f"[{p[0]}]{console.escape(p[1])}[/]")
_MARKUP_LINE = st.lists(st.one_of(_WORDS.map(console.escape), _STYLED, st.sampled_from(["\n", "  "])), max_size=6).map(
    "".join
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_MARKUP_LINE, max_size=6), wrap=st.booleans())
def test_plain_lines_are_byte_for_byte_what_rich_prints_into_a_pipe(
    lines: list[str], wrap: bool, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from io import StringIO

    from rich.console import Console

    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    capsys.readouterr()
    printed = console.plain_lines(lines, wrap=wrap)
    got = capsys.readouterr().out
    buffer = StringIO()
    rich_console = Console(file=buffer, soft_wrap=False, width=console.PIPE_WIDTH, highlight=False)
    for line in lines:
        rich_console.print(line, soft_wrap=not wrap)
    assert got == (buffer.getvalue() if printed else "")


def test_lines_printed_whole_need_no_rich_however_long(capsys: pytest.CaptureFixture[str]) -> None:
    long = ["[bold]memory 1[/]", "deploy " * 60, "部署脚本在" * 50, "  [dim]      tags[/]  ops"]
    assert not console.plain_lines(long)  # wrapped at the pipe's width: rich decides where
    assert console.plain_lines(long, wrap=False)
    expected = ["memory 1", "deploy " * 60, "部署脚本在" * 50, "        tags  ops"]
    assert capsys.readouterr().out == "\n".join(expected) + "\n"


@given(text=st.text(alphabet=st.sampled_from("ab[]\\/#@: "), max_size=12))
def test_escape_is_riches_escape(text: str) -> None:
    from rich.markup import escape as rich_escape

    assert console.escape(text) == rich_escape(text)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    text=st.lists(_WORDS | st.sampled_from(["\n", "[bold]x[/]", ":smile:", "12:30:00", "…"]), max_size=5).map("".join)
)
def test_a_plain_note_is_what_rich_writes_into_a_piped_stderr(
    text: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from io import StringIO

    from rich.console import Console

    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    capsys.readouterr()
    written = console.plain_note(text)
    got = capsys.readouterr().err
    buffer = StringIO()
    Console(file=buffer, soft_wrap=False, width=console.PIPE_WIDTH, highlight=False).print(text, markup=False)
    assert got == (buffer.getvalue() if written else "")


def test_a_table_with_chinese_cells_is_printed_without_rich(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    rows = [["a1", "修复了登录页面的跨域问题…"], ["b2", "CORS — ok"]]
    assert console.plain_table(["id", "content"], rows)
    printed = capsys.readouterr().out
    assert printed == _rich_table(["id", "content"], rows)
    assert printed.splitlines()[1] == "a1  修复了登录页面的跨域问题…"  # 12 ideographs, two columns each
