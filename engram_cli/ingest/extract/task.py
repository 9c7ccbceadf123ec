"""Tasks within a session: how the person said one ended, where the next one begins, and what the tests said.

A session's episode tells how its task ended, and the end state is not the last message: a
conversation often closes with thanks, a reply to a passing "what if …", or a note for another day.
What settles it is what was seen last of the work (a test run, a commit) and what the person said
about it ("works now", "好了，测试过了", "let's pick this up tomorrow"). Only the person's words
count here: an assistant that says "done" is reporting, and that report is weighed elsewhere.
"""

from __future__ import annotations

import re

from engram_cli.ingest.extract.cues import _HYPOTHETICAL, _QUESTION_END, _cue
from engram_cli.ingest.extract.wording import _ACK, _clip, _join, _prose, _sentences, _strip_filler, _weight

# The person says the work does what it should. Checked sentence by sentence, never in a question.
_CONFIRM = re.compile(
    r"\b(?:it |that |this |everything |all )?(?:works|worked|working)(?: now| fine| again| great| perfectly)?\b|"
    r"\b(?:fixed|solved|resolved)(?: now| it)?\b|\bthat did (?:it|the trick)\b|"
    r"\b(?:tests?|suite|ci|build|pipeline|checks?)\b[^.!?\n]{0,40}?\b(?:pass(?:es|ed|ing)?|green|ok)\b|"
    r"\b(?:all |it's |is |are )green\b|\b(?:renders?|loads?|runs?|starts?|deploys?|builds?)(?: fine| now| again|"
    r" correctly| properly)\b|"
    r"好了|可以了|行了|成功了|跑通了|通过了|通過了|(?<![超经經])过了|(?<![超经經])過了|没问题了|沒問題了|解决了|解決了|修好了|搞定|"
    r"正常了|生效了|能用了|好使了",
    re.IGNORECASE,
)
# A sentence that says it still does not work is not a confirmation, whatever else it says.
_DENY = re.compile(
    r"\b(?:still|again)\b[^.!?\n]{0,30}\b(?:fail|fails|failing|broken|error|errors|crash(?:es|ing)?|wrong|not)\b|"
    r"\b(?:doesn't|does not|didn't|did not|isn't|is not|won't|not|no longer|never)\b[^.!?\n]{0,20}"
    r"\b(?:work|works|working|help|fix|fixed|pass|green|render|load)\b|"
    r"还是|還是|仍然|依然|没有?(?:好|用|解决|解決|通过|通過|修好)|沒有?(?:好|用|解决|解決|通过|通過|修好)|不行|没反应|"
    r"报错|報錯|失败|失敗",
    re.IGNORECASE,
)
# Thanks and approval close a task without saying whether it works.
_APPROVE = re.compile(
    r"^(?:thanks|thank you|thx|ty|cheers|great|perfect|nice|awesome|excellent|cool|lgtm|looks good|good job|"
    r"well done|👍|🙏|谢谢|謝謝|多谢|多謝|感谢|感謝|辛苦了|很好|不错|不錯|漂亮|完美|赞|讚)",
    re.IGNORECASE,
)
# An assistant's reply that only acknowledges.
_ACKNOWLEDGED = re.compile(
    r"(?:(?:noted|got it|will do|understood|sure|ok(?:ay)?|of course|sounds good|you're welcome|no problem|"
    r"好的|好|明白了?|收到|记下了|記下了|记住了|記住了|没问题|沒問題|不客气|不客氣)[\s,.!:;，。！：；~]*)+",
    re.IGNORECASE,
)
# The person leaves the task for another day, or gives it up.
_UNFINISHED = re.compile(
    r"\bnot (?:finished|done|fixed|working) yet\b|\bunfinished\b|\bto be continued\b|\bgiv(?:e|ing) up\b|"
    r"\b(?:let's |we'll |i'll )?(?:stop|pause|continue|pick (?:this|it) up|look at (?:this|it)|come back to "
    r"(?:this|it)|finish (?:this|it))(?: here)?(?: (?:tomorrow|later|next time|another day|next week|on monday))\b|"
    r"\bpark (?:this|it)\b|\bleave it (?:here|for now|there)\b|"
    r"下次再[说說弄搞看做]|明天再|改天再|以后再[说說看弄]|以後再[说說看弄]|回头再[说說看弄]|回頭再[说說看弄]|先到这|先到這|"
    r"没做完|沒做完|还没(?:好|完|修好|解决)|還沒(?:好|完|修好|解決)|先放着|先放著|放弃|放棄|待续|待續",
    re.IGNORECASE,
)
# Words that open a new task: "Next: …", "第二件事：…". Inside a message they must start a sentence.
_NEXT_TASK = re.compile(
    r"(?:^|(?<=[.!?。！？\n]))\s*(?:(?:ok(?:ay)?|so|and|now|alright)[\s,]+)?"
    r"(?:next(?: task| thing| one| up)?\s*[:：]|(?:another|a second|a different|a separate|an unrelated|"
    r"one more|the (?:second|next|other)) (?:task|thing|issue|problem|question|topic)\b[\s:：,.]*|"
    r"second(?:ly| thing)?\s*[:：,]|moving on\b[\s:：,.]*|"
    r"下一个[：:，,]?|下一件事[：:，,]?|下一个任务[：:，,]?|第二件事[：:，,]?|第二个问题[：:，,]?|另一件事[：:，,]?|"
    r"另外一件事[：:，,]?|另一个问题[：:，,]?|另外一个问题[：:，,]?|还有一件事[：:，,]?|還有一件事[：:，,]?|"
    r"換個事|换个事[：:，,]?|换个话题[：:，,]?|換個話題[：:，,]?)",
    re.IGNORECASE,
)
# A request that leans on the last one ("add a test too", "顺便…", "commit it") continues the task.
_FOLLOW_UP = re.compile(
    r"^(?:also|and|too|plus|then|wait|hold on|while you're at it|as well|commit|push|revert|undo)\b|"
    r"\b(?:too|as well|also)[.!]?$|"
    r"^(?:顺便|順便|也|再|还要|還要|然后|然後|等一下|等等|提交|推送|commit|push)|也要|也得|也需要",
    re.IGNORECASE,
)
# A proposal or a question about the work just done is talk about it, not a task of its own.
_PROPOSAL = re.compile(
    r"^(?:what about|how about|should we|shall we|could we|would it|is it|does (?:it|that|this))\b|"
    r"^(?:要不要|是不是|能不能|可不可以|会不会|會不會)",
    re.IGNORECASE,
)
# Dropping an idea just raised: "nah", "算了".
_DISMISS = re.compile(
    r"(?:nah|nope|never ?mind|forget it|not worth it|no need|算了|不用了?|不要了|不折腾了|没必要)(?:[\s,，].{0,30})?",
    re.IGNORECASE,
)
# How much a request must say (as in wording._weight) to open a task of its own after the last one closed.
NEW_TASK_WEIGHT = 40

