"""Outcome: whether a command's output says it failed (and its error line), the files a tool changed, and what
the assistant reports it did and why things failed."""

from __future__ import annotations

import re

from engram_cli.ingest.base import Message
from engram_cli.ingest.extract.wording import _CJK_CHAR, _FENCE, MAX_SENTENCE, _clip, _join, _sentences, _weight

# What a failed run prints. The head of the output is all the importer keeps (base.TOOL_EXCERPT).
_FAILURE = re.compile(
    r"\b[1-9]\d* (?:failed|errors?|failures?)\b|\bFAILED\b|^FAIL\b|^=+ (?:FAILURES|ERRORS) =+$|"
    r"\s(?=[.sxEF]*F)[.sxEF]+\s+\[\s*\d+%\]|Traceback \(most recent call last\)|"
    r"^\s*\w*(?:Error|Exception):(?! \(none\)$)|"
    r"^E {2,}\S|\berror\[E\d+\]|^error(?:\[|:)|: error(?::| TS\d+)|npm ERR!|ERR_PNPM_|error Command failed|"
    r"\bexit(?:ed)?(?: with)? (?:code|status)[:= ]*[1-9]|\"exit_code\"\s*:\s*[1-9]|\bExit [Cc]ode:? [1-9]|"
    r"returned non-zero exit status|command not found|^fatal:|^panic:|Segmentation fault|BUILD FAILED|"
    r"\bBuild failed\b|报错|報錯|错误[:：]|錯誤[:：]|失败|失敗",
    re.MULTILINE,
)
# A summary that says all went well outweighs an "Error:" some passing test printed on the way.
_SUCCESS = re.compile(
    r"^=+ (?:\d+ (?:passed|skipped|xfailed|deselected|warnings?)(?:, )?)+ in [\d.]+s|^OK(?: \(|$)|"
    r"test result: ok\.|\bTests:\s+\d+ passed, \d+ total|\"exit_code\"\s*:\s*0\b|\bExit code:? 0\b",
    re.MULTILINE,
)
# Lines that say what went wrong, best first: pytest's "E  " lines, exception names, error/fatal lines.
_ERROR_LINES = [
    re.compile(r"E {2,}(\S.*)"),
    re.compile(r"((?:[\w.]+(?:Error|Exception|Failure|Interrupt))(?::.*)?)"),
    re.compile(r"((?:(?:error|fatal|panic|FAILED|FAIL)\b|error\[E\d+\]|npm ERR!).*)"),
    re.compile(r"(.*?(?:command not found|报错|報錯|错误|錯誤|失败|失敗).*)"),
    re.compile(r"(.*?\b(?:error|failed|failure)\b.*)", re.IGNORECASE),
]
# Gemini CLI ends every shell output with "Error: (none)" when there was none.
_NOISE_ERROR_LINE = re.compile(r"^(?:npm ERR! (?:code|errno|A complete log|\s*$)|FAILED\s*$|Error: \(none\)$)")


def failed(text: str, is_error: bool = False) -> bool:
    """Whether a command's output (or its is_error flag) says it failed."""
    if is_error:
        return True
    head = text[:4000]
    return bool(_FAILURE.search(head)) and not _SUCCESS.search(head)


def error_line(output: str) -> str | None:
    """The line of a failure's output that says what went wrong, for a memory: clipped, no backticks."""
    lines = [ln.rstrip()[:500] for ln in output[:4000].splitlines()]
    for pattern in _ERROR_LINES:
        for raw in lines:
            # pytest's "E   " prefix is only meaningful at the start of the raw line.
            match = pattern.fullmatch(raw) if pattern is _ERROR_LINES[0] else pattern.fullmatch(raw.strip())
            line = match.group(1).strip() if match else ""
            if line and not _NOISE_ERROR_LINE.match(line):
                return _clip(line.replace("`", "'"), 140)
    return None


