"""Reading a session: each new message updates the state; preferences, decisions and fixes come out as memories."""

from __future__ import annotations

import difflib
import re

from engram_cli.ingest.base import ASSISTANT, SHELL, TOOL, USER, Message, Session
from engram_cli.ingest.extract.commands import signature
from engram_cli.ingest.extract.cues import REMEMBER, _semantic
from engram_cli.ingest.extract.episode import _episode, _is_request, _task
from engram_cli.ingest.extract.fixes import (
    changed_lines,
    diagnosis,
    fix_text,
    pasted_error,
    reported_problem,
    stated_fix,
)
from engram_cli.ingest.extract.fixes import confirmation as fix_confirmation
from engram_cli.ingest.extract.item import Item, _message_id
from engram_cli.ingest.extract.outcome import (
    _COMMIT_LINE,
    _EDIT_TOOL,
    edited_files,
    error_line,
    explanation,
    failed,
    outcome,
)
from engram_cli.ingest.extract.state import MAX_FIXES, MAX_OPEN, MAX_PENDING, MAX_SEMANTIC, _Call, _Failure, _State
from engram_cli.ingest.extract.task import (
    acknowledgement,
    after_thanks,
    approval,
    aside,
    confirmation,
    new_task,
    next_task,
    test_counts,
    unfinished,
)
from engram_cli.ingest.extract.wording import (
    _BASH_INPUT,
    _BASH_OUTPUT,
    _RUN_COMMAND,
    _SLASH,
    _clip,
    _is_chinese,
    _join,
    _unwrap,
    _user_text,
)
from engram_cli.lang.text import content_hash

FIX_IMPORTANCE = 0.6
# A fix the person confirmed in words is a little less sure than one a run or a commit confirmed; one
# confirmed only by thanks or praise, less again.
WORDS_IMPORTANCE = 0.55
THANKS_IMPORTANCE = 0.45


