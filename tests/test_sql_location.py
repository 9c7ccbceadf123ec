"""SQL lives in engram_cli/store/: the engine calls the repositories' typed methods, never a statement.

The rule is written down in README.md (Development: which modules may hold SQL).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import engram_cli

PACKAGE = Path(engram_cli.__file__).parent

# Outside store/, only modules that read another tool's own SQLite file may hold SQL: those
# statements are about that tool's schema, which engram's store knows nothing of.
ALLOWED: dict[str, str] = {
    "store/": "the repositories: the one place engram's own tables are read and written",
    "ingest/cursor.py": "reads Cursor's own state.vscdb (ItemTable, cursorDiskKV), never engram's database",
    "ingest/opencode.py": "reads OpenCode's own opencode.db (session, message, part), never engram's database",
}

# Upper-case SQL as engram writes it. Docstrings are not code and are skipped; comments are not in the AST.
SQL = re.compile(
    r"\bSELECT\s|\bINSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\b|\bUPDATE\s+(?:OR\s+[A-Z]+\s+)?\S+\s+SET\b|\bDELETE\s+FROM\b"
    r"|\bPRAGMA\s|\bCREATE\s+(?:VIRTUAL\s+|UNIQUE\s+)?(?:TABLE|INDEX)\b|\b(?:DROP|ALTER)\s+TABLE\b"
    # Transaction statements are whole strings; anywhere else the words are prose or a PEM header (-----BEGIN).
    r"|^\s*(?:BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE)\b"
)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string literal but docstrings; an f-string's parts joined around its fields."""
    skip = _docstrings(tree)
    inside_fstrings: set[int] = set()
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                inside_fstrings.add(id(value))
                parts.append(value.value if isinstance(value, ast.Constant) else "{…}")
            out.append((node.lineno, "".join(str(p) for p in parts)))
    for node in ast.walk(tree):
        is_text = isinstance(node, ast.Constant) and isinstance(node.value, str)
        if is_text and id(node) not in skip and id(node) not in inside_fstrings:
            out.append((node.lineno, node.value))
    return out


def sql_outside_the_store() -> list[str]:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if any(name == allowed or (allowed.endswith("/") and name.startswith(allowed)) for allowed in ALLOWED):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line, text in _strings(tree):
            if SQL.search(text):
                found.append(f"engram_cli/{name}:{line}: {' '.join(text.split())[:100]}")
    return found


def test_sql_statements_live_only_in_the_store() -> None:
    found = sql_outside_the_store()
    assert not found, (
        "SQL outside engram_cli/store/; add a typed method to a repository there (store.memories, "
        "store.sources, store.events, store.keywords, store.vectors, store.maintenance) and call it:\n"
        + "\n".join(found)
    )


def test_the_check_finds_sql_in_every_form_it_is_written(tmp_path: Path) -> None:
    source = '''
"""A docstring may say SELECT x FROM t: it is not code."""
def f(store, table, pk):
    # a comment may say DELETE FROM t
    store.rows("SELECT pk FROM memories WHERE id = ?", ("x",))
    store.execute(f"DELETE FROM {table} WHERE rowid = ?", (pk,))
    store.execute(
        "UPDATE OR REPLACE settings "
        "SET value = ? WHERE key = ?", (1, 2)
    )
    store.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.execute("BEGIN IMMEDIATE")
    store.execute(f"ROLLBACK TO {name}")
    pem = "-----BEGIN PRIVATE KEY-----"
    return "select the memories you want; an update set is fine in prose, and so is COMMIT"
'''
    tree = ast.parse(source)
    hits = sorted(text for _, text in _strings(tree) if SQL.search(text))
    assert hits == [
        "BEGIN IMMEDIATE",
        "DELETE FROM {…} WHERE rowid = ?",
        "PRAGMA wal_checkpoint(TRUNCATE)",
        "ROLLBACK TO {…}",
        "SELECT pk FROM memories WHERE id = ?",
        "UPDATE OR REPLACE settings SET value = ? WHERE key = ?",
    ]


def test_every_allowed_module_exists_and_holds_sql() -> None:
    # An entry that no longer needs its exemption must go, or the list stops saying anything.
    for allowed in ALLOWED:
        paths = sorted((PACKAGE / allowed).rglob("*.py")) if allowed.endswith("/") else [PACKAGE / allowed]
        assert paths and all(p.is_file() for p in paths), allowed
        texts = [text for p in paths for _, text in _strings(ast.parse(p.read_text(encoding="utf-8")))]
        assert any(SQL.search(text) for text in texts), f"{allowed} holds no SQL: remove it from ALLOWED"
