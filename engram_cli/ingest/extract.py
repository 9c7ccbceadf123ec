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
  roles' text and long pastes (over :data:`LONG_MESSAGE`) never count.
- **procedural** error → fix: a command that failed and later passed (the same program and
  subcommand), with what changed in between (files edited, commands run, the assistant's
  sentence saying what it did or why it failed). The open failure travels in the digest, so
  the fix may arrive in a later read of the session.

``extract`` is called once per new part of a session with the digest it returned last time;
everything it must remember between parts is in that small JSON dict.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engram_cli.errors import InvalidInput
from engram_cli.ingest.base import ASSISTANT, SHELL, TOOL, USER, Message, Session
from engram_cli.lang.text import STOPWORDS, clean, content_hash, script_of
from engram_cli.timeutil import parse_time


@dataclass
class Item:
    """One memory drawn from a session, with where it came from."""

    key: str  # stable across re-reads: "episode", "pref:<id>", "decision:<id>", "remember:<id>", "fix:<id>"
    type: str  # "episodic" | "semantic" | "procedural"
    content: str
    importance: float  # 0..1
    message_id: str | None  # the message it came from (provenance), None for the episode
    at: str | None  # ISO time of that message (the session's last time for the episode)
    tags: list[str]  # "preference" | "decision" | "remember" | "fix" | "session", plus the source name


# --- bounds ---------------------------------------------------------------------------------------

# A message longer than this (CJK characters weigh 3: one carries about as much as three
# Latin letters) is a paste — a spec, a log, a file — and a cue inside it is incidental.
# 800 is about 130 English words or 270 Chinese characters: longer than any instruction
# people type, shorter than most pastes.
LONG_MESSAGE = 800
# A "sentence" longer than this has no punctuation to split on (a pasted line of data).
MAX_SENTENCE = 400
# Cue sentences kept per semantic memory: the cue and, at most, one more cue next to it.
KEEP_SENTENCES = 2
SEMANTIC_CHARS = 300
# Per session: beyond this many preferences, the later ones are mostly the same request restated.
MAX_SEMANTIC = 12
# Per session: fixes past this many are the same struggle at length, not new knowledge.
MAX_FIXES = 5
# Failures waiting for their fix; older ones are dropped (a fix an hour later is rarely related).
MAX_OPEN = 3
# Tool calls waiting for their result (parallel calls); the oldest is dropped past this.
MAX_PENDING = 6
# Shell history: this many commands in one project directory make a day worth an episode.
SHELL_BUSY = 20

STRONG, MEDIUM, WEAK = 0.85, 0.7, 0.55
REMEMBER, DECISION, PREFERENCE = "remember", "decision", "preference"
# Which kind names a message whose sentences carry cues of several kinds at the same strength.
_KIND_RANK = {REMEMBER: 3, DECISION: 2, PREFERENCE: 1}
_KEY_PREFIX = {REMEMBER: "remember", DECISION: "decision", PREFERENCE: "pref"}

EPISODE_IMPORTANCE = 0.35
SHELL_EPISODE_IMPORTANCE = 0.3
BUSY_EPISODE_IMPORTANCE = 0.4  # something was fixed or committed
REMEMBER_EPISODE_IMPORTANCE = 0.5  # the person asked for something to be remembered here
FIX_IMPORTANCE = 0.6
# A digest written by another version of these rules is not read: the session starts over.
DIGEST_VERSION = 1


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_KANA_HANGUL = re.compile("[\u3040-\u30ff\uac00-\ud7af]")
_CJK_CHAR = re.compile(f"[{_CJK}]")
# Characters written without spaces between them: CJK ideographs, kana, full-width punctuation.
_WIDE = re.compile(f"[{_CJK}\u3040-\u30ff\u3000-\u303f\uff00-\uffef]")


# --- cleaning what people typed ------------------------------------------------------------------

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


# --- cues ----------------------------------------------------------------------------------------

_LEAD = r"^(?:(?:please|pls|plz|also|and|but|so|just|then|now|oh|ok(?:ay)?)[\s,]+)*"
_SUBJ = r"(?:(?:you|we|i)(?:\s+(?:should|must|will|need to)|'ll)?\s+)?"
_WE_USE = r"(?:we|i)(?:\s+use|\s+are using|'re using|'m using|\s+am using|\s+have been using|'ve been using)"
_NOT_FEEDBACK = r"(?!it\b|this\b|that\b|these\b|those\b|the way\b|what\b|how\b|your?\b|when you\b)"
_NOT_IDIOM = r"(?!worry\b|bother\b|know\b|think\b|understand\b|mind\b|care\b|see\b|get\b|remember\b|have\b|need\b)"
_ZH_START = r"(?:^|(?<=[，,；;：:、\s（(]))"
_ZH_LEAD = r"(?:请|請|麻烦|麻煩|你|您|我们|我們|咱们|咱們|大家|也|都|就|还有|還有|另外)*"