_PATH_KEYS = re.compile(
    r'"(?:file_path|filePath|path|target_file|file|filename|notebook_path)"\s*:\s*"([^"\n]{1,300})"'
)
# Unambiguous wherever they appear: a patch header, aider's status line, an edit tool's report.
_PATH_MARKERS = re.compile(
    r"\*\*\* (?:Update|Add) File: (\S+)|Applied edit to (\S+)|"
    r"The file (\S+) has been (?:updated|created|written)|File created successfully at: (\S+)"
)
# Only in what an edit tool was given (a diff header or an XML path in a read is not an edit).
_EDIT_PATHS = re.compile(r"^\+\+\+ b/(\S+)|<path>([^<\n]{1,300})</path>", re.MULTILINE)
_EDIT_TOOL = re.compile(r"edit|write|patch|replace|insert|create|notebook|apply", re.IGNORECASE)
_FILE_TOKEN = re.compile(r"[\w./~-]*[\w-]\.[A-Za-z]\w{0,7}")
_COMMIT_LINE = re.compile(
    r"^(?:Commit [0-9a-f]{7,40} |\[[^\]\s]+(?: \([^)\n]*\))? [0-9a-f]{7,40}\] )(.+)$", re.MULTILINE
)


def _relative(path: str, project: str | None) -> str:
    path = path.strip().strip("'\"")
    if project:
        root = project.rstrip("/\\")
        if path.startswith(root + "/") or path.startswith(root + "\\"):
            return path[len(root) + 1 :]
    if path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", path):
        return "/".join(re.split(r"[/\\]", path)[-2:])
    return path


def _file_tokens(text: str) -> list[str]:
    """Words that look like file names (a dot and an extension), in order."""
    words = (w.strip("'\"`,;:()[]{}<>") for w in text.split())
    return [w for w in words if len(w) <= 300 and _FILE_TOKEN.fullmatch(w)]


def edited_files(message: Message, project: str | None) -> list[str]:
    """Files a tool message (or a patching command) changed, relative to the project where possible."""
    text = (message.text or "")[:4000]
    if message.command:
        text += "\n" + message.command[:4000]
    found = [p for m in _PATH_MARKERS.finditer(text) for p in m.groups() if p]
    tool = message.tool or ""
    viewing = re.search(r'"command"\s*:\s*"view"', text)  # the editor tool also just shows files
    if _EDIT_TOOL.search(tool) and "todo" not in tool.lower() and not viewing:
        found += [p for m in _EDIT_PATHS.finditer(text) for p in m.groups() if p]
        found += _PATH_KEYS.findall(text)
        if not found:
            found += _file_tokens(text)[:1]
    if message.command and re.search(r"\bsed\s+(?:-\w+\s+)*-i", message.command):
        found += _file_tokens(message.command.split("\n")[0])[-1:]
    out: list[str] = []
    for path in found:
        rel = _relative(path, project)
        if rel and rel not in out:
            out.append(rel)
    return out


# --- assistant prose -----------------------------------------------------------------------------