class _Reader:
    """Walks the new messages of one session, updating the state and collecting memories."""

    def __init__(self, session: Session, state: _State) -> None:
        self.session = session
        self.state = state
        self.items: list[Item] = []
        self.source = session.source

    def feed(self, message: Message) -> None:
        state = self.state
        state.messages += 1
        state.seen_time(message.at)
        if message.role == SHELL:
            self.shell(message)
        elif message.role == USER:
            state.agent = True
            self.user(message)
        elif message.role == ASSISTANT:
            state.agent = True
            self.assistant(message)
        elif message.role == TOOL:
            state.agent = True
            self.tool(message)

    # people

    def user(self, message: Message) -> None:
        text = _user_text(message.text or "")
        if text is None:
            return
        bash = _BASH_INPUT.search(text)
        if bash:  # Claude Code's "!" mode: the command, then its output in the next user message
            self.call(message, bash.group(1).strip(), None)
            return
        if _BASH_OUTPUT.search(message.text or "") and self.state.pending:
            self.result(message, _unwrap(re.sub(r"</?bash-\w+>", "\n", message.text or "")), message.is_error)
            return
        run = _RUN_COMMAND.match(text)
        if run:
            self.call(message, run.group(1).split("\n")[0].strip(), None)
            return
        slash = _SLASH.match(text)
        if slash:
            # A slash command is not a request; what follows it may be (aider's /ask, /code …).
            text = (slash.group(2) or "").strip()
            if not text:
                return
        self.state.last_fail = None
        self.problem(message, text)
        self.task(message, text)
        if self.state.semantic >= MAX_SEMANTIC:
            return
        item = _semantic(message, text, self.source)
        # People resend a message after an interruption: the same words are one memory.
        said = content_hash(item.content)[:12] if item else ""
        if item and said not in self.state.said:
            self.state.said.append(said)
            self.items.append(item)
            self.state.semantic += 1
            if item.tags[0] == REMEMBER:
                self.state.remember += 1

    def assistant(self, message: Message) -> None:
        text = message.text or ""
        said = outcome(text)
        if said and not acknowledgement(said):
            self.said(said)
        how, why = explanation(text)
        if not said and (why or how):
            # "It fails because …; I'll pin the clock": announced, so no report, but it says what the change is.
            said_parts = [p[:1].upper() + p[1:] for p in (why, how) if p]
            self.state.last_said = _clip(_join(said_parts), 300)
        if self.state.open:
            how = how or stated_fix(text)
            diag = diagnosis(text)
            for failure in self.state.open:
                failure.how = failure.how or how
                failure.why = failure.why or why
                failure.diag = failure.diag or diag
            # Aider writes its edits as SEARCH/REPLACE blocks in the answer; others may show a diff.
            self.changed(changed_lines(text))
        self.state.last_fail = None

    # tasks

    def task(self, message: Message, text: str) -> None:
        """What the person says about the task under way (it works, it waits), and whether a new one begins."""
        state = self.state
        request = _is_request(text)
        if state.task is not None or state.worked:
            words = confirmation(text) if state.worked or state.reply else None
            if words:
                state.confirmed, state.closed, state.unfinished = words, True, False
            elif approval(text):
                state.closed = True
            if not words and unfinished(text):
                state.unfinished = True
        state.turn_work = False
        state.before_work = None
        # What is said to a preference, a what-if or thanks is not what came of the task.
        state.aside = state.task is not None and aside(text)
        if not request:
            return
        following = next_task(text)
        asked = following or after_thanks(text)
        if state.task is None and not state.worked:
            self.ask(asked)
        elif following or (state.closed and state.worked and new_task(text)):
            self.finish(message)
            self.ask(asked)
        elif state.task is None and not state.closed:
            self.ask(asked)  # the work began before anyone asked (a failing test run): this is the request

    def ask(self, text: str) -> None:
        task = _task(text) if _is_request(text) else None
        if task and re.search(r"\w", task):
            self.state.task = task
            self.state.lang = "zh" if _is_chinese(task) else "en"

    def finish(self, message: Message) -> None:
        """The task under way ended: its episode, when it did anything, and a fresh start for the next one."""
        state = self.state
        if state.worked:
            episode = _episode(self.session, state)
            if episode is not None:
                self.items.append(episode)
                state.episodes += 1
        state.next_task(f"episode:{_message_id(message)}")

    def said(self, said: str) -> None:
        """An assistant's report: of its work when work came before it in this turn, else an answer."""
        state = self.state
        state.last_said = said
        if state.turn_work:
            state.outcome = said
        else:
            state.before_work = said
            if not state.aside or state.reply is None:
                state.reply = said

    def work(self, *, change: bool = False) -> None:
        """Something was changed, run or committed for the task."""
        state = self.state
        if not state.turn_work and state.before_work:
            state.outcome = state.before_work  # said before the work and nothing after: it says what was done
        if change and state.diagnosis is None and state.last_said:
            state.diagnosis = state.last_said  # what the assistant said just before its first change
        state.worked = state.turn_work = True
        state.before_work = None

    # tools and commands

    def tool(self, message: Message) -> None:
        text = message.text or ""
        files = [] if message.is_error else edited_files(message, self.session.project)
        if message.command:
            command = message.command[:2000]
            # A result that repeats its call's command; the person's own call (aider's /test) names no tool.
            echoed = next((c for c in self.state.pending if c.cmd == command and c.tool in (message.tool, None)), None)
            if echoed:  # a result that repeats its call's command
                self.result(message, text, message.is_error, echoed)
            elif message.is_error:  # call and result in one message
                self.run(message, command, text if text.strip() != command.strip() else "", True)
            elif _output_of(text, command):  # call and result in one message (aider's "!cmd")
                self.run(message, command, text, failed(text))
            else:
                self.call(message, command, message.tool)
            if self.state.open:
                self.changed(changed_lines(command))
        else:
            call = self.match(message)
            if call:
                self.result(message, text, message.is_error, call)
        if files:
            self.edited(files)
        if self.state.open and not message.is_error and _EDIT_TOOL.search(message.tool or ""):
            self.changed(changed_lines(text, edit_input=True))
        if not message.is_error:
            for msg in _COMMIT_LINE.findall(text):
                self.state.commit = _clip(msg.replace("`", "'"), 100)
                self.state.commits += 1
                self.state.closed = True
                self.work()
                self.confirm(message, "commit", self.state.commit)

    def match(self, message: Message) -> _Call | None:
        """The pending call this result answers: same tool name, else the oldest call of no named tool."""
        for call in self.state.pending:
            if message.tool and call.tool == message.tool:
                return call
        for call in self.state.pending:
            if call.tool is None or message.tool is None:
                return call
        return None

    def call(self, message: Message, command: str, tool: str | None) -> None:
        self.state.pending.append(_Call(_message_id(message), message.at, command[:2000], tool))
        del self.state.pending[:-MAX_PENDING]

    def result(self, message: Message, text: str, is_error: bool, call: _Call | None = None) -> None:
        # Output the person's own command printed: the latest call of no named tool is whose it is.
        call = call or next((c for c in reversed(self.state.pending) if c.tool is None), self.state.pending[-1])
        self.state.pending.remove(call)
        self.run(message, call.cmd, text, failed(text, is_error))

    def shell(self, message: Message) -> None:
        command = (message.command or message.text or "").strip()
        if not command:
            return
        self.state.shell += 1
        self.track_directory(command)
        sig = signature(command)
        if sig is not None:
            if self.state.cwd:
                self.state.dirs[self.state.cwd] = self.state.dirs.get(self.state.cwd, 0) + 1
            self.state.programs[sig.show] = self.state.programs.get(sig.show, 0) + 1
        self.run(message, command, "", message.is_error)

    def track_directory(self, command: str) -> None:
        """Follow `cd` into projects: absolute or home paths name a project, relative ones stay inside it."""
        match = re.match(r"^\s*(?:cd|pushd)\s*(\S*)", command)
        if not match:
            return
        target = match.group(1).strip("'\"")
        if not target or target == "~":
            self.state.cwd = None
        elif target.startswith(("/", "~")):
            name = re.split(r"[/\\]", target.rstrip("/\\"))[-1]
            self.state.cwd = name[:120] or None

    def run(self, message: Message, command: str, output: str, did_fail: bool) -> None:
        """A command ran and passed or failed: open, close or forget a failure."""
        state = self.state
        sig = signature(command)
        if sig is None:
            return
        if sig.test:
            counts = test_counts(output)
            # The runner's own counts outweigh an "Error:" that some line of its output printed.
            bad = did_fail if counts is None else bool(re.search(r"\b[1-9]\d* (?:failed|error)", counts))
            state.tests = "fail" if bad else "pass"
            state.test_line = counts
            state.tests_failed = state.tests_failed or bad
        if not sig.readonly and message.role != SHELL:
            self.work()
        if did_fail:
            if sig.readonly:
                return
            if state.trouble is None:
                err = error_line(output)
                state.trouble = _clip(f"`{_command_line(command)}`" + (f" ({err})" if err else ""), 240)
            if not any(f.key == sig.key for f in state.open):
                failure = _Failure(
                    _message_id(message), message.at, _command_line(command), sig.key, error_line(output)
                )
                state.open.append(failure)
                del state.open[:-MAX_OPEN]
            state.last_fail = next(f.id for f in state.open if f.key == sig.key)
            return
        just_failed = state.last_fail
        state.last_fail = None
        same = next((f for f in state.open if f.key == sig.key), None)
        if same is None and sig.key == "git commit":
            self.confirm(message, "commit", _commit_message(command) or _command_line(command))
            return
        if same is None and sig.test and any(f.said and f.changed for f in state.open):
            self.confirm(message, "rerun", sig.show)
            return
        if same is None:
            typo = next((f for f in state.open if f.id == just_failed), None)
            if typo and _similar(typo.cmd, _command_line(command)):
                state.open.remove(typo)  # `gti status` then `git status`: a typo, not a fix
            elif not sig.readonly and not sig.test and sig.key not in _BOOKKEEPING:
                # Running the tests or staging files looks at the fix; it is not one.
                for failure in state.open:
                    if len(failure.acts) < 3 and _command_line(command) not in failure.acts:
                        failure.acts.append(_command_line(command)[:120])
            return
        state.open.remove(same)
        # Re-run at once with nothing in between: a typo corrected, or a flaky run; nothing learnt.
        if just_failed == same.id or not (same.files or same.acts or same.how or same.why):
            return
        # The problem the person reported is the one this run shows fixed: one memory for both.
        for reported in [f for f in state.open if f.said]:
            state.open.remove(reported)
            same.lines = ([line for line in reported.lines if line not in same.lines] + same.lines)[:3]
        self.fixed(same, "rerun", sig.show, FIX_IMPORTANCE)

    def fixed(self, failure: _Failure, how: str, detail: str, importance: float) -> None:
        state = self.state
        if state.fixes >= MAX_FIXES:
            return
        state.fixes += 1
        state.fixed.append(_clip(f"`{failure.key}`" + (f" ({failure.err})" if failure.err else ""), 160))
        self.items.append(
            Item(
                key=f"fix:{failure.id}",
                type="procedural",
                content=fix_text(failure, how, detail, state.lang),
                importance=importance,
                message_id=failure.id,
                at=failure.at,
                tags=["fix", self.source],
            )
        )

    def confirm(self, message: Message, how: str, detail: str, strong: bool = True) -> None:
        """A commit or the person's words say the change worked: the oldest problem changes were made for is fixed."""
        # A failed command waits for its re-run (aider commits before the person re-runs the test); the
        # commit confirms what only the person's words described.
        done = [f for f in self.state.open if (f.changed or f.how) and (how != "commit" or f.said)]
        if not done:
            return
        for failure in done:
            self.state.open.remove(failure)
        first = done[0]
        for other in done[1:]:  # one fix, seen as several failures: keep what each saw
            first.err = first.err or other.err
            first.lines += [line for line in other.lines if line not in first.lines][: 3 - len(first.lines)]
        importance = FIX_IMPORTANCE if how != "words" else WORDS_IMPORTANCE if strong else THANKS_IMPORTANCE
        self.fixed(first, how, _clip(detail.replace("`", "'"), 100), importance)

    def problem(self, message: Message, text: str) -> None:
        """The person's message confirms a fix, or reports a problem to fix."""
        said = fix_confirmation(text)
        if said and any(f.changed or f.how for f in self.state.open):
            self.confirm(message, "words", said[0], said[1])
            return
        if any(f.said and not f.changed for f in self.state.open):
            return  # still describing the same problem
        report = reported_problem(text)
        if report:
            err = pasted_error(text)
            failure = _Failure(_message_id(message), message.at, report, f"said:{_message_id(message)}", err, said=True)
            self.state.open.append(failure)
            del self.state.open[:-MAX_OPEN]

    def edited(self, files: list[str]) -> None:
        self.state.last_fail = None
        self.work(change=True)
        for failure in self.state.open:
            for path in files:
                if path not in failure.files and len(failure.files) < 5:
                    failure.files.append(path[:200])

    def changed(self, lines: list[str]) -> None:
        for failure in self.state.open:
            for line in lines:
                if line not in failure.lines and len(failure.lines) < 3:
                    failure.lines.append(line)


def _command_line(command: str) -> str:
    """A command as a memory quotes it: its first line, unwrapped from `bash -lc`, without backticks."""
    inner = re.match(r"^\s*(?:ba|z|da|k)?sh\s+-\w*c\w*\s+(['\"])(.*)\1\s*$", command, re.DOTALL)
    if inner:
        command = inner.group(2)
    lines = command.strip().splitlines() or [""]
    first = lines[0] + (" …" if len(lines) > 1 else "")
    return _clip(first.replace("`", "'"), 120)


def _similar(a: str, b: str) -> bool:
    return a != b and difflib.SequenceMatcher(None, a, b).ratio() >= 0.75


_BOOKKEEPING = frozenset({"git add", "git commit", "git push", "git stash", "git pull", "git fetch", "git checkout"})


def _output_of(text: str, command: str) -> bool:
    """Whether a tool message's text is its command's output rather than its input (the command itself)."""
    head = " ".join(command.split())[:60]
    return bool(text.strip()) and head not in " ".join(text.split())


def _commit_message(command: str) -> str | None:
    match = re.search(r"\s-\w*m\s*(['\"])(.+?)\1", command)
    return match.group(2).split("\n")[0] if match else None