_CUES: list[tuple[re.Pattern[str], float, str]] = [
    (re.compile(pattern, re.IGNORECASE), level, kind)
    for pattern, level, kind in [
        # explicit requests to remember
        (rf"{_LEAD}(?:remember|memori[sz]e)\b(?!\s+me\b)", STRONG, REMEMBER),
        (rf"{_LEAD}(?:note|keep in mind|bear in mind)\s+that\b", STRONG, REMEMBER),
        (r"\b(?:keep|bear) (?:this |that |it )?in mind\b", STRONG, REMEMBER),
        (r"\b(?:don't|do not|never) forget\b|\bfor future reference\b|\bmake a note\b", STRONG, REMEMBER),
        (r"(?<![没沒不])(?:记住|記住)|记一下|記一下|记下来|記下來|(?:别|別|不要)忘(?:了|记|記)", STRONG, REMEMBER),
        (r"(?:请|請|要)(?:记得|記得)|(?:记得|記得)要", STRONG, REMEMBER),
        # always / never
        (rf"{_LEAD}{_SUBJ}always\b(?!\s+(?:forget|seem|wonder)\b)", STRONG, PREFERENCE),
        (rf"{_LEAD}{_SUBJ}never\b(?!\s+(?:mind|forget|seem|knew|know)\b)", STRONG, PREFERENCE),
        (r"\bplease\s+(?:always|never)\b|\b(?:don't|do not)\s+ever\b|\bnever ever\b", STRONG, PREFERENCE),
        (r"\b(?:make|be) sure (?:to|you|that you)\s+(?:always|never)\b", STRONG, PREFERENCE),
        (rf"{_LEAD}(?:don't|do not)\s+\w+(?:\s+\w+)?\s+(?:any ?more|again)\b", STRONG, PREFERENCE),
        (r"(?:请|請)(?:一直|始终|始終|总是|總是|永远|永遠|每次都)", STRONG, PREFERENCE),
        (r"(?:一直|始终|始終)都?(?:用|使用|保持|要)|每次都(?:要|用|先|得)|务必|務必", STRONG, PREFERENCE),
        (r"(?:永远|永遠|千万|千萬|绝对|絕對|绝|絕)(?:不要|别|別|不能|不可以|不准|不许|不許)", STRONG, PREFERENCE),
        (r"(?<![要特区區分差个個告])(?:不要|别|別)再", STRONG, PREFERENCE),
        # a change from now on
        (r"\bfrom now on\b|\bgoing forward\b|\bfrom here on\b|\bhenceforth\b|\bfrom today on\b", STRONG, DECISION),
        (rf"{_LEAD}in (?:the )?future\b", STRONG, DECISION),
        (
            # "以后再改" is "change it later", not "from now on".
            _ZH_START + _ZH_LEAD + r"(?:以后|以後|今后|今後|往后|往後)(?!再|有空|有時間|有时间|可以|可能|会|會)|"
            r"从现在(?:起|开始)|從現在(?:起|開始)|"
            r"从今(?:以后|往后)|從今(?:以後|往後)",
            STRONG,
            DECISION,
        ),
        # preferences
        (r"\b(?:i|we)(?:'d| would)?\s+(?:\w+ly\s+)?prefer\b|\b(?:my|our) preference is\b", MEDIUM, PREFERENCE),
        (r"\b(?:i|we)(?:'d| would) rather\b", MEDIUM, PREFERENCE),
        (
            rf"\bi\s+(?:really\s+|also\s+|generally\s+)?(?:like|love|hate|dislike|don't like|do not like|"
            rf"can't stand)\s+{_NOT_FEEDBACK}",
            MEDIUM,
            PREFERENCE,
        ),
        (
            rf"{_LEAD}{_WE_USE}\s+\S.*?\bnot\b",
            MEDIUM,
            PREFERENCE,
        ),
        (
            rf"{_LEAD}(?:{_WE_USE}|use)\s+\S.*?(?:,\s*not\b|\brather than\b|\bover\b)",
            MEDIUM,
            PREFERENCE,
        ),
        (
            r"我(?:们|們)?(?:比较|比較|更|还是|還是|一般|通常|向来|向來|一向)?"
            r"(?:喜欢|喜歡|偏好|偏爱|偏愛|倾向于|傾向於|习惯|習慣|爱用|愛用)(?!这|這|那|它|你|您)",
            MEDIUM,
            PREFERENCE,
        ),
        (r"我(?:们|們)?(?:不喜欢|不喜歡|讨厌|討厭|不习惯|不習慣)", MEDIUM, PREFERENCE),
        (r"(?:统一|統一)(?:用|使用|采用|採用)", MEDIUM, PREFERENCE),
        (r"(?:用|使用)[^，,。]{1,30}?(?:而不是|而非|不用|不要用|别用|別用)", MEDIUM, PREFERENCE),
        # decisions
        (r"\b(?:we|i)(?:'ve| have)?\s+(?:\w+ly\s+)?decided\b|\b(?:the|our) decision is\b", MEDIUM, DECISION),
        (
            r"\b(?:let's|lets|let us|we'll|we will|we're going to|we are going to)\s+(?:go|stick)\s+with\b",
            MEDIUM,
            DECISION,
        ),
        (
            r"\bwe(?:'re| are) going with\b|\b(?:let's|lets|let us)\s+(?:use|switch|move|standardi[sz]e|migrate)\b",
            MEDIUM,
            DECISION,
        ),
        (r"\bwe(?:'ve| have)?\s+(?:switched|moved|migrated)\b|\b(?:we|i)\s+no longer\b", MEDIUM, DECISION),
        (rf"{_LEAD}(?:use|let's|lets|we'll|we will|we should|switch|go with)\b.*\binstead of\b", MEDIUM, DECISION),
        (
            r"(?:我|我们|我們|咱们|咱們|大家|团队|團隊|已经|已經|最后|最後|最终|最終)(?:已经|已經|还是|還是|最终|最終)?"
            r"(?:决定|決定)|(?:决定|決定)(?:了|用|使用|采用|採用|改|换|換)",
            MEDIUM,
            DECISION,
        ),
        (r"改用|换成|換成|" + _ZH_START + r"(?:那|那么|那麼)?就用", MEDIUM, DECISION),
        # weaker: bare prohibitions, house conventions
        (rf"{_LEAD}(?:don't|do not)\s+{_NOT_IDIOM}\w+|{_LEAD}avoid\s+\w+|{_LEAD}stop\s+\w+ing\b", WEAK, PREFERENCE),
        (rf"^(?:{_WE_USE}|(?:our|the) team\s+uses)\b", WEAK, PREFERENCE),
        (r"\b(?:our|the) (?:convention|rule|standard|style) (?:here )?is\b", WEAK, PREFERENCE),
        (
            _ZH_START + _ZH_LEAD + r"(?:不要|别|別|不准|不许|不許|禁止|避免|尽量|盡量)"
            r"(?!紧|緊|人|的|处|處|名|说|說|客气|客氣|急|担心|擔心|管|忘)",
            WEAK,
            PREFERENCE,
        ),
        (_ZH_START + r"我(?:们|們)(?:都|一直)?(?:用|使用)", WEAK, PREFERENCE),
    ]
]

