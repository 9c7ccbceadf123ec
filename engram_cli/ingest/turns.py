"""The conversation as evidence: which turns of a session are worth keeping, and in what words.

A distilled memory says what a careful colleague would keep; the turns say everything else that was
said (a port, a flag, a reason), so that a question the memories cannot answer can still be answered
from the conversation. Kept are:

- **request**: what the person typed, without what tools wrapped around it, unless it is only an
  acknowledgement ("ok", "thanks", 好的) or a slash command with nothing after it;
- **answer**: an assistant message's prose (code blocks, quoted and indented lines dropped);
- **error**: a command or tool call that failed, as the command and the line saying what went wrong;
- **change**: a tool call that edited files: which files, and the first changed lines.

Successful command output, reads and tool chatter are not kept: they are what makes a log large and
say little a later question asks about. Text comes from messages the loader has already scrubbed; it
is cut only through :func:`engram_cli.ingest.base.clip`, which redacts before it cuts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram_cli.ingest.base import ASSISTANT, SHELL, TOOL, USER, Message, Session, clip
from engram_cli.ingest.extract.item import _message_id
from engram_cli.ingest.extract.outcome import _EDIT_TOOL, _relative, edited_files, error_line, failed
from engram_cli.ingest.extract.wording import _ACK, _SLASH, _prose, _squash, _user_text
from engram_cli.lang.text import STOPWORDS, keyword_terms

# Longest kept text of one turn: a request or an answer's prose rarely needs more to be found again, and
# the vector is made from the head of the passage anyway (the models read 512 tokens).
MAX_TURN = 1200
# Changed lines shown for an edit.
CHANGE_LINES = 6
# A turn needs this many distinct terms (stop words aside; CJK counted as bigrams) to be worth keeping.
MIN_TERMS = 3

_DIFF_LINE = re.compile(r"^[+-](?![+-]{2})\s*\S")
_NAMED_PATH = re.compile(r"\b(?:file_path|filePath|path|target_file)=([^,\s]{1,300})")
_NEW_TEXT = re.compile(r"\b(?:new_string|new_str|content)=(.+)", re.DOTALL)


@dataclass(frozen=True)
class TurnText:
    """A kept turn, before it is stored."""

    message_id: str  # the message's id (as items name it), for linking memories to what they came from
    kind: str  # request | answer | error | change
    content: str
    at: str | None

    @property
    def key(self) -> str:
        """Stable across re-reads of the log: a message may yield a turn of more than one kind."""
        return f"{self.message_id}:{self.kind}"


def _substantive(text: str) -> bool:
    terms = {t for t in keyword_terms(text) if t not in STOPWORDS}
    return len(terms) >= MIN_TERMS and not _ACK.match(text.strip().rstrip(".!。！"))


def _request(message: Message) -> str | None:
    text = _user_text(message.text or "")
    if text is None:
        return None
    slash = _SLASH.match(text)
    if slash:
        text = (slash.group(2) or "").strip()
    return text if text and _substantive(text) else None


def _answer(message: Message) -> str | None:
    text = _prose(message.text or "")
    return text if text and _substantive(text) else None


def _change(message: Message, project: str | None) -> tuple[str, list[str]] | None:
    """The change a tool message made ("changed <files>" and its first changed lines), and its changed lines."""
    text = message.text or ""
    # Importers that flatten a tool's input write it as key=value pairs: the path is named, not guessed.
    named = [_relative(p, project) for p in _NAMED_PATH.findall(text)] if _EDIT_TOOL.search(message.tool or "") else []
    files = list(dict.fromkeys(named)) or edited_files(message, project)
    if not files:
        return None
    lines = [ln.rstrip() for ln in text.splitlines() if _DIFF_LINE.match(ln)][:CHANGE_LINES]
    new = _NEW_TEXT.search(text)
    if not lines and new:
        lines = [f"+ {_squash(new.group(1))[:200]}"]
    return "\n".join([f"changed {', '.join(files[:8])}", *lines]), lines


def turns(session: Session) -> list[TurnText]:
    """The turns of ``session.messages`` worth keeping as evidence, in order."""
    out: list[TurnText] = []
    command: str | None = None  # the latest command run, for the error line of its result
    changed: str | None = None  # the latest change kept: an edit tool's report of it is the same change

    def keep(message: Message, kind: str, text: str) -> None:
        content = clip(text.strip(), MAX_TURN)
        if content.strip():
            out.append(TurnText(_message_id(message), kind, content, message.at))

    for message in session.messages:
        if message.role != TOOL:
            changed = None
        if message.role == USER:
            text = _request(message)
            if text:
                keep(message, "request", text)
        elif message.role == ASSISTANT:
            text = _answer(message)
            if text:
                keep(message, "answer", text)
        elif message.role in (TOOL, SHELL):
            body = message.text or ""
            if message.command:
                command = _squash(message.command)[:300]
            change = None if message.is_error or message.role != TOOL else _change(message, session.project)
            # A result without a command of its own answers the latest command; it fails only once.
            bad = message.is_error or (
                message.role == TOOL and not message.command and not change and command is not None and failed(body)
            )
            if bad:
                said = error_line(body) or _squash(body)[:200]
                run = command or message.tool or ""
                lines = [f"$ {run}" if run else "", f"error: {said}" if said else "failed"]
                keep(message, "error", "\n".join(x for x in lines if x))
                command = None
            elif change:
                text, lines = change
                head = text.split("\n", 1)[0]
                if lines or head != changed:
                    keep(message, "change", text)
                changed = head
    return out
