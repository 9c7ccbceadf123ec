"""Episodes: the one memory per session that says what was asked and how it ended, in the request's language."""

from __future__ import annotations

import re

from engram_cli.ingest.base import Session
from engram_cli.ingest.extract.cues import _cue
from engram_cli.ingest.extract.item import Item
from engram_cli.ingest.extract.state import _State
from engram_cli.ingest.extract.wording import (
    _ACK,
    _CJK_CHAR,
    _KANA_HANGUL,
    _clip,
    _is_chinese,
    _join,
    _prose,
    _sentences,
    _squash,
    _strip_filler,
    _weight,
)

# Shell history: this many commands in one project directory make a day worth an episode.
SHELL_BUSY = 20

EPISODE_IMPORTANCE = 0.35
SHELL_EPISODE_IMPORTANCE = 0.3
BUSY_EPISODE_IMPORTANCE = 0.4  # something was fixed or committed
REMEMBER_EPISODE_IMPORTANCE = 0.5  # the person asked for something to be remembered here


def _is_request(text: str) -> bool:
    """A real request: not a greeting, an acknowledgement or a one-word test message."""
    prose = _squash(_prose(text))
    bare = re.sub(r"[\s\W_]+$|^[\s\W_]+", "", prose)
    if not bare or _ACK.match(bare):
        return False
    return (
        len(re.findall(r"[A-Za-z0-9]+", prose)) >= 2
        or len(_CJK_CHAR.findall(prose)) + len(_KANA_HANGUL.findall(prose)) >= 4
    )


def _task(text: str) -> str:
    """The request as an episode quotes it: its first sentence, and the next when the first is terse.

    Sentences that state a preference are left out (unless there is nothing else): they become memories
    of their own.
    """
    kept: list[str] = []
    sentences = [_strip_filler(re.sub(r"^#+\s*", "", s)) for s in _sentences(_prose(text) or text)]
    sentences = [s for s in sentences if s]
    # A request that opens with a preference ("first, my habit: …; now the task: …") is the task after it.
    asks = [s for s in sentences if not _cue(s.replace("’", "'"))]
    for sentence in sentences:
        if sentence not in asks and (kept or asks):
            continue
        kept.append(sentence)
        if _weight(_join(kept)) >= 25:
            break
    return _clip(_join(kept), 160)


def _project_name(path: str | None) -> str | None:
    if not path:
        return None
    name = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    return name[:120] or None


def _dates(state: _State, lang: str) -> str | None:
    first, last = (state.first or "")[:10], (state.last or "")[:10]
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", first):
        return None
    if last and last != first and re.fullmatch(r"\d{4}-\d{2}-\d{2}", last):
        return f"{first} 至 {last}" if lang == "zh" else f"{first} to {last}"
    return first


def _episode(session: Session, state: _State, *, final: bool = False) -> Item | None:
    """The episode of the task under way; ``final`` at the end of what was read, where a later task that did
    nothing (a closing chat) adds no episode to those its session has already."""
    if state.agent:
        if final and state.episodes and not state.worked:
            return None
        content = _agent_episode(state)
        importance = _importance(state)
    else:
        content = _shell_episode(state)
        importance = SHELL_EPISODE_IMPORTANCE
    if not content:
        return None
    if state.remember:
        importance = max(importance, REMEMBER_EPISODE_IMPORTANCE)
    return Item(
        key=state.ekey or "episode",
        type="episodic",
        content=content,
        importance=importance,
        message_id=None,
        at=state.last or session.updated_at,
        tags=["session", session.source],
    )


def _importance(state: _State) -> float:
    """How strongly the session says something came of its task: confirmed, verified, committed, or nothing."""
    score = EPISODE_IMPORTANCE - 0.05  # a conversation that changed nothing
    if state.worked:
        score += 0.05
    if state.tests == "pass" or state.fixes:
        score += 0.05
    if state.confirmed:
        score += 0.1
    if state.commits:
        score += 0.05
    if state.unfinished or (state.tests == "fail" and not state.confirmed):
        score -= 0.05
    return round(min(max(score, 0.25), 0.55), 3)


def _trim(text: str) -> str:
    return text.strip().rstrip(".。;；,，:：").strip()