_QUESTION_EN = re.compile(
    r"^(?:should|shall|can|could|would|will|do|does|did|is|are|am|was|were|have|has|had|may|might|must|what|why|"
    r"how|when|where|which|who|whom|whose|isn't|aren't|doesn't|didn't|won't|wouldn't|shouldn't|couldn't)\s+"
    r"(?:we|you|i|it|they|he|she|this|that|there|these|those|the|our|my|your|a|an)\b|^(?:don't|can't) you\b",
    re.IGNORECASE,
)
_QUESTION_END = re.compile(r"[?？]\s*[\"')\]）]*\s*$|[吗嗎么麼呢][\s。.!！]*$")
_QUESTION_ZH = re.compile(
    "是否|要不要|能不能|可不可以|会不会|會不會|是不是|对不对|對不對|好不好|行不行|有没有|有沒有|怎么|怎麼|为什么|為什麼|"
    "为何|為何|如何|哪个|哪個|哪些|什么|什麼"
)
_HYPOTHETICAL = re.compile(
    r"^(?:suppose|supposing|imagine|what if|hypothetically|let's say|say we|for example|for instance|e\.g\.|"
    r"if i were|假设|假設|假如|设想|設想|比如|例如|譬如|举个例子|舉個例子)",
    re.IGNORECASE,
)
_COUNTERFACTUAL = re.compile(
    r"\bif\b.*\b(?:would|could|might)\b|(?:如果|假如|要是|万一|萬一).*(?:会|會|可能)", re.IGNORECASE
)
_LOCAL = re.compile(
    r"\b(?:here(?!'s| is| are)|for now|for this|this time|yet|right now|at the moment|for the moment|"
    r"in this (?:function|file|case|test|pr|branch|commit|method|class))\b|"
    r"这里|這裡|这儿|這兒|这次|這次|暂时|暫時|先这样|先這樣|目前先|现在先|現在先",
    re.IGNORECASE,
)
_TENTATIVE = re.compile(
    r"\b(?:maybe|perhaps|possibly|might want to|not sure|wonder(?:ing)?|i guess|probably)\b|"
    r"也许|也許|或许|或許|(?<![尽盡])可能|不确定|不確定|不知道",
    re.IGNORECASE,
)

