"""ChatGPT's data export: ``conversations.json`` (Settings → Data controls → Export data), given with its path.

The file is a JSON list of conversations: ``{id | conversation_id, title, create_time, update_time,
mapping, current_node, default_model_slug?}`` with Unix times in seconds. ``mapping`` holds the
conversation as a tree of nodes ``{id, message | null, parent, children[]}``: editing a prompt or
regenerating an answer adds a sibling branch, and ``current_node`` is the leaf of the branch the
person last saw. That branch is the conversation: it is followed from ``current_node`` up to the
root and read top-down; the others were abandoned. Newer exports split the list over
``conversations-000.json``, ``conversations-001.json`` …; a folder given is searched for both names.

A message is ``{id, author{role}, content{content_type, parts[]}, create_time, recipient, channel,
weight, metadata}``. Kept: the person's and the assistant's text (``text`` and the strings of
``multimodal_text``; images and files are pointers, dropped). Dropped: system and tool messages,
hidden ones (custom instructions, ``is_visually_hidden_from_conversation``, weight 0), an
assistant's calls to its tools (``recipient`` other than ``all``), reasoning (``thoughts``,
``reasoning_recap``, the ``commentary`` channel) and browsing and code-execution content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram_cli.ingest.base import ASSISTANT, USER, Importer, Message
from engram_cli.ingest.common import epoch_to_utc
from engram_cli.ingest.exports import (
    Conversation,
    ExportFormat,
    ExportImporter,
    Unusable,
    text_or_none,
    version_of,
)

_ROLES = {"user": USER, "assistant": ASSISTANT}
_TEXT_CONTENT = frozenset({"text", "multimodal_text"})


def looks_like(obj: Mapping[str, Any]) -> bool:
    return isinstance(obj.get("mapping"), dict)


def _claude_like(obj: Mapping[str, Any]) -> bool:
    return isinstance(obj.get("chat_messages"), list)


def parse(obj: Mapping[str, Any]) -> Conversation:
    key = obj.get("conversation_id") or obj.get("id")
    if not isinstance(key, str) or not key.strip():
        raise Unusable("conversation without an id")
    mapping = obj.get("mapping")
    if not isinstance(mapping, dict):
        raise Unusable("conversation without a mapping")
    leaf = obj.get("current_node")
    model = obj.get("default_model_slug")
    return Conversation(
        key=key.strip(),
        version=version_of(obj.get("update_time")),
        messages=lambda: _messages(mapping, leaf),
        title=text_or_none(obj.get("title")),
        started_at=epoch_to_utc(obj.get("create_time"), millis=False),
        updated_at=epoch_to_utc(obj.get("update_time"), millis=False),
        model=model if isinstance(model, str) and model else None,
    )


def current_branch(mapping: Mapping[str, Any], leaf: Any) -> list[str]:
    """The node ids from the root to ``leaf``, top-down.

    Without a usable ``current_node`` (older or hand-made files), the branch ends at the leaf
    reached by taking the last child at every step from the root, which is the latest branch.
    A parent link that loops or points nowhere ends the walk where it breaks.
    """
    if not isinstance(leaf, str) or leaf not in mapping:
        leaf = _latest_leaf(mapping)
    path: list[str] = []
    seen: set[str] = set()
    node_id: Any = leaf
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        path.append(node_id)
        node = mapping[node_id]
        node_id = node.get("parent") if isinstance(node, dict) else None
    path.reverse()
    return path


def _latest_leaf(mapping: Mapping[str, Any]) -> str | None:
    roots = [k for k, n in mapping.items() if isinstance(n, dict) and n.get("parent") not in mapping]
    if not roots:
        return None
    node_id, seen = roots[0], set()
    while node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        children = node.get("children") if isinstance(node, dict) else None
        nxt = [c for c in children if isinstance(c, str) and c in mapping] if isinstance(children, list) else []
        if not nxt:
            break
        node_id = nxt[-1]
    return node_id


def _messages(mapping: Mapping[str, Any], leaf: Any) -> list[Message]:
    out: list[Message] = []
    for node_id in current_branch(mapping, leaf):
        node = mapping[node_id]
        message = node.get("message") if isinstance(node, dict) else None
        if isinstance(message, dict) and (kept := _message(message, node_id)) is not None:
            out.append(kept)
    return out


def _message(message: Mapping[str, Any], node_id: str) -> Message | None:
    author = message.get("author")
    role = _ROLES.get(str(author.get("role"))) if isinstance(author, dict) else None
    if role is None or _hidden(message):
        return None
    content = message.get("content")
    if not isinstance(content, dict) or content.get("content_type") not in _TEXT_CONTENT:
        return None
    parts = content.get("parts")
    if not isinstance(parts, list):
        return None
    text = "\n\n".join(p.strip() for p in parts if isinstance(p, str) and p.strip())
    if not text:
        return None
    mid = message.get("id")
    return Message(
        role,
        text,
        id=mid if isinstance(mid, str) and mid else node_id,
        at=epoch_to_utc(message.get("create_time"), millis=False),
    )


def _hidden(message: Mapping[str, Any]) -> bool:
    """Not something the person saw in the conversation: hidden context, tool calls, reasoning."""
    metadata = message.get("metadata")
    if isinstance(metadata, dict) and metadata.get("is_visually_hidden_from_conversation"):
        return True
    weight = message.get("weight")
    if isinstance(weight, int | float) and not isinstance(weight, bool) and weight == 0:
        return True
    recipient = message.get("recipient")
    if isinstance(recipient, str) and recipient not in ("all", ""):
        return True
    return message.get("channel") == "commentary"


FORMAT = ExportFormat(
    what="a ChatGPT data export",
    parse=parse,
    looks_like=looks_like,
    others=[(_claude_like, "engram ingest claude-ai PATH")],
)


IMPORTER: Importer = ExportImporter(
    "chatgpt",
    "a ChatGPT data export: engram ingest chatgpt PATH/TO/conversations.json (or its folder)",
    FORMAT,
    ("conversations.json", "conversations-*.json"),
)
