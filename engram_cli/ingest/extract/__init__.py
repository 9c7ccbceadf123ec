"""From a session of messages to a few memories, by rules: no model, no network, same input → same output.

Three kinds of memory come out of a session:

- **the episode** (key ``"episode"``, one per session, rewritten as the session grows): the
  tool's own summary when it wrote one, else the task the person asked for and how it ended
  (the last assistant message that reports rather than announces, plus facts seen in tool
  results: tests passing or failing, commits), with the project and the dates.
  Sessions whose request is Chinese get a Chinese frame (``webshop 会话（2026-03-02）：任务：…；结果：…。``)
  so that the whole memory is one language: the keyword index reads Chinese as bigrams and
  compaction's similarity thresholds are calibrated per script, so a half-English frame would
  only blur both. Other languages (Japanese included) keep the English frame around the
  person's own words. Shell history gets an episode only when something happened: a fix, or
  at least :data:`SHELL_BUSY` commands in one project.
- **semantic** memories from what the person typed: preferences, decisions and explicit
  requests to remember (cue tables below), one per message at most, keeping the sentence(s)
  that carry the cue. Questions, hypotheticals, tentative wording, quoted text, code, other
  roles' text and long pastes (over :data:`LONG_MESSAGE`) never count. Each says whose it is
  (:func:`scope_of`): the person's ("answer in British English", 我习惯…) goes to the global scope.
- **procedural** error → fix: a command that failed and later passed (the same program and
  subcommand), with what changed in between (files edited, commands run, the assistant's
  sentence saying what it did or why it failed). The open failure travels in the digest, so
  the fix may arrive in a later read of the session.

``extract`` is called once per new part of a session with the digest it returned last time;
everything it must remember between parts is in that small JSON dict.

The rules live in one module per topic: :mod:`.wording` (what people typed, sentences, clipping),
:mod:`.cues` (preference, decision and remember cues), :mod:`.scope` (whether a statement is about
the person or the project), :mod:`.commands` (command signatures),
:mod:`.outcome` (failures, edited files, what the assistant reports), :mod:`.state` (the digest),
:mod:`.reader` (the walk over a session's messages), :mod:`.episode` (the episode's text) and
:mod:`.item` (what comes out); :func:`extract` below ties them together.
"""

from __future__ import annotations

from typing import Any

from engram_cli.ingest.base import Session
from engram_cli.ingest.extract.commands import Signature, signature
from engram_cli.ingest.extract.cues import LONG_MESSAGE, semantic_cues
from engram_cli.ingest.extract.episode import SHELL_BUSY, _episode, _project_name
from engram_cli.ingest.extract.item import Item
from engram_cli.ingest.extract.outcome import edited_files, error_line, explanation, failed, outcome
from engram_cli.ingest.extract.reader import _Reader
from engram_cli.ingest.extract.scope import scope_of
from engram_cli.ingest.extract.state import MAX_FIXES, _State
from engram_cli.ingest.extract.wording import _clip

__all__ = [
    "LONG_MESSAGE",
    "MAX_FIXES",
    "SHELL_BUSY",
    "Item",
    "Signature",
    "edited_files",
    "error_line",
    "explanation",
    "extract",
    "failed",
    "outcome",
    "scope_of",
    "semantic_cues",
    "signature",
]


def extract(session: Session, digest: dict[str, Any]) -> tuple[list[Item], dict[str, Any]]:
    """Memories from this part of a session, and the session's updated digest.

    ``session.messages`` may be only the messages new since the last run (append-only logs are read
    incrementally) or, with ``session.restart``, the whole session again. ``digest`` is what this function
    returned last time for the same session ({} the first time, or after a restart): a small JSON-serialisable
    dict (under a few KB) carrying what later parts need — the task asked, the latest outcome, counts, the
    failures still waiting for their fix, the shell's projects. The returned items always include the
    (re)written episode for the session when there is anything to say, with key "episode".
    """
    state = _State.load({} if session.restart else digest)
    if session.summary:
        state.summary = _clip(session.summary, 400)
    if session.title:
        state.title = _clip(session.title, 200)
    state.project = _project_name(session.project) or state.project
    state.seen_time(session.started_at)
    state.seen_time(session.updated_at)
    reader = _Reader(session, state)
    for message in session.messages:
        reader.feed(message)
    items = reader.items
    episode = _episode(session, state, final=True)
    if episode:
        items.append(episode)
    return items, state.dump()
