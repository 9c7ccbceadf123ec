"""Keyed facts: a memory found by a stable identity (`user:tz`, `deploy:geo-tiles`) rather than by search.

One active memory per namespace and key holds the key's value as its text; `engram set` updates it in
place (remember.Writer), so the store never keeps two competing answers. This module is what needs no
model: checking keys, the exact lookup `engram get` makes, listing and unsetting. It imports neither
numpy nor the embedder, so `engram get` starts as fast as the store opens.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from engram_cli.errors import InvalidInput, NotFound
from engram_cli.memory.model import Memory
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now

KEY_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.:/-]*")
MAX_KEY_CHARS = 200
# The namespace of keyed memories' ids (uuid5 of namespace and key): the same fact set on two machines
# gets the same id, so exchanging exports updates one memory instead of leaving two that disagree.
_ID_SPACE = uuid.UUID("6f1d3c2a-5b8e-4f0a-9c7d-2e4b6a8c0d1f")

# namespace -> "project", "global" or "other": how a result names the scope it was found in.
ScopeOf = Callable[[str], str]


def normalize_key(value: Any) -> str:
    """A key as stored: trimmed and lower-cased; letters, digits and ``_ . : / -``, starting with a letter or digit."""
    if not isinstance(value, str):
        raise InvalidInput(f"a key must be text, not {type(value).__name__}", hint="for example user:tz")
    key = value.strip().lower()
    if not key:
        raise InvalidInput("the key is empty", hint="name the fact, e.g. engram set user:tz Europe/Berlin")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInput(f"the key {key[:40]!r}… is {len(key)} characters long (limit {MAX_KEY_CHARS})")
    if not KEY_PATTERN.fullmatch(key):
        raise InvalidInput(
            f"{value.strip()!r} is not a key",
            hint="a key is lower-case letters, digits and _ . : / - (starting with a letter or digit), "
            "e.g. user:tz or deploy:geo-tiles",
        )
    return key


def derived_id(namespace: str, key: str) -> str:
    """The id a keyed memory of ``namespace`` gets when it is first set (unless that id is taken)."""
    return str(uuid.uuid5(_ID_SPACE, f"{namespace}\x00{key}"))


@dataclass
class KeyValue:
    """`engram get`: the value of a key, and where it was found."""

    # The JSON form: the value and where it was found, then which memory holds it.
    json_keys: ClassVar[tuple[str, ...]] = ("key", "value", "namespace", "scope", "id", "type", "version", "updated_at")

    key: str
    namespace: str
    scope: str
    memory: Memory

    @property
    def value(self) -> str:
        return self.memory.content

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def type(self) -> str:
        return self.memory.type

    @property
    def version(self) -> int:
        return self.memory.version

    @property
    def updated_at(self) -> str:
        return self.memory.updated_at


@dataclass
class KeyEntry:
    """One line of `engram keys`."""

    key: str
    value: str
    namespace: str
    scope: str
    # A key of the project that is also set globally hides the global value from `get`.
    shadowed: bool
    id: str
    type: str
    updated_at: str


@dataclass
class KeyListing:
    """`engram keys`: the active keys in the scopes searched, by key (the project's before the global one)."""

    entries: list[KeyEntry]

    def json_form(self, **options: Any) -> Any:
        from engram_cli.serialize import to_json

        return to_json(self.entries, **options)


@dataclass
class KeyUnset:
    """`engram unset`: the key, where it was, and the memory that was archived."""

    key: str
    namespace: str
    scope: str
    id: str
    action: str  # "archived"


def lookup(store: Store, key: str, namespaces: Sequence[str]) -> Memory | None:
    """The active memory holding ``key`` in the first of ``namespaces`` that has one."""
    key = normalize_key(key)
    with store.read():
        for namespace in namespaces:
            pk = store.memories.keyed(namespace, key)
            if pk is not None:
                return store.memories.load(pk)
    return None


def _missing(key: str, namespaces: Sequence[str]) -> NotFound:
    where = " or ".join(f"'{n}'" for n in namespaces)
    return NotFound(
        f"no value for key '{key}' in namespace {where}",
        hint=f"`engram set {key} VALUE` sets it (-g for every project); `engram keys` lists the keys",
    )


def get(store: Store, key: str, namespaces: Sequence[str], scope_of: ScopeOf, *, touch: bool = True) -> KeyValue:
    """The value of ``key`` in the first of ``namespaces`` that has it; NotFound when none does.

    ``touch`` counts the lookup as an access (access +1, decay back to 1.0), as a recall hit is counted:
    a fact that is read every day must not fade out.
    """
    key = normalize_key(key)
    memory = lookup(store, key, namespaces)
    if memory is None:
        raise _missing(key, namespaces)
    if touch and store.read_only is None:
        at = iso_now()
        with store.write():
            store.memories.record_access([memory.pk], at)
        memory.access_count += 1
        memory.last_access_at = at
        memory.decay_score = 1.0
    return KeyValue(key, memory.namespace, scope_of(memory.namespace), memory)


def listing(store: Store, prefix: str, namespaces: Sequence[str] | None, scope_of: ScopeOf) -> KeyListing:
    """The active keys starting with ``prefix`` in ``namespaces`` (every namespace when None).

    Within one key, the namespaces come in the order given, and every one after the first is
    shadowed: `get` would not return it.
    """
    prefix = prefix.strip().lower()
    with store.read():
        rows = store.memories.keyed_rows(None if namespaces is None else list(namespaces), prefix)
        found = store.memories.load_many([pk for pk, _, _ in rows])
    order = {n: i for i, n in enumerate(namespaces or [])}
    rows.sort(key=lambda r: (r[2], order.get(r[1], len(order)), r[1]))
    entries: list[KeyEntry] = []
    for pk, namespace, key in rows:
        memory = found.get(pk)
        if memory is None:
            continue
        shadowed = namespaces is not None and bool(entries) and entries[-1].key == key
        entry = KeyEntry(
            key, memory.content, namespace, scope_of(namespace), shadowed, memory.id, memory.type, memory.updated_at
        )
        entries.append(entry)
    return KeyListing(entries)


def unset(store: Store, key: str, namespaces: Sequence[str], scope_of: ScopeOf, *, actor: str = "user") -> KeyUnset:
    """Archive the memory that `get` would return for ``key``: out of recall and lookups, its history kept."""
    key = normalize_key(key)
    with store.write():
        memory = lookup(store, key, namespaces)
        if memory is None:
            raise _missing(key, namespaces)
        at = iso_now()
        store.memories.set_status(memory, "archived", at)
        store.events.add(
            memory.id, "archived", at,
            before={"status": "active"}, after={"status": "archived"}, note=f"unset {key}", actor=actor,
        )  # fmt: skip
    return KeyUnset(key, memory.namespace, scope_of(memory.namespace), memory.id, "archived")