# Words that carry the cue, or point back at something said before, but say nothing on their own:
# "Let's go with option 2" or "就用这个吧" mean nothing once the conversation is gone.
_CUE_WORDS = _words(
    """remember memorise memorize note keep bear mind forget reference always never ever prefer preference rather
    like love hate dislike stand use uses using used decided decide decision going go stick switch switched move
    moved migrate migrated longer instead stop avoid convention rule standard style future now forward henceforth
    please let lets make sure again anymore today on option options approach one ones way idea solution plan
    suggestion proposal version first second third last former latter above below previous earlier yours thing
    things stuff ok okay yes sure fine good great also really"""
)
_ZH_POINTERS = re.compile(
    "这个|這個|那个|那個|这样|這樣|那样|那樣|方案|第[一二三四五六七八九十]+个?|第[一二三四五六七八九十]+個|上面|下面|"
    "上一个|上一個|这种|這種|那种|那種|一下|一点|一點|东西|東西"
)
_ZH_FUNCTION = frozenset(
    "的了是在和与與或我你您他她它们們这這那吗嗎呢吧啊也都就把被给給对對从從到用要请請再不别別没沒很还還又才"
    "会會能可以让讓得着著过過地个個些每次先总總永远遠一直务務必"
)


def _has_topic(sentence: str) -> bool:
    """The sentence names something (a tool, a habit, a file) beyond the cue itself."""
    latin = re.findall(r"[A-Za-z][\w+#]*(?:[./-][\w+#]+)*", sentence)
    if any(len(w) >= 2 and w.lower() not in STOPWORDS and w.lower() not in _CUE_WORDS for w in latin):
        return True
    chinese = sentence
    for pattern, _level, _kind in _CUES:
        chinese = pattern.sub(" ", chinese)
    chinese = _ZH_POINTERS.sub(" ", chinese)
    return sum(1 for ch in _CJK_CHAR.findall(chinese) if ch not in _ZH_FUNCTION) >= 2


def _cue(sentence: str) -> tuple[float, str] | None:
    """The strongest cue in a sentence: (importance, kind), or None when it carries none that counts."""
    if _QUESTION_END.search(sentence) or _QUESTION_EN.match(sentence) or _QUESTION_ZH.search(sentence):
        return None
    if _HYPOTHETICAL.match(sentence) or _COUNTERFACTUAL.search(sentence) or _TENTATIVE.search(sentence):
        return None
    # Cues inside quotation marks are someone else's words (an error message, a doc, a citation).
    masked = _QUOTED.sub(" Q ", sentence)
    best: tuple[float, str] | None = None
    for pattern, level, kind in _CUES:
        if pattern.search(masked) and (best is None or (level, _KIND_RANK[kind]) > (best[0], _KIND_RANK[best[1]])):
            best = (level, kind)
    if best is None or not _has_topic(sentence):
        return None
    # "Let's use a dict here", "不要动数据库，暂时": a choice for this spot or this moment. Only an
    # explicit always/never/remember outweighs the scope.
    if best[0] < STRONG and _LOCAL.search(masked):
        return None
    return best


def semantic_cues(text: str) -> list[tuple[str, float, str]]:
    """The sentences of a user message that state a preference, decision or remember request.

    Each as (sentence, importance, kind), in message order; [] for long pastes.
    """
    prose = _prose(text)
    if not prose or _weight(prose) > LONG_MESSAGE:
        return []
    hits = []
    for sentence in _sentences(prose):
        sentence = _strip_filler(sentence.replace("’", "'"))
        if not sentence or len(sentence) > MAX_SENTENCE:
            continue
        found = _cue(sentence)
        if found:
            hits.append((sentence, found[0], found[1]))
    return hits


def _semantic(message: Message, text: str, source: str) -> Item | None:
    hits = semantic_cues(text)
    if not hits:
        return None
    level, kind = max(((h[1], h[2]) for h in hits), key=lambda lk: (lk[0], _KIND_RANK[lk[1]]))
    strongest = sorted(range(len(hits)), key=lambda i: (-hits[i][1], -_KIND_RANK[hits[i][2]], i))
    kept = [hits[i][0] for i in sorted(strongest[:KEEP_SENTENCES])]
    content = _clip(_join(kept), SEMANTIC_CHARS)
    if not content:
        return None
    return Item(
        key=f"{_KEY_PREFIX[kind]}:{_message_id(message)}",
        type="semantic",
        content=content,
        importance=level,
        message_id=_message_id(message),
        at=message.at,
        tags=[kind, source],
    )


# --- commands ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """What makes two command lines "the same command": program and subcommand."""

    key: str  # "pytest", "git commit", "npm test" (npm run test → npm test)
    show: str  # how to name it in a memory: "pytest", "npm run build"
    readonly: bool  # looks at things without changing them (ls, cat, git status …)
    test: bool  # runs tests


