"""The shape of the house around output: one renderer per result type, a CLI that talks only to the facade."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from engram_cli import render
from engram_cli.api import Recalled

CLI = Path(__file__).parent.parent / "engram_cli" / "cli"
# What a command module may import: the facade, the renderer, the settings and the errors (and its siblings),
# and the MCP server, the other front end, which `engram mcp` only starts.
ALLOWED = (
    "engram_cli.api",
    "engram_cli.render",
    "engram_cli.config",
    "engram_cli.errors",
    "engram_cli.cli",
    "engram_cli.mcp_server",
    "engram_cli.warm",  # like the MCP server, a transport: the per-prompt hook's warm service runs the CLI itself
)


def test_every_registered_result_type_exists() -> None:
    for name in render._SHOWN:
        module, _, qualname = name.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), qualname), type), name


def test_a_value_without_a_renderer_is_a_bug_said_plainly() -> None:
    with pytest.raises(TypeError, match=r"render has no way to show a builtins\.object"):
        render.result(object())


def test_options_reach_the_renderer_and_remarks_are_said_in_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    empty = Recalled([], read_only=Path("/data/engram.db"))
    render.result(empty, fmt="table")
    shown = capsys.readouterr()
    assert shown.out == ""
    assert shown.err == (
        "the database /data/engram.db is read-only: access counts are not updated\nno memories matched\n"
    )
    render.result(empty, json=True, fmt="table", explain=True)
    shown = capsys.readouterr()
    assert shown.out == "[]\n"
    assert shown.err == "the database /data/engram.db is read-only: access counts are not updated\n"


def _imports(path: Path) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module == "engram_cli":  # from engram_cli import render
            found.extend((node.lineno, f"engram_cli.{alias.name}") for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_the_cli_imports_only_the_facade_render_config_and_errors(path: Path) -> None:
    outside = [
        f"{path.name}:{line} imports {module}"
        for line, module in _imports(path)
        if module.split(".")[0] == "engram_cli" and not module.startswith(ALLOWED)
    ]
    assert outside == []


def test_the_cli_loads_without_numpy_or_sqlite() -> None:
    """`engram --help`, hooks and schedule stay fast: the store's dependencies load only when a store opens."""
    code = (
        "import sys, engram_cli.cli; "
        "print(sorted(m for m in ('numpy', 'apsw', 'onnxruntime', 'engram_cli.api.engram') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
