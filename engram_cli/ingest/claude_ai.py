"""Claude.ai's data export: ``conversations.json`` (Settings → Privacy → Export data), given with its path.

The file is a JSON list of conversations: ``{uuid, name, created_at, updated_at, chat_messages[],
model?, project_uuid?, current_leaf_message_uuid?}`` with ISO 8601 times. A message is ``{uuid,
sender: human | assistant, text, content[], created_at, parent_message_uuid?, attachments[],
files[]}``. Its words are the ``text`` blocks of ``content`` (``thinking``, ``tool_use`` and
``tool_result`` blocks are the model's workings, dropped); an export without ``content`` has them
in ``text``. Attached files' extracted text is not the conversation and is left out.

``chat_messages`` is in order. When the export names the conversation's current leaf and the
messages their parents, the branch ending at that leaf is the conversation (an edited prompt
leaves the old branch behind), as in ChatGPT's export; otherwise the list is read as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram_cli.ingest.base import ASSISTANT, USER, Importer, Message
from engram_cli.ingest.common import iso_to_utc
from engram_cli.ingest.exports import (
    Conversation,
    ExportFormat,
    ExportImporter,
    Unusable,
    text_or_none,
    version_of,
)

_ROLES = {"human": USER, "assistant": ASSISTANT}


def looks_like(obj: Mapping[str, Any]) -> bool:
    return isinstance(obj.get("chat_messages"), list)


def _chatgpt_like(obj: Mapping[str, Any]) -> bool:
    return isinstance(obj.get("mapping"), dict)


def parse(obj: Mapping[str, Any]) -> Conversation:
    key = obj.get("uuid")
    if not isinstance(key, str) or not key.strip():
        raise Unusable("conversation without a uuid")
    chat = obj.get("chat_messages")
    if not isinstance(chat, list):
        raise Unusable("conversation without chat_messages")
    leaf = obj.get("current_leaf_message_uuid")
    model = obj.get("model")
    return Conversation(
        key=key.strip(),
        version=version_of(obj.get("updated_at")),
        messages=lambda: _messages(chat, leaf),
        title=text_or_none(obj.get("name")),
        started_at=iso_to_utc(obj.get("created_at")),
        updated_at=iso_to_utc(obj.get("updated_at")),
        model=model if isinstance(model, str) and model else None,
    )


def current_branch(chat: list[Any], leaf: Any) -> list[Mapping[str, Any]]:
    """The messages of the branch ending at ``leaf``, in order; the whole list when it names no branch."""
    entries: list[Mapping[str, Any]] = [m for m in chat if isinstance(m, dict)]
    by_id = {m["uuid"]: m for m in entries if isinstance(m.get("uuid"), str)}
    if not isinstance(leaf, str) or leaf not in by_id or not any("parent_message_uuid" in m for m in entries):
        return entries
    branch: list[Mapping[str, Any]] = []
    seen: set[str] = set()
    node: Any = leaf
    while isinstance(node, str) and node in by_id and node not in seen:
        seen.add(node)
        branch.append(by_id[node])
        node = by_id[node].get("parent_message_uuid")
    branch.reverse()
    return branch


def _messages(chat: list[Any], leaf: Any) -> list[Message]:
    out: list[Message] = []
    for index, entry in enumerate(current_branch(chat, leaf)):
        role = _ROLES.get(str(entry.get("sender")))
        text = _text(entry)
        if role is None or not text:
            continue
        mid = entry.get("uuid")
        ident = mid if isinstance(mid, str) and mid else f"#{index}"
        out.append(Message(role, text, id=ident, at=iso_to_utc(entry.get("created_at"))))
    return out


def _text(entry: Mapping[str, Any]) -> str:
    content = entry.get("content")
    if isinstance(content, list) and content:
        blocks = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n\n".join(t.strip() for t in blocks if isinstance(t, str) and t.strip())
    text = entry.get("text")
    return text.strip() if isinstance(text, str) else ""


FORMAT = ExportFormat(
    what="a Claude.ai data export",
    parse=parse,
    looks_like=looks_like,
    others=[(_chatgpt_like, "engram ingest chatgpt PATH")],
)


IMPORTER: Importer = ExportImporter(
    "claude-ai",
    "a Claude.ai data export: engram ingest claude-ai PATH/TO/conversations.json (or its folder)",
    FORMAT,
    ("conversations.json",),
)