_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;", "|&", "\n"})
_WRAPPERS = frozenset({"sudo", "time", "env", "nohup", "exec", "command", "nice", "xvfb-run", "caffeinate", "doas"})
_SKIPPED = frozenset({"cd", "pushd", "popd", "export", "source", ".", "set", "unset", "alias", "true", "false", ":"})
_SKIPPED |= frozenset({"echo", "printf", "clear", "sleep", "wait"})
_SHELLS = frozenset({"bash", "sh", "zsh", "fish", "dash", "ksh"})
_PREFIX_RUNNERS = frozenset({"npx", "bunx", "pnpx"})
_RUN_RUNNERS = frozenset({"uv", "poetry", "pdm", "hatch", "pipenv", "rye"})
_NPM_LIKE = frozenset({"npm", "pnpm", "yarn", "bun"})
# Programs whose first argument is a path or a script, not a subcommand.
_PATH_RUNNERS = _words(
    """pytest jest vitest mocha ava rspec phpunit node deno python ruby perl php tsc mypy pyright eslint prettier
    black flake8 pylint tox unittest ctest behave nose2 playwright cypress bash sh"""
)
# Programs that run a script: the script names the command.
_INTERPRETERS = _words("python node deno ruby perl php bash sh")
_TEST_PROGRAMS = _words("pytest jest vitest mocha ava rspec phpunit tox unittest ctest behave nose2 playwright")
_READONLY = _words(
    """ls cat head tail less more grep rg ag ack find fd tree pwd which whereis type wc stat file du df env printenv
    history man date whoami id uname hostname diff cmp jq bat nl od xxd"""
)
_READONLY_GIT = _words("status log diff show blame remote rev-parse ls-files grep describe reflog shortlog")
# A subcommand or script name as a memory may show it. No ":" (``admin:PASS`` is how credentials are
# passed), no "=", "/" or "@": what a signature names must never be an argument's value.
_SUBCOMMAND = re.compile(r"^[A-Za-z][\w-]*$")
_SCRIPT = re.compile(r"^\w[\w:.+-]*$")  # script names: manage.py, npm's test:unit


def _tokens(command: str) -> list[str]:
    command = command[:2000]
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)[:200]
    except ValueError:  # unbalanced quotes: a plain split still finds the program
        return command.split()[:200]


def signature(command: str, depth: int = 0) -> Signature | None:
    """The signature of the first real command in a command line (after cd, env, wrappers); None if none."""
    segment: list[str] = []
    segments: list[list[str]] = []
    piped = False
    for token in _tokens(command):
        if token in _SEPARATORS:
            if segment and not piped:
                segments.append(segment)
            # In a pipeline only the first program says what ran: `pytest | tail` is pytest.
            piped = token in ("|", "|&")
            segment = []
        else:
            segment.append(token)
    if segment and not piped:
        segments.append(segment)
    for words in segments:
        found = _segment_signature(words, depth)
        if found:
            return found
    return None


def _program(word: str) -> str:
    name = re.split(r"[/\\]", word)[-1].lower()
    name = re.sub(r"\.exe$", "", name)
    if re.fullmatch(r"python[\d.]*|py", name):
        return "python"
    if re.fullmatch(r"pip[\d.]*", name):
        return "pip"
    return "pytest" if name == "py.test" else name


def _subcommand(args: list[str]) -> str:
    """The subcommand in a program's arguments: the first word that is neither an option nor may be one's value.

    The word after an option without ``=`` can be that option's value (``curl -u admin:PASS``,
    ``mysql -u root``, ``kubectl -n prod get``), and a value can be a credential: it is never
    taken, at the price of missing the subcommand after a flag that takes none (``git --no-pager log``).
    """
    after_option = False
    for arg in args:
        if arg.startswith("-"):
            after_option = "=" not in arg
            continue
        if after_option:
            after_option = False
            continue
        return arg if _SUBCOMMAND.match(arg) else ""
    return ""