def _agent_episode(state: _State) -> str | None:
    """What happened, in plain sentences: the task, what was found and done, and how it ended.

    No frame ("Session in … (date): asked: …"): the project is the memory's namespace and the date its
    time, and a frame shared by every episode would make unrelated sessions look alike to compaction.
    """
    about = (state.summary if not state.episodes else None) or state.task or state.title or state.trouble
    if not about and not (state.commits or state.fixes or state.tests):
        return None  # nothing asked, nothing done that a tool recorded: no memory
    told = " ".join(t for t in (state.diagnosis, state.outcome, state.reply) if t) if state.task is None else ""
    lang = state.lang or ("zh" if _is_chinese(told or about or state.outcome or "") else "en")
    zh = lang == "zh"
    parts = [_trim(about)] if about else []
    # What the work found and how it ended; when nothing was done, the answer given (which the tool's
    # own summary, when there is one, already covers).
    said = [state.diagnosis, state.outcome] if state.worked else [None if about == state.summary else state.reply]
    for sentence in filter(None, said):
        if not any(_trim(sentence) in p for p in parts):
            parts.append(_trim(sentence))
    status = _status(state, zh)
    if state.task and not state.worked and not state.summary and _cue(state.task.replace("’", "'")):
        return None  # the person stated something (a memory of its own already) and nothing was done
    return _clip(_sentences_joined(parts, status, zh), 600)


def _status(state: _State, zh: bool) -> list[str]:
    """How the task ended, from what was seen (tests, commits) and what the person said."""
    out: list[str] = []
    counts = f"（{state.test_line}）" if zh and state.test_line else f" ({state.test_line})" if state.test_line else ""
    if state.tests == "pass":
        out.append(("测试通过" + counts) if zh else (f"tests: {state.test_line}" if state.test_line else "tests pass"))
    elif state.tests == "fail" and not state.confirmed:
        out.append(("测试仍失败" + counts) if zh else ("tests still fail" + counts))
    if state.commit:
        if zh:
            out.append(f"已提交 “{state.commit}”" + (f"（共 {state.commits} 次提交）" if state.commits > 1 else ""))
        else:
            more = f" and {state.commits - 1} more" if state.commits > 1 else ""
            out.append(f"committed “{state.commit}”{more}")
    if state.confirmed:
        out.append(f"用户确认：“{_trim(state.confirmed)}”" if zh else f"confirmed: “{_trim(state.confirmed)}”")
    elif state.unfinished:
        out.append("未完成，留待以后" if zh else "left unfinished for later")
    return out


def _sentences_joined(parts: list[str], status: list[str], zh: bool) -> str:
    """The sentences one after another, then how it ended as one list ("Tests pass; committed …")."""
    if status:
        listed = "，".join(status) if zh else "; ".join(status)
        parts = [*parts, listed if zh else listed[:1].upper() + listed[1:]]
    text = ""
    for part in parts:
        if text and not re.search(r"[.!?。！？…]$", text):
            text += "。" if _CJK_CHAR.match(text[-1]) or _CJK_CHAR.match(part) else "."
        text += ("" if not text or zh or _CJK_CHAR.match(part) else " ") + part
    return text if re.search(r"[.!?。！？]$", text) else text + ("。" if zh else ".")


def _shell_episode(state: _State) -> str | None:
    busiest = max(state.dirs.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    busy_dir = busiest[0] if busiest is not None and busiest[1] >= SHELL_BUSY else None
    # A history that records the working directory names the project itself; otherwise `cd` does.
    busy = busy_dir is not None or (state.project is not None and state.shell >= SHELL_BUSY)
    if not (busy or state.fixed):
        return None
    project = state.project or busy_dir
    dates = _dates(state, "en")
    frame = "Shell session" + (f" in {project}" if project else "") + (f" ({dates})" if dates else "") + ": "
    top = sorted(state.programs.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    parts = [f"{state.shell} commands" + (", mostly " + ", ".join(name for name, _ in top) if top else "")]
    if state.fixed:
        parts.append("fixed failing " + ", ".join(state.fixed))
    return _clip(frame + "; ".join(parts) + ".", 600)
