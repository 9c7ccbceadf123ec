"""edit: change a memory's text, importance, type, tags or namespace in place, keeping its id and history.

The change is one transaction and one ``edited`` event holding the values before and after. New text
is embedded again (before the transaction: the model is slow) and indexed again. An edit never
merges: text that another memory of the target namespace and agent already says word for word is
refused, as is a move that would give a namespace a second active memory for one key.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engram_cli.errors import ConflictError, InvalidInput, UsageError
from engram_cli.lang import redact as redactmod
from engram_cli.lang import text as textmod
from engram_cli.memory import records, remember
from engram_cli.memory.model import MEMORY_TYPES, Memory, normalize_namespace, passage_text
from engram_cli.serialize import to_json
from engram_cli.store.db import Store
from engram_cli.timeutil import iso_now

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

# passage -> (model id, vector): the active model's embedder, called only when the text changes.
Embed = Callable[[str], "tuple[str, np.ndarray]"]


@dataclass
class EditResult:
    """What `edit` did: the memory as it is now, and the fields that changed (none: it already was so)."""

    memory: Memory
    changed: list[str] = field(default_factory=list)
    redacted: list[str] = field(default_factory=list)  # kinds of secrets replaced in the new text or tags

    def json_form(self, **options: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"changed": list(self.changed), "redacted": list(self.redacted)}
        out.update(to_json(self.memory, **options))
        return out


@dataclass
class Edit:
    """The requested change, validated; None leaves a field as it is."""

    text: str | None = None
    importance: float | None = None
    type: str | None = None
    tag: list[str] = field(default_factory=list)
    untag: list[str] = field(default_factory=list)
    namespace: str | None = None
    redacted: list[str] = field(default_factory=list)

    def changes(self, memory: Memory) -> dict[str, Any]:
        """The fields of ``memory`` this edit changes, with their new values."""
        out: dict[str, Any] = {}
        if self.text is not None and self.text != memory.content:
            out["content"] = self.text
        if self.importance is not None and self.importance != memory.importance:
            out["importance"] = self.importance
        if self.type is not None and self.type != memory.type:
            out["type"] = self.type
        tags = sorted((set(memory.tags) | set(self.tag)) - set(self.untag))
        if tags != sorted(memory.tags):
            out["tags"] = tags
        if self.namespace is not None and self.namespace != memory.namespace:
            out["namespace"] = self.namespace
        return out


def prepare(
    *,
    text: str | None = None,
    importance: float | None = None,
    type: str | None = None,
    tag: Sequence[str] = (),
    untag: Sequence[str] = (),
    namespace: str | None = None,
    keep_secrets: bool = False,
    contact: bool = False,
) -> Edit:
    """Validate an edit's values the way `add` validates a new memory's (secrets redacted unless ``keep_secrets``)."""
    if text is None and importance is None and type is None and not tag and not untag and namespace is None:
        raise UsageError(
            "nothing to edit",
            hint="say what changes: --text, --importance, --type, --tag, --untag, --namespace or --global",
        )
    edit = Edit()
    if text is not None:
        edit.text = remember.check_content(textmod.clean(text))
    if importance is not None:
        edit.importance = remember.check_importance(importance)
    if type is not None:
        if type not in MEMORY_TYPES:
            raise InvalidInput(f"unknown memory type {type!r}", hint=f"use one of: {', '.join(MEMORY_TYPES)}")
        edit.type = type
    edit.tag = remember.normalize_tags(list(tag))
    edit.untag = remember.normalize_tags(list(untag))
    both = set(edit.tag) & set(edit.untag)
    if both:
        raise UsageError(f"tag {sorted(both)[0]!r} is both added and removed", hint="give it to --tag or --untag")
    if namespace is not None:
        edit.namespace = normalize_namespace(namespace)
    if not keep_secrets:
        kinds: list[str] = []
        if edit.text is not None:
            edit.text, found = redactmod.redact(edit.text, contact=contact)
            kinds.extend(f.kind for f in found)
        if edit.tag:
            cleaned = []
            for value in edit.tag:
                clean, found = redactmod.redact(value, contact=contact)
                cleaned.append(clean)
                kinds.extend(f.kind for f in found)
            edit.tag = remember.normalize_tags(cleaned)
        edit.redacted = kinds
    return edit


def _check(store: Store, memory: Memory, changes: dict[str, Any]) -> None:
    """Refuse an edit that would make an exact duplicate, or give a namespace a key twice."""
    namespace = changes.get("namespace", memory.namespace)
    if memory.key is None and ("content" in changes or "namespace" in changes):
        content_hash = textmod.content_hash(changes.get("content", memory.content))
        twin = store.memories.duplicate_of(namespace, memory.agent, content_hash, other_than=memory.pk)
        if twin is not None:
            other = store.memories.load(twin, with_sources=False)
            raise InvalidInput(
                f"memory {other.short_id} in namespace '{namespace}' already says exactly this",
                hint=f"edit or forget one of them (`engram inspect {other.short_id}`); an edit never merges",
            )
    if memory.key is not None and "namespace" in changes and memory.status == "active":
        holder = store.memories.keyed(namespace, memory.key)
        if holder is not None and holder != memory.pk:
            other = store.memories.load(holder, with_sources=False)
            raise InvalidInput(
                f"namespace '{namespace}' already has key '{memory.key}' (memory {other.short_id})",
                hint=f"`engram unset {memory.key} -n {namespace}` first, or change its value with `engram set`",
            )


def edit(
    store: Store,
    ref: str,
    change: Edit,
    *,
    embed: Embed,
    expected_version: int | None = None,
    actor: str = "user",
) -> EditResult:
    """Apply ``change`` to the memory ``ref`` names (id or unique prefix).

    ``expected_version``: the version the caller read; a memory changed since is not edited
    (ConflictError). Without it, a change made meanwhile by another writer is read again and the
    edit retried.
    """
    for attempt in range(remember.MAX_RETRIES):
        with store.read():
            pk = records.resolve_pk(store, ref)
            memory = store.memories.load(pk, with_sources=False)
        if expected_version is not None and memory.version != expected_version:
            raise ConflictError(
                f"memory {memory.short_id} is at version {memory.version}, not {expected_version}",
                hint=f"`engram inspect {memory.short_id}` shows what changed; edit again with the version you read",
            )
        changes = change.changes(memory)
        if not changes:
            return EditResult(memory, [], change.redacted)
        _check(store, memory, changes)
        vector = model_id = None
        if "content" in changes:
            model_id, vector = embed(passage_text(changes["content"], memory.metadata, memory.key))
        try:
            with store.write():
                current = store.memories.load(pk, with_sources=False)
                if current.version != memory.version:
                    raise ConflictError(f"memory {memory.short_id} was changed by another writer meanwhile")
                _check(store, current, changes)
                if "content" in changes:
                    # The sources that stood for "the current wording" keep the words they stood for.
                    store.sources.pin_wording(pk, current.content, replaced=True)
                remember.apply_changes(
                    store, current, changes, vector=vector, model_id=model_id or current.embedding_model or "",
                    at=iso_now(), actor=actor, note="edited",
                )  # fmt: skip
        except ConflictError:
            if expected_version is not None or attempt == remember.MAX_RETRIES - 1:
                raise
            log.info("edit conflict, retrying (%d)", attempt + 1)
            continue
        return EditResult(store.memories.load(pk), sorted(changes), change.redacted)
    raise AssertionError("unreachable")