def _segment_signature(words: list[str], depth: int) -> Signature | None:
    i = 0
    while i < len(words) and (re.match(r"^[A-Za-z_]\w*=", words[i]) or _program(words[i]) in _WRAPPERS):
        i += 1
        while i < len(words) and (words[i].startswith("-") or re.fullmatch(r"\d+[smh]?", words[i])):
            i += 1  # wrapper options (sudo -E, timeout 30)
    if i >= len(words):
        return None
    prog, args = _program(words[i]), words[i + 1 :]
    if prog == "timeout" and args:
        return _segment_signature(args[1:] if re.fullmatch(r"[\d.]+[smhd]?", args[0]) else args, depth)
    if prog in _SKIPPED:
        return None
    if prog in _SHELLS and depth < 3:
        for j, arg in enumerate(args[:-1]):
            if re.fullmatch(r"-\w*c\w*", arg):  # bash -c / -lc / -ic "inner command"
                return signature(args[j + 1], depth + 1)
    nonopt = [a for a in args if not a.startswith("-")]
    if prog == "python" and len(args) > 1 and args[0] == "-m":
        return _segment_signature(args[1:], depth)
    if prog in _PREFIX_RUNNERS and nonopt:
        return _segment_signature(args[args.index(nonopt[0]) :], depth)
    if (prog in _RUN_RUNNERS and nonopt[:1] == ["run"]) or (prog == "bundle" and nonopt[:1] == ["exec"]):
        rest = [a for a in args[args.index(nonopt[0]) + 1 :] if not a.startswith("-")]
        if rest:
            return _segment_signature(args[args.index(rest[0]) :], depth)
    if prog in _NPM_LIKE:
        if nonopt[:1] in (["exec"], ["dlx"]) and len(nonopt) > 1:
            return _segment_signature(args[args.index(nonopt[1]) :], depth)
        sub = {"t": "test", "tst": "test", "run-script": "run"}.get(nonopt[0], nonopt[0]) if nonopt else ""
        if sub == "run" and len(nonopt) > 1 and _SCRIPT.match(nonopt[1]):
            script = nonopt[1]
            return Signature(f"{prog} {script}", f"{prog} run {script}", False, "test" in script)
        sub = sub if _SUBCOMMAND.match(sub) else ""
        key = f"{prog} {sub}".strip()
        return Signature(key, key, False, sub == "test")
    if prog in _INTERPRETERS and args[:1] in (["-c"], ["-e"]):
        return Signature(f"{prog} {args[0]}", f"{prog} {args[0]}", False, False)  # inline code: no script name
    if prog in _INTERPRETERS and nonopt:
        # `python manage.py migrate` and `python app.py` are different commands: the script (and its
        # subcommand) is part of what ran.
        script = re.split(r"[/\\]", nonopt[0])[-1]
        if not _SCRIPT.match(script):
            return Signature(prog, prog, False, False)
        sub = _subcommand(args[args.index(nonopt[0]) + 1 :])
        key = f"{prog} {script} {sub}".strip()
        return Signature(key, key, False, "test" in (sub, script.split(".")[0]))
    if prog in _PATH_RUNNERS:
        return Signature(prog, prog, False, prog in _TEST_PROGRAMS)
    rest = args
    while prog == "git" and len(rest) >= 2 and rest[0] in ("-C", "-c"):
        rest = rest[2:]  # git's own options with a value: `git -C repo commit` is a commit
    sub = _subcommand(rest)
    key = f"{prog} {sub}".strip()
    readonly = (
        prog in _READONLY
        or (prog == "git" and sub in _READONLY_GIT)
        or (prog == "git" and sub == "branch" and len(args) <= 1)
        or (prog in ("sed", "awk") and not any(a.startswith("-i") for a in args))
    )
    test = sub in ("test", "tests") or (prog == "make" and sub == "check")
    return Signature(key, key, readonly, test)


