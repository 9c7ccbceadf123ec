"""Namespaces as a person meets them: which exist, how full each is, and what a mistyped one was meant to be."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

from engram_cli.errors import UnknownNamespace
from engram_cli.project import GLOBAL_NAMESPACE, OLD_DEFAULT_NAMESPACE, Scope
from engram_cli.store.db import Store

# Close matches offered for a namespace that holds nothing.
SUGGESTIONS = 3


@dataclass
class NamespaceCount:
    """One namespace: its memories by status, and which scope it is seen from where the command ran."""

    namespace: str
    scope: str  # "project", "global" or "other"
    memories: int
    active: int
    superseded: int
    archived: int


def namespace_counts(store: Store, scope: Scope) -> list[NamespaceCount]:
    """Every namespace that holds a memory, by name; the scope's own namespaces are listed even while empty."""
    with store.read():
        counts = store.memories.namespaces()
    for name in scope.namespaces:
        counts.setdefault(name, {})
    return [
        NamespaceCount(
            namespace=name,
            scope=scope.of(name),
            memories=sum(by_status.values()),
            active=by_status.get("active", 0),
            superseded=by_status.get("superseded", 0),
            archived=by_status.get("archived", 0),
        )
        for name, by_status in sorted(counts.items())
    ]


def require_namespaces(store: Store, names: Sequence[str], *, exempt: Sequence[str] = ()) -> None:
    """Refuse a namespace that holds no memory (of any status): reading it could only find nothing.

    ``exempt`` are the namespaces that are fine empty (the current scope's). The error names the
    closest namespaces that do exist, so `-n webshopp` leads to webshop.
    """
    with store.read():
        missing = [n for n in names if n not in exempt and not store.memories.has_namespace(n)]
        if not missing:
            return
        known = list(store.memories.namespaces())
    name = missing[0]
    close = difflib.get_close_matches(name, known, n=SUGGESTIONS, cutoff=0.6)
    if not close:
        # Case and separators are what people get wrong most; difflib weighs them like any letter.
        folded = {k.casefold().replace("_", "-"): k for k in known}
        close = [folded[k] for k in difflib.get_close_matches(name.casefold().replace("_", "-"), list(folded))]
    listing = "`engram namespaces` lists them"
    if name == OLD_DEFAULT_NAMESPACE:
        hint = f"what was in {name!r} is in {GLOBAL_NAMESPACE!r} now: use -g (or -n {GLOBAL_NAMESPACE})"
    elif close:
        hint = f"did you mean: {', '.join(close)}? ({listing})"
    elif known:
        hint = f"{listing}; `engram add -n {name} …` starts this one"
    else:
        hint = f"the database holds no memories yet; `engram add -n {name} …` starts this namespace"
    raise UnknownNamespace(f"no memories in namespace {name!r}", hint=hint)
