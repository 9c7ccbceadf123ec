"""Wording: what a person typed without what tools wrapped around it, cut into sentences and clipped for a memory."""

from __future__ import annotations

import re

from engram_cli.lang.text import script_of

# A "sentence" longer than this has no punctuation to split on (a pasted line of data).
MAX_SENTENCE = 400


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA_HANGUL = re.compile("[\u3040-\u30ff\uac00-\ud7af]")
_CJK_CHAR = re.compile(f"[{_CJK}]")
# Characters written without spaces between them: CJK ideographs, kana, full-width punctuation.
_WIDE = re.compile(f"[{_CJK}\u3040-\u30ff\u3000-\u303f\uff00-\uffef]")


# Blocks tools inject into the user's turn; importers drop most, these are caught if one slips through.
_NOISE_TAGS = (
    "environment_details", "environment_context", "system-reminder", "user_instructions", "workspace_diagnostics",
    "command-message", "command-name", "local-command-stdout", "local-command-stderr", "local-command-caveat",
    "thinking", "task-notification", "ide_selection", "ide_opened_file", "INSTRUCTIONS", "turn_aborted",
    "subagent_notification", "files", "file_content",
)  # fmt: skip
_UNWRAP_TAGS = ("task", "feedback", "user_message", "user_query", "answer", "command-args")
# Text in the user's role that the tool wrote (tool results, resumption notices, compaction summaries).
_INJECTED = re.compile(
    r"^(?:\[TASK RESUMPTION\]|\[ERROR\]|\[[\w ]+ for '[^\n]*\] Result:|\[Request interrupted|\[Image\b|"
    r"This session is being continued from a previous conversation|Caveat: The messages below|"
    r"The tool execution failed|# AGENTS\.md|<user_instructions>|<environment_context>|<permissions)",
    re.IGNORECASE,
)
_IDE_REQUEST = re.compile(r"^##\s*My request for \w+:\s*$", re.MULTILINE)
_COMMAND_NAME = re.compile(r"<command-name>\s*/?([\w:.-]+)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_FEEDBACK = re.compile(r"<feedback>(.*?)</feedback>", re.DOTALL)
_BASH_INPUT = re.compile(r"<bash-input>(.*?)</bash-input>", re.DOTALL)
_BASH_OUTPUT = re.compile(r"<bash-(?:stdout|stderr)>", re.IGNORECASE)
# Aider's /test, /run and /lint run a command and show its output.
_RUN_COMMAND = re.compile(r"^/(?:test|run|lint)\s+(\S.*)", re.DOTALL)
_SLASH = re.compile(r"^/([\w:.-]+)(?:\s+(.*))?$", re.DOTALL)

_FENCE = re.compile(r"```.*?(?:```|\Z)|^[ \t]*~~~.*?(?:^[ \t]*~~~|\Z)", re.DOTALL | re.MULTILINE)
_INDENTED = re.compile(r"^(?: {4,}|\t)(?![-*•]\s|\d+[.)]\s)")
_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")
_SENTENCE_END = re.compile(r"\n+|(?<=[。！？])|(?<=[.!?])\s+|(?<=[!?])(?=[" + _CJK + "])")
_QUOTED = re.compile(r'"[^"\n]{0,200}"|“[^”\n]{0,200}”|「[^」\n]{0,200}」|『[^』\n]{0,200}』')
_FILLER = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|also|and|but|btw|by the way|oh|hmm+|right|alright|yeah|yes|hey|actually|"
    r"one more thing)\b[\s,:;.!]+|"
    r"(?:嗯+|好的?|那个|那個|对了|對了|另外|还有|還有|然后|然後|哦|噢)[\s，,、:：!！。]+)+",
    re.IGNORECASE,
)
_ACK = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|thx|ok|okay|k|yes|yep|y|no|n|sure|continue|go on|go ahead|proceed|next|"
    r"done|test|testing|ping|lgtm|great|good|nice|cool|perfect|stop|retry|try again|again|do it|yes please|"
    r"please continue|keep going|你好|您好|继续|繼續|好|好的|是|是的|可以|行|谢谢|謝謝|嗯|对|對|没问题|沒問題|"
    r"测试|測試|开始|開始)$",
    re.IGNORECASE,
)
# Openers that make a request polite without changing it: "asked to <the rest>".
_POLITE = re.compile(
    r"^(?:(?:please|pls|can you|could you|would you|will you|can u|help me|i need you to|i want you to|"
    r"i'd like you to|i would like you to)\b[\s,]*)+",
    re.IGNORECASE,
)
# A request starting with one of these reads well after "asked to".
_IMPERATIVES = _words(
    """add adjust allow analyze analyse audit build bump change check clean cleanup configure convert create debug
    delete deploy describe design document draft drop enable disable explain extract find finish fix format generate
    get handle help implement improve install investigate list make merge migrate move optimize optimise port prepare
    refactor reduce remove rename reorganize replace rewrite review revert run set setup show simplify sort speed split
    summarize summarise support switch test translate tidy track turn undo update upgrade use validate verify write"""
)


def _unwrap(text: str) -> str:
    for tag in _NOISE_TAGS:
        text = re.sub(rf"<{tag}\b[^>]*>.*?(?:</{tag}>|\Z)", " ", text, flags=re.DOTALL)
    for tag in _UNWRAP_TAGS:
        text = re.sub(rf"</?{tag}\b[^>]*>", " ", text)
    return text


def _user_text(text: str) -> str | None:
    """What the person typed, without what tools wrapped around it; None for text the tool wrote."""
    feedback = _FEEDBACK.search(text)
    if feedback:  # Cline/Roo put the person's words inside an approval notice
        text = feedback.group(1)
    name = _COMMAND_NAME.search(text)
    if name:
        args = _COMMAND_ARGS.search(text)
        text = "/" + name.group(1) + (" " + args.group(1).strip() if args else "")
    stripped = text.strip()
    if _INJECTED.match(stripped):
        return None
    request = _IDE_REQUEST.search(stripped)
    if request:  # Codex in an IDE: the context comes first, the request after this heading
        stripped = stripped[request.end() :]
    cleaned = _unwrap(stripped).strip()
    return cleaned or None


def _prose(text: str) -> str:
    """Text without code blocks, quoted lines or indented blocks (pasted code and logs)."""
    text = _FENCE.sub("\n", text)
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith(">") and not _INDENTED.match(ln)]
    return "\n".join(lines).strip()


def _sentences(text: str) -> list[str]:
    out = []
    for part in _SENTENCE_END.split(text):
        part = _BULLET.sub("", part).strip()
        if part:
            out.append(part)
    return out


def _strip_filler(sentence: str) -> str:
    return _FILLER.sub("", sentence).strip()


def _weight(text: str) -> int:
    cjk = len(_CJK_CHAR.findall(text))
    return len(text) - cjk + 3 * cjk


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _clip(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters."""
    text = _squash(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:，；：") + "…"


def _join(sentences: list[str]) -> str:
    """Sentences joined back, adding the full stop a line break stood for (no space after Chinese)."""
    out = ""
    for sentence in sentences:
        if out and not re.search(r"[.!?。！？;；:：…]$", out):
            out += "。" if _WIDE.match(out[-1]) else "."
        out += ("" if not out or _WIDE.match(out[-1]) else " ") + sentence
    return out


def _is_chinese(text: str) -> bool:
    return script_of(text) == "cjk" and not _KANA_HANGUL.search(text)