# What a failed run prints. The head of the output is all the importer keeps (base.TOOL_EXCERPT).
_FAILURE = re.compile(
    r"\b[1-9]\d* (?:failed|errors?|failures?)\b|\bFAILED\b|^FAIL\b|^=+ (?:FAILURES|ERRORS) =+$|"
    r"\s(?=[.sxEF]*F)[.sxEF]+\s+\[\s*\d+%\]|Traceback \(most recent call last\)|^\s*\w*(?:Error|Exception):|"
    r"^E {2,}\S|\berror\[E\d+\]|^error(?:\[|:)|: error(?::| TS\d+)|npm ERR!|ERR_PNPM_|error Command failed|"
    r"\bexit(?:ed)?(?: with)? (?:code|status)[:= ]*[1-9]|\"exit_code\"\s*:\s*[1-9]|\bExit code:? [1-9]|"
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
_NOISE_ERROR_LINE = re.compile(r"^(?:npm ERR! (?:code|errno|A complete log|\s*$)|FAILED\s*$)")


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


# --- the digest ----------------------------------------------------------------------------------


def _str(value: Any, limit: int = 400) -> str | None:
    return value[:limit] if isinstance(value, str) and value else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strs(value: Any, limit: int) -> list[str]:
    return [v[:300] for v in value if isinstance(v, str)][:limit] if isinstance(value, list) else []


def _counts(value: Any) -> dict[str, int]:
    return {str(k)[:120]: _int(v) for k, v in value.items()} if isinstance(value, dict) else {}


@dataclass
class _Call:
    """A command call waiting for its result."""

    id: str
    at: str | None
    cmd: str
    tool: str | None

    def dump(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at, "cmd": self.cmd, "tool": self.tool}

    @classmethod
    def load(cls, data: Any) -> _Call | None:
        if not isinstance(data, dict) or not _str(data.get("id")) or not _str(data.get("cmd")):
            return None
        return cls(str(data["id"]), _str(data.get("at")), str(data["cmd"])[:2000], _str(data.get("tool")))


@dataclass
class _Failure:
    """A failed command waiting for a passing run of the same command, and what happened since."""

    id: str
    at: str | None
    cmd: str
    key: str
    err: str | None
    files: list[str] = field(default_factory=list)
    acts: list[str] = field(default_factory=list)
    how: str | None = None
    why: str | None = None

    def dump(self) -> dict[str, Any]:
        return {
            "id": self.id, "at": self.at, "cmd": self.cmd, "key": self.key, "err": self.err,
            "files": self.files, "acts": self.acts, "how": self.how, "why": self.why,
        }  # fmt: skip

    @classmethod
    def load(cls, data: Any) -> _Failure | None:
        if not isinstance(data, dict) or not all(_str(data.get(k)) for k in ("id", "cmd", "key")):
            return None
        return cls(
            id=str(data["id"]),
            at=_str(data.get("at")),
            cmd=str(data["cmd"])[:300],
            key=str(data["key"])[:120],
            err=_str(data.get("err"), 200),
            files=_strs(data.get("files"), 5),
            acts=_strs(data.get("acts"), 3),
            how=_str(data.get("how"), 220),
            why=_str(data.get("why"), 220),
        )


@dataclass
class _State:
    """Everything a later part of a session needs from the earlier ones (the digest, unpacked)."""

    lang: str | None = None  # "zh" or "en", from the person's request
    task: str | None = None
    title: str | None = None
    summary: str | None = None
    project: str | None = None
    first: str | None = None  # earliest time seen
    last: str | None = None  # latest time seen
    outcome: str | None = None
    tests: str | None = None  # "pass" | "fail": the last test run
    commit: str | None = None  # last commit message
    commits: int = 0
    fixes: int = 0
    semantic: int = 0
    remember: int = 0
    messages: int = 0
    agent: bool = False  # anything but shell commands seen
    pending: list[_Call] = field(default_factory=list)
    open: list[_Failure] = field(default_factory=list)
    last_fail: str | None = None  # id of a failure nothing has happened after yet
    fixed: list[str] = field(default_factory=list)  # short names of fixes, for a shell episode
    said: list[str] = field(default_factory=list)  # short hashes of semantic contents already returned
    shell: int = 0  # shell commands seen
    cwd: str | None = None  # project the shell is in, from cd
    dirs: dict[str, int] = field(default_factory=dict)  # shell commands per project
    programs: dict[str, int] = field(default_factory=dict)  # shell commands per signature

    @classmethod
    def load(cls, digest: dict[str, Any]) -> _State:
        d = digest if isinstance(digest, dict) and digest.get("v", DIGEST_VERSION) == DIGEST_VERSION else {}
        tests = d.get("tests")
        return cls(
            lang=d.get("lang") if d.get("lang") in ("zh", "en") else None,
            task=_str(d.get("task"), 300),
            title=_str(d.get("title"), 200),
            summary=_str(d.get("summary"), 400),
            project=_str(d.get("project"), 120),
            first=_str(d.get("first"), 40),
            last=_str(d.get("last"), 40),
            outcome=_str(d.get("outcome"), 300),
            tests=tests if tests in ("pass", "fail") else None,
            commit=_str(d.get("commit"), 120),
            commits=_int(d.get("commits")),
            fixes=_int(d.get("fixes")),
            semantic=_int(d.get("semantic")),
            remember=_int(d.get("remember")),
            messages=_int(d.get("messages")),
            agent=d.get("agent") is True,
            pending=[c for c in map(_Call.load, _list(d.get("pending"))) if c][-MAX_PENDING:],
            open=[f for f in map(_Failure.load, _list(d.get("open"))) if f][-MAX_OPEN:],
            last_fail=_str(d.get("last_fail"), 200),
            fixed=_strs(d.get("fixed"), MAX_FIXES),
            said=_strs(d.get("said"), MAX_SEMANTIC),
            shell=_int(d.get("shell")),
            cwd=_str(d.get("cwd"), 120),
            dirs=_counts(d.get("dirs")),
            programs=_counts(d.get("programs")),
        )

    def dump(self) -> dict[str, Any]:
        def top(counts: dict[str, int], n: int) -> dict[str, int]:
            return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n])

        out: dict[str, Any] = {
            "v": DIGEST_VERSION, "lang": self.lang, "task": self.task, "title": self.title, "summary": self.summary,
            "project": self.project, "first": self.first, "last": self.last, "outcome": self.outcome,
            "tests": self.tests, "commit": self.commit, "commits": self.commits, "fixes": self.fixes,
            "semantic": self.semantic, "remember": self.remember, "messages": self.messages, "agent": self.agent,
            "pending": [c.dump() for c in self.pending], "open": [f.dump() for f in self.open],
            "last_fail": self.last_fail, "fixed": self.fixed, "said": self.said, "shell": self.shell, "cwd": self.cwd,
            "dirs": top(self.dirs, 6), "programs": top(self.programs, 10),
        }  # fmt: skip
        # Empty fields are left out: the digest is stored per session and read back every run.
        return {k: v for k, v in out.items() if v not in (None, [], {}, 0, False) or k == "v"}

    def seen_time(self, at: str | None) -> None:
        if not at or _moment(at) is None:
            return
        if self.first is None or _before(at, self.first):
            self.first = at
        if self.last is None or _before(self.last, at):
            self.last = at


def _moment(iso: str) -> datetime | None:
    try:
        return parse_time(iso)
    except (InvalidInput, ValueError, OverflowError):
        return None