# Test runners' count lines: pytest "3 failed, 1 passed in 0.2s", jest/vitest "Tests: 4 passed (4)",
# cargo "12 passed; 0 failed", unittest "Ran 5 tests … OK".
_COUNT = re.compile(r"\b(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|todo|pending)\b", re.IGNORECASE)
_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s\s*$", re.MULTILINE)


def confirmation(text: str) -> str | None:
    """The sentence in which the person says the work does what it should ("great, tests pass now"), or None."""
    for sentence in _person_sentences(text):
        if _QUESTION_END.search(sentence) or _HYPOTHETICAL.match(sentence) or _DENY.search(sentence):
            continue
        if _CONFIRM.search(sentence):
            return _clip(sentence, 100)
    return None


def approval(text: str) -> bool:
    """Thanks or approval ("thanks!", "👍 谢谢", "looks good") that closes a task."""
    sentences = _person_sentences(text)
    return bool(sentences) and bool(_APPROVE.match(sentences[0])) and not _DENY.search(sentences[0])


def acknowledgement(said: str) -> bool:
    """An assistant's bare "Noted." or "好的，记住了。": it says nothing about how the task went."""
    return bool(_ACKNOWLEDGED.fullmatch(said.strip()))


def unfinished(text: str) -> bool:
    """The person leaves the task unfinished ("let's continue tomorrow", "下次再说")."""
    return any(
        _UNFINISHED.search(s) and not _QUESTION_END.search(s) and not _HYPOTHETICAL.match(s)
        for s in _person_sentences(text)
    )


def next_task(text: str) -> str | None:
    """What follows words that open a new task ("Next: add a --max-zoom flag"), or None when there are none."""
    prose = _prose(text)
    for match in _NEXT_TASK.finditer(prose):
        rest = prose[match.end() :].strip(" \t:：,，.。")
        if rest and _weight(rest) >= 12:
            return rest
    return None


def new_task(text: str) -> bool:
    """After a task closed, whether this request starts another one.

    It must say something of its own: not a follow-up ("add a test too", "commit it"), a question or
    a what-if about the work just done, or a preference (those become memories of their own).
    """
    rest = after_thanks(text)
    first = next(iter(_person_sentences(rest)), "")
    if not first or _HYPOTHETICAL.match(first) or _PROPOSAL.match(first) or _QUESTION_END.search(first):
        return False
    if _FOLLOW_UP.search(first) or _cue(first.replace("’", "'")):
        return False
    return _weight(first) >= NEW_TASK_WEIGHT or _weight(rest) >= 2 * NEW_TASK_WEIGHT


def aside(text: str) -> bool:
    """A message that asks for nothing: only preferences, what-ifs, proposals, thanks or acknowledgements."""
    for sentence in _person_sentences(text):
        if _HYPOTHETICAL.match(sentence) or _PROPOSAL.match(sentence) or approval(sentence):
            continue
        bare = sentence.rstrip(".!。！~ ")
        if _ACK.match(bare) or _DISMISS.fullmatch(bare) or _cue(sentence.replace("’", "'")):
            continue
        return False
    return True


def after_thanks(text: str) -> str:
    """The message without the thanks, approval or confirmation it opens with ("nice! now …" → "now …")."""
    prose = _prose(text)
    sentences = _sentences(prose)
    while sentences and (
        _ACK.match(_strip_filler(sentences[0]).rstrip(".!。！~ "))
        or approval(sentences[0])
        or confirmation(sentences[0])
    ):
        sentences = sentences[1:]
    return _join(sentences) if sentences else ""


def test_counts(output: str) -> str | None:
    """The counts a test runner printed last ("1 failed, 3 passed"), zero counts left out; None when none."""
    lines = [ln for ln in output.splitlines() if _COUNT.search(ln)]
    if lines:
        counts: list[str] = []
        for number, word in _COUNT.findall(lines[-1]):
            said = f"{number} {word.lower()}"
            if number.lstrip("0") and said not in counts:
                counts.append(said)
        if counts:
            return ", ".join(counts)
    ran = _RAN.findall(output)
    return f"{ran[-1]} ran" if ran else None


def _person_sentences(text: str) -> list[str]:
    return [s for s in (_strip_filler(s) for s in _sentences(_prose(text))) if s]
