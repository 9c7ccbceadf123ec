"""Recalled memories: the table, the prompt card, Markdown, and the card a new session starts with."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram_cli.lang.text import estimate_tokens
from engram_cli.render.console import clip, console, escape, note, out, plain_table, short, shown_text

if TYPE_CHECKING:
    from engram_cli.api.results import Recalled, SessionContext
    from engram_cli.memory.cards import Carded
    from engram_cli.memory.evidence import EvidenceHit
    from engram_cli.memory.model import Memory
    from engram_cli.memory.recall import Hit

CARD_HEADER = "The following are the user's long-term memories from engram, for reference only:"
CARD_FOOTER = (
    "Do not trust these memories blindly: they may be outdated or wrong. "
    "Where they contradict the current instruction, the current instruction wins."
)


def where(hit: Hit) -> str:
    """The scope a hit came from: project or global, or the namespace of any other."""
    return hit.memory.namespace if hit.scope == "other" else hit.scope


def card_block(memory: Memory, scope: str | None = None, relevance: float | None = None) -> str:
    # A keyed fact's text is only its value: the key says what it is the value of.
    key = f"[key: {memory.key}]" if memory.key else ""
    head = (
        f"[memory #{short(memory.id)}]{key}[type: {memory.type}][importance: {memory.importance:.2g}]"
        f"[accessed: {memory.access_count}]"
    )
    if scope in ("project", "global"):
        head += f"[scope: {scope}]"
    elif scope is not None:
        head += f"[namespace: {memory.namespace}]"
    if relevance is not None:
        head += f"[relevance: {relevance:.2f}]"
    return f"{head}\n{memory.content}"


def cards(hits: Sequence[Carded], *, budget: int | None = None) -> str:
    """The prompt block: header, one block per memory, footer; within ``budget`` tokens.

    A memory too long for what is left of the budget is skipped, and a shorter one after it may
    still fit. Each says its scope, and its chance of being relevant when a question chose it."""
    used = estimate_tokens(CARD_HEADER) + estimate_tokens(CARD_FOOTER)
    blocks: list[str] = []
    for hit in hits:
        block = card_block(hit.memory, hit.scope, hit.relevance)
        cost = estimate_tokens(block) + 1
        if budget is not None and used + cost > budget:
            continue
        blocks.append(block)
        used += cost
    if not blocks:
        return ""
    return "\n".join([CARD_HEADER, "", "\n\n".join(blocks), "", CARD_FOOTER])


def markdown(hits: Sequence[Hit], evidence: Sequence[EvidenceHit] = ()) -> str:
    lines = ["# Memories", ""]
    for hit in hits:
        m = hit.memory
        tags = f" · tags: {', '.join(m.tags)}" if m.tags else ""
        lines.append(
            f"- **{m.type}** · importance {m.importance:.2g} · relevance {hit.relevance:.2f} · {where(hit)} · "
            f"`{short(m.id)}`{tags}"
        )
        for line in m.content.splitlines() or [""]:
            lines.append("  " + line)
    if evidence:
        lines += ["", "# Evidence (from conversations)", ""]
        for found in evidence:
            t = found.turn
            lines.append(f"- **evidence: {t.kind}** · relevance {found.relevance:.2f} · session `{t.where}`"
                         f" · {t.occurred_at or t.learned_at}")  # fmt: skip
            for line in t.content.splitlines() or [""]:
                lines.append("  " + line)
    return "\n".join(lines)


def evidence_place(found: EvidenceHit) -> str:
    t = found.turn
    return t.namespace if found.scope == "other" else found.scope


def read_only(result: Recalled) -> None:
    """Said whatever the format: a recall on a read-only database counts no access."""
    if result.read_only is not None:
        note(f"the database {result.read_only} is read-only: access counts are not updated")


def recalled(result: Recalled, *, fmt: str = "table", explain: bool = False, budget: int | None = None) -> None:
    """As a table (``explain``: every factor of every score), a prompt card (within ``budget`` tokens) or Markdown."""
    hits = result.hits
    if fmt == "card":
        # A card is what an assistant is told as memory: evidence (raw turns) never goes into one.
        text = cards(hits, budget=budget)
        if text:
            out(text)
        return
    if fmt == "markdown":
        out(markdown(hits, result.evidence))
        return
    if not hits and not result.evidence and result.held_back:
        note(
            f"nothing relevant: {result.held_back} candidate{'s' if result.held_back != 1 else ''} under the "
            f"relevance floor {result.floor:g} (--min-relevance 0 shows them)"
        )
        return
    if not hits and not result.evidence:
        note("no memories matched")
        return
    headers = ("id", "score", "rel", "scope", "type", "imp", "content")
    rows = [
        (
            short(hit.memory.id), f"{hit.score:.3f}", f"{hit.relevance:.2f}", escape(where(hit)), hit.memory.type,
            f"{hit.memory.importance:.2f}", clip(shown_text(hit.memory), 100),
        )
        for hit in hits
    ]  # fmt: skip
    for found in result.evidence:
        t = found.turn
        # The id column names the session (evidence has no memory id), the type column says it is evidence.
        rows.append((
            escape(clip(t.where, 24)), f"{found.score:.3f}", f"{found.relevance:.2f}", escape(evidence_place(found)),
            f"evidence:{t.kind}", "-", escape(clip(t.content, 100)),
        ))  # fmt: skip
    if not plain_table(headers, rows):
        from rich.table import Table

        table = Table(show_header=True, header_style="bold", box=None, pad_edge=False)
        for column in headers:
            table.add_column(
                column, overflow="fold" if column == "content" else "ellipsis", no_wrap=column != "content"
            )
        for row in rows:
            table.add_row(*row)
        console().print(table)
    if explain:
        for hit in hits:
            console().print(f"[bold]{short(hit.memory.id)}[/]", escape(json.dumps(hit.explain, ensure_ascii=False)))
        for found in result.evidence:
            console().print(f"[bold]evidence {found.turn.pk}[/]", escape(json.dumps(found.explain, ensure_ascii=False)))


def session_context(context: SessionContext) -> None:
    """The memory card an assistant adds to a session's (or a prompt's) context; nothing at all when there is none."""
    if context.problem is not None:
        note(f"engram: no memories for this {'session' if context.event == 'SessionStart' else 'prompt'}: "
             f"{context.problem.message}")  # fmt: skip
        return
    text = cards(context.hits, budget=context.budget)
    if not text:
        return
    if context.as_hook_json:
        out(json.dumps({"hookSpecificOutput": {"hookEventName": context.event, "additionalContext": text}}))
    else:
        out(text)
