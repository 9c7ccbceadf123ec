"""A lower floor never imports a higher one: no import circle, and ingest never reaches for the facade."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "engram_cli"
MCP_FRONT_END = "engram_cli.mcp_server"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the engram_cli modules it imports anywhere: at the top, in a function, under TYPE_CHECKING."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    circles: list[list[str]] = []
    state: dict[str, str] = {}
    trail: list[str] = []

    def visit(module: str) -> None:
        state[module] = "open"
        trail.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                circles.append([*trail[trail.index(target) :], target])
            elif target not in state:
                visit(target)
        trail.pop()
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module)
    return circles


def test_no_module_imports_itself_round_a_circle() -> None:
    graph = _imports(_modules())
    assert "engram_cli.ingest.loader" in graph and graph["engram_cli.api"]  # the walk found the package
    assert _circles(graph) == []


def test_the_circle_finder_finds_one() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]


def test_ingest_works_through_its_port_and_never_imports_the_facade_or_the_cli() -> None:
    graph = _imports(_modules())
    higher = {"engram_cli.api", "engram_cli"} | {
        m for m in graph if m.startswith(("engram_cli.cli", "engram_cli.render"))
    }
    for module, targets in graph.items():
        if module.startswith("engram_cli.ingest"):
            assert not targets & higher, (module, targets & higher)


def _imported_names(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_nothing_below_the_cli_imports_the_cli_render_or_typer() -> None:
    """The engine and the facade are a library: no command-line parsing, no printing."""
    upper = ("engram_cli.cli", "engram_cli.render")
    offenders: dict[str, list[str]] = {}
    for module, path in _modules().items():
        # The console entry points run the CLI.
        if module.startswith(upper) or module in ("engram_cli.__main__", "engram_cli.launch"):
            continue
        if module == MCP_FRONT_END:  # a front end beside the CLI: it may format a card, never parse a command line
            upper_here: tuple[str, ...] = ("engram_cli.cli",)
            bad = sorted(n for n in _imported_names(path) if n.split(".")[0] == "typer" or n.startswith(upper_here))
            if bad:
                offenders[module] = bad
            continue
        bad = sorted(n for n in _imported_names(path) if n == "typer" or n.startswith("typer.") or n.startswith(upper))
        if bad:
            offenders[module] = bad
    assert offenders == {}


def test_the_layer_check_sees_an_offender(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text("import typer\nfrom engram_cli.render import console\n", encoding="utf-8")
    assert _imported_names(module) >= {"typer", "engram_cli.render", "engram_cli.render.console"}
