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
    _IMPERATIVES,
    _KANA_HANGUL,
    _POLITE,
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

    Sentences that state a preference are left out: they become memories of their own.
    """
    kept: list[str] = []
    for sentence in _sentences(_prose(text) or text):
        sentence = _strip_filler(re.sub(r"^#+\s*", "", sentence))
        if not sentence or (kept and _cue(sentence.replace("’", "'"))):
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


def _episode(session: Session, state: _State) -> Item | None:
    if state.agent:
        content = _agent_episode(state)
        importance = EPISODE_IMPORTANCE
        if state.fixes or state.commits:
            importance = BUSY_EPISODE_IMPORTANCE
    else:
        content = _shell_episode(state)
        importance = SHELL_EPISODE_IMPORTANCE
    if not content:
        return None
    if state.remember:
        importance = REMEMBER_EPISODE_IMPORTANCE
    return Item(
        key="episode",
        type="episodic",
        content=content,
        importance=importance,
        message_id=None,
        at=state.last or session.updated_at,
        tags=["session", session.source],
    )


def _trim(text: str) -> str:
    return text.strip().rstrip(".。;；,，:：").strip()


def _agent_episode(state: _State) -> str | None:
    about = state.summary or state.task or state.title
    if not about and not (state.commits or state.fixes or state.tests):
        return None  # nothing asked, nothing done that a tool recorded: no memory
    lang = state.lang or ("zh" if _is_chinese(about or "") else "en")
    dates = _dates(state, lang)
    if lang == "zh":
        frame = f"{state.project + ' ' if state.project else ''}会话" + (f"（{dates}）" if dates else "") + "："
        if state.summary:
            return _clip(frame + _trim(state.summary) + "。", 600)
        facts = [_trim(state.outcome)] if state.outcome else []
        facts += {"pass": ["测试通过"], "fail": ["测试仍失败"]}.get(state.tests or "", [])
        if state.commit:
            facts.append(f'已提交 "{state.commit}"' + (f"（共 {state.commits} 次提交）" if state.commits > 1 else ""))
        if not about:
            return _clip(frame + "，".join(facts) + "。", 600)
        body = f"任务：{_trim(about)}" + (f"；结果：{'，'.join(facts)}" if facts else "")
        return _clip(frame + body + "。", 600)
    frame = "Session" + (f" in {state.project}" if state.project else "") + (f" ({dates})" if dates else "") + ": "
    if state.summary:
        return _clip(frame + _trim(state.summary) + ".", 600)
    facts = [_trim(state.outcome)] if state.outcome else []
    facts += {"pass": ["tests pass"], "fail": ["tests still fail"]}.get(state.tests or "", [])
    if state.commit:
        more = f" and {state.commits - 1} more" if state.commits > 1 else ""
        facts.append(f'committed "{state.commit}"{more}')
    if not about:
        return _clip(frame + "; ".join(facts) + ".", 600)
    return _clip(frame + _asked(state) + (f"; outcome: {'; '.join(facts)}" if facts else "") + ".", 600)


def _asked(state: _State) -> str:
    if not state.task:
        return _trim(state.title or "")
    task = _trim(state.task)
    polite = _POLITE.match(task)
    rest = task[polite.end() :] if polite else task
    first = rest.split(" ", 1)[0]
    if rest and (polite or first.lower() in _IMPERATIVES) and not re.search(r"[A-Z]{2}|\d|[./]", first):
        # "Can you fix the test?" asked to fix the test: the question mark went with the "can you".
        rest = re.sub(r"^([^?？]*)[?？]", r"\1", rest, count=1) if polite else rest
        return "asked to " + rest[:1].lower() + rest[1:]
    return "asked: " + task


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