_TOOL_XML = re.compile(r"<([a-z]+_[a-z_]+|thinking)>.*?(?:</\1>|\Z)", re.DOTALL)
_COMPLETION = re.compile(r"<attempt_completion>.*?<result>(.*?)(?:</result>|\Z)", re.DOTALL)
_INTENTION = re.compile(
    r"^(?:(?:now|next|first|ok(?:ay)?|great|so|then)[,!.]?\s+)*(?:let me|let's|i'll|i will|i'm going to|i am going to|"
    r"i need to|we need to|i'm|i am)\b|^(?:让我|讓我|我来|我來|我将|我將|我先|接下来|接下來|首先|现在|現在)|^je vais\b",
    re.IGNORECASE,
)
_FILLER_REPLY = re.compile(
    r"^(?:(?:i understand|understood|sure|certainly|of course|got it|okay|ok|great|perfect|done|absolutely|"
    r"you're right|good (?:catch|point)|parfait|好的|明白了|明白|当然|當然|没问题|沒問題)\b[\s,.!！。]*)+$",
    re.IGNORECASE,
)
_META = re.compile(r"^(?:here(?:'s| is| are)|below|summary|以下|下面)\b|[:：]$", re.IGNORECASE)
_ACTION = re.compile(
    r"^(?:(?:now|so|ok(?:ay)?|then|next|to fix (?:this|it|that)|the fix is to)[,\s]+)*"
    r"(?:i(?:'ll| will| am going to|'m going to)|let me|let's|i(?:'ve| have)|we need to|i need to|"
    r"the fix is to|fixed by)\s+(?P<rest>.+)",
    re.IGNORECASE,
)
_DONE = re.compile(
    r"^(?P<rest>(?:fixed|updated|changed|added|removed|replaced|moved|renamed|pinned|installed|switched|reverted|"
    r"corrected|adjusted|wrapped|mocked|patched|bumped|downgraded|upgraded|excluded|skipped|disabled|enabled|"
    r"created|deleted|set|made)\b.+)",
    re.IGNORECASE,
)
_ZH_ACTION = re.compile(
    r"^(?:我|让我|讓我|我来|我來|我将|我將|我會|我会|现在|現在|接下来|接下來)?\s*(?:已经|已經|已)?\s*"
    r"(?P<rest>(?:修复|修復|修改|改成|改为|改為|更新|添加|增加|删除|刪除|移除|替换|替換|固定|安装|安裝|把).+)"
)
# "Let me run the tests" is looking, not fixing.
_LOOKING = re.compile(
    r"^(?:run|re-?run|check|look|read|see|examine|inspect|search|find|verify|view|open|analy[sz]e|investigate|"
    r"explore|try|test|start|first|now|also|review|understand|debug|take|get|gather|list|confirm|continue)\b",
    re.IGNORECASE,
)
_CAUSE = re.compile(
    r"\b(?:because|caused by|due to|the (?:issue|problem|error|failure|bug|cause) (?:is|was)|the reason|"
    r"root cause|turns out|fails? since|this happens)\b|"
    r"因为|因為|原因|由于|由於|问题是|問題是|问题在于|問題在於|导致|導致",
    re.IGNORECASE,
)


def _assistant_lines(text: str) -> list[list[str]]:
    """The prose of an assistant message as lines of sentences (tool-call XML, code, headings, tables dropped)."""
    completion = _COMPLETION.search(text)
    if completion:  # Cline/Roo's final report
        text = completion.group(1)
    text = _TOOL_XML.sub(" ", text)
    text = re.sub(r"\[Response interrupted[^\]]*\]", " ", text)
    text = _FENCE.sub("\n", text).replace("’", "'")
    out: list[list[str]] = []
    for line in text.splitlines():
        if re.match(r"^\s*(?:#{1,6}\s|\||---)", line):
            continue
        sentences = [s for s in _sentences(re.sub(r"\*\*|__|`", "", line)) if len(s) <= MAX_SENTENCE]
        if sentences:
            out.append(sentences)
        if len(out) >= 20:
            break
    return out


def _assistant_sentences(text: str) -> list[str]:
    return [s for line in _assistant_lines(text) for s in line]


def outcome(text: str) -> str | None:
    """What an assistant message reports: its first sentence, two when short; None for "Let me …"."""
    for line in _assistant_lines(text):
        kept: list[str] = []
        for sentence in line:
            if _FILLER_REPLY.match(sentence) or _META.search(sentence):
                continue
            if _INTENTION.match(sentence):
                return None
            # A short line without a full stop is a label ("Changes made"), not a report.
            if len(sentence.split()) <= 3 and not _CJK_CHAR.search(sentence) and not re.search(r"[.!。！]$", sentence):
                continue
            kept.append(sentence)
            if len(kept) == 2 or _weight(sentence) >= 80:
                break
        if kept:
            return _clip(_join(kept), 220)
    return None


def explanation(text: str) -> tuple[str | None, str | None]:
    """From an assistant message: what it did to fix things ("pin the clock…") and why it failed."""
    how = why = None
    # "The pool was renamed; I'll use pool.get()": the action is often the second clause.
    clauses = [c.strip() for s in _assistant_sentences(text) for c in re.split(r"[;；]\s*|,\s+so\s+", s)]
    for sentence in filter(None, clauses):
        if how is None:
            match = _ACTION.match(sentence) or _DONE.match(sentence) or _ZH_ACTION.match(sentence)
            if match and not _LOOKING.match(match.group("rest")):
                rest = match.group("rest").rstrip(" .:;。：；")
                how = _clip(rest[:1].lower() + rest[1:] if rest[1:2].islower() else rest, 200)
        if why is None and _CAUSE.search(sentence):
            why = _clip(sentence.rstrip(" .:;。：；"), 200)
    return how, why