def _before(a: str, b: str) -> bool:
    ma, mb = _moment(a), _moment(b)
    return ma < mb if ma is not None and mb is not None else a < b


def _message_id(message: Message) -> str:
    """The message's id; for formats without one, a hash of what it says (the same on every re-read)."""
    if message.id:
        return message.id
    digest = hashlib.sha1(clean(f"{message.role}\0{message.at}\0{message.text}").encode(), usedforsecurity=False)
    return "h" + digest.hexdigest()[:16]


# --- reading a session ---------------------------------------------------------------------------


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
        if self.state.task is None and _is_request(text):
            task = _task(text)
            if re.search(r"\w", task):
                self.state.task = task
                self.state.lang = "zh" if _is_chinese(task) else "en"
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
        if said:
            self.state.outcome = said
        if self.state.open:
            how, why = explanation(text)
            for failure in self.state.open:
                failure.how = failure.how or how
                failure.why = failure.why or why
        self.state.last_fail = None

    # tools and commands

    def tool(self, message: Message) -> None:
        text = message.text or ""
        files = [] if message.is_error else edited_files(message, self.session.project)
        if message.command:
            command = message.command[:2000]
            echoed = next((c for c in self.state.pending if c.cmd == command and c.tool == message.tool), None)
            if echoed:  # a result that repeats its call's command
                self.result(message, text, message.is_error, echoed)
            elif message.is_error:  # call and result in one message
                self.run(message, command, text if text.strip() != command.strip() else "", True)
            else:
                self.call(message, command, message.tool)
        else:
            call = self.match(message)
            if call:
                self.result(message, text, message.is_error, call)
        if files:
            self.edited(files)
        if not message.is_error:
            for msg in _COMMIT_LINE.findall(text):
                self.state.commit = _clip(msg.replace("`", "'"), 100)
                self.state.commits += 1

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
            state.tests = "fail" if did_fail else "pass"
        if did_fail:
            if sig.readonly:
                return
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
        if same is None:
            typo = next((f for f in state.open if f.id == just_failed), None)
            if typo and _similar(typo.cmd, _command_line(command)):
                state.open.remove(typo)  # `gti status` then `git status`: a typo, not a fix
            elif not sig.readonly:
                for failure in state.open:
                    if len(failure.acts) < 3 and _command_line(command) not in failure.acts:
                        failure.acts.append(_command_line(command)[:120])
            return
        state.open.remove(same)
        # Re-run at once with nothing in between: a typo corrected, or a flaky run; nothing learnt.
        if just_failed == same.id or not (same.files or same.acts or same.how or same.why):
            return
        if state.fixes >= MAX_FIXES:
            return
        state.fixes += 1
        state.fixed.append(_clip(f"`{same.key}`" + (f" ({same.err})" if same.err else ""), 160))
        self.items.append(
            Item(
                key=f"fix:{same.id}",
                type="procedural",
                content=_fix_text(same, sig, state.lang),
                importance=FIX_IMPORTANCE,
                message_id=same.id,
                at=same.at,
                tags=["fix", self.source],
            )
        )

    def edited(self, files: list[str]) -> None:
        self.state.last_fail = None
        for failure in self.state.open:
            for path in files:
                if path not in failure.files and len(failure.files) < 5:
                    failure.files.append(path[:200])


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


def _fix_text(failure: _Failure, sig: Signature, lang: str | None) -> str:
    """The procedural memory: when the command fails with the error, what fixed it, and how it was verified."""
    zh = lang == "zh" or (lang is None and _is_chinese(failure.how or failure.why or ""))
    files = ", ".join(failure.files)
    acts = ", ".join(f"`{a}`" for a in failure.acts)
    if zh:
        details = "；".join(p for p in (f"修改了 {files}" if files else "", f"运行了 {acts}" if acts else "") if p)
        if failure.how:
            parts = [f"修复：{failure.how}" + (f"（{details}）" if details else "")]
        else:
            parts = ([f"原因：{failure.why}"] if failure.why else []) + ([f"修复：{details}"] if details else [])
        err = f"（`{failure.err}`）" if failure.err else ""
        return _clip(f"`{failure.cmd}` 失败{err}时，" + "；".join(parts) + f"；重新运行 {sig.show} 后通过。", 600)
    details = "; ".join(p for p in (f"edited {files}" if files else "", f"ran {acts}" if acts else "") if p)
    if failure.how:
        parts = [f"fix: {failure.how}" + (f" ({details})" if details else "")]
    else:
        parts = ([f"cause: {failure.why}"] if failure.why else []) + ([f"fix: {details}"] if details else [])
    err = f" with `{failure.err}`" if failure.err else ""
    return _clip(f"When `{failure.cmd}` fails{err}, " + "; ".join(parts) + f"; verified by re-running {sig.show}.", 600)


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
    episode = _episode(session, state)
    if episode:
        items.append(episode)
    return items, state.dump()
