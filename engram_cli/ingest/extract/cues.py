"""Cues: the sentences of a user message that state a preference, a decision or a request to remember."""

from __future__ import annotations

import re

from engram_cli.ingest.base import Message
from engram_cli.ingest.extract.item import Item, _message_id
from engram_cli.ingest.extract.scope import _PROJECT as _PROJECT_NAMED
from engram_cli.ingest.extract.scope import scope_of
from engram_cli.ingest.extract.wording import (
    _CJK_CHAR,
    _QUOTED,
    MAX_SENTENCE,
    _clip,
    _join,
    _prose,
    _sentences,
    _strip_filler,
    _weight,
    _words,
)
from engram_cli.lang.text import STOPWORDS

# A message longer than this (CJK characters weigh 3: one carries about as much as three
# Latin letters) is a paste — a spec, a log, a file — and a cue inside it is incidental.
# 800 is about 130 English words or 270 Chinese characters: longer than any instruction
# people type, shorter than most pastes.
LONG_MESSAGE = 800
# Cue sentences kept per semantic memory: the cue and, at most, one more cue next to it.
KEEP_SENTENCES = 2
SEMANTIC_CHARS = 300

STRONG, MEDIUM, WEAK = 0.85, 0.7, 0.55
REMEMBER, DECISION, PREFERENCE = "remember", "decision", "preference"
# Which kind names a message whose sentences carry cues of several kinds at the same strength.
_KIND_RANK = {REMEMBER: 3, DECISION: 2, PREFERENCE: 1}
_KEY_PREFIX = {REMEMBER: "remember", DECISION: "decision", PREFERENCE: "pref"}


# A cue starts a sentence, or a clause after a colon ("general thing about me: I always use uv").
_LEAD = r"(?:^|(?<=[:;]\s))(?:(?:please|pls|plz|also|and|but|so|just|then|now|oh|ok(?:ay)?)[\s,]+)*"
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
        (r"(?:一直|始终|始終)都?(?:用|使用|保持|要)|每次都(?:要|用|先|得)|务必|務必|一律", STRONG, PREFERENCE),
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
            r"(?!紧|緊|人|的|处|處|名|说|說|客气|客氣|急|担心|擔心|管|忘|了)",
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
    r"这里|這裡|这儿|這兒|这次|這次|暂时|暫時|先这样|先這樣|目前先|现在先|現在先|(?:^|(?<=[，,]))(?:你|您)先(?!前)",
    re.IGNORECASE,
)
# A sentence reporting that something broke is a problem, not a choice: "X has been failing since we moved Y".
_REPORT = re.compile(
    r"\b(?:has|have|had) been (?:failing|broken|crashing|erroring)\b|\bstarted (?:failing|crashing|erroring)\b|"
    r"(?:一直|开始|開始)(?:报错|報錯|失败|失敗|挂|掛)",
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
    things stuff ok okay yes sure fine good great also really ask asking"""
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
    if best[0] < STRONG and (_LOCAL.search(masked) or _REPORT.search(masked)):
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
        scope=_scope(content, text),
    )


def _scope(content: str, text: str) -> str:
    """Whose the kept sentences are; a person's framing elsewhere in the message ("所有项目通用：…",
    "that goes for every repo of mine") makes them the person's unless they name the project."""
    scope = scope_of(content)
    if scope == "project" and not _PROJECT_NAMED.search(content) and scope_of(_prose(text)) == "person":
        return "person"
    return scope
