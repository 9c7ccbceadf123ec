"""Whose a statement is: the person's (true in every project) or the project's.

"Answer in British English", "I always use fish", "以后回答用中文" describe the person and belong in
the global scope, where every project's sessions find them. "We deploy with make release", "this
repo uses pnpm", "这个项目用 pytest" describe the project they were said in. The rules, in order:

1. a cue that names the project ("this repo", "our codebase", 这个项目) makes it the project's;
2. a cue that reaches beyond the project ("in all my projects", "everywhere", 所有项目) or that is
   about how the person wants to be answered (language, tone, length; 用中文回答) makes it the
   person's;
3. a statement in the first person singular about a habit or taste ("I always …", "I prefer …",
   "my editor …", 我习惯 …) is the person's, unless it speaks for a team ("we", 我们), names a
   file or a path of the project, or points at the work at hand ("I like this approach", 这个);
4. anything else stays with the project, where it was said: a misplaced project fact in the global
   scope would follow the person into every other project.
"""

from __future__ import annotations

import re
from typing import Literal

ScopeOf = Literal["person", "project"]
PERSON: ScopeOf = "person"
PROJECT: ScopeOf = "project"

_I = re.IGNORECASE

# 1. The project named as such.
_PROJECT = re.compile(
    r"\b(?:this|the|our)\s+(?:project|repo|repository|codebase|code\s*base|monorepo|service|app|package|"
    r"library|crate|module|team)\b|\bin\s+here\b|\bhere\s+in\s+(?:this|the)\b|"
    r"(?:这个|這個|本|该|該|此|我们的|我們的|咱们的|咱們的)(?:项目|項目|仓库|倉庫|代码库|代碼庫|代码|代碼|服务|服務|应用|應用|工程|模块|模塊)|"
    r"(?:项目|項目|仓库|倉庫)里|(?:项目|項目|仓库|倉庫)裡",
    _I,
)

# 2. Beyond this project, or about how the person is answered.
_EVERYWHERE = re.compile(
    r"\b(?:every|all(?:\s+(?:of\s+)?my)?|any|each|across(?:\s+all)?(?:\s+my)?)\s+(?:projects?|repos|repositories|"
    r"codebases|machines|computers)\b|\beverywhere\b|\banywhere(?:\s+else)?\b|\b(?:every|any|each)\s+(?:\w+\s+)?(?:repo|project)\s+of\s+mine\b|\bglobally\b|\bin\s+general\b|\bno\s+matter\s+(?:the|which)\s+"
    r"project\b|"
    r"(?:所有|每个|每個|任何|全部)(?:的)?(?:项目|項目|仓库|倉庫|代码库|代碼庫)|(?:无论|無論|不管)(?:什么|什麼|哪个|哪個)?(?:项目|項目)|"
    r"全局|到处|到處",
    _I,
)
_LANGUAGES = (
    r"(?:british|american|australian|canadian|plain|simple)?\s*english|chinese|mandarin|cantonese|german|french|"
    r"spanish|japanese|korean|portuguese|italian|russian|dutch|polish|swedish|hindi|arabic|"
    r"simplified\s+chinese|traditional\s+chinese"
)
_ANSWERS = re.compile(
    # How to be answered: a language, a length, a tone, a form of address.
    rf"\b(?:answer|reply|respond|write|talk|speak|explain|communicate|chat)(?:\s+(?:to|with)\s+me)?\s+(?:\w+\s+)?"
    rf"(?:in|using)\s+(?:{_LANGUAGES})\b|"
    rf"\b(?:answers?|replies|responses|explanations)\s+(?:should\s+be\s+|must\s+be\s+)?(?:in\s+)?(?:{_LANGUAGES})\b|"
    r"\b(?:answers?|replies|responses|explanations)\s+(?:short|brief|concise|terse|detailed)\b|"
    r"\bbe\s+(?:concise|brief|terse|succinct|direct|blunt)\b|\bkeep\s+(?:your\s+)?(?:answers?|replies|responses|it)"
    r"\s+(?:short|brief|concise)\b|\b(?:no|without|don't\s+use|do\s+not\s+use|never\s+use)\s+emojis?\b|"
    r"\b(?:don't|do\s+not|never)\s+apologi[sz]e\b|\bcall\s+me\b|\bmy\s+name\s+is\b|\baddress\s+me\b|"
    r"\b(?:your|the)\s+tone\b|"
    r"(?:用|以|使用)(?:简体|簡體|繁体|繁體)?(?:中文|英文|英语|英語|汉语|漢語|普通话|普通話|粤语|粵語|日文|日语|日語|德语|德語|法语|法語)"
    r"(?:来|來)?(?:回答|回复|回覆|答复|答覆|解释|解釋|交流|沟通|溝通|说|說|写|寫|讲|講)|"
    r"(?:回答|回复|回覆|答复|答覆|解释|解釋)(?:都|请|請|时|時)?(?:用|以|使用)(?:简体|簡體|繁体|繁體)?"
    r"(?:中文|英文|英语|英語|汉语|漢語|普通话|普通話|粤语|粵語|日文|日语|日語)|"
    r"(?:回答|回复|回覆|答复|答覆)(?:要|请|請)?(?:简洁|簡潔|简短|簡短|详细|詳細)|"
    r"(?:不要|别|別|不用)(?:用|加|带|帶)?(?:表情|emoji)|叫我|称呼我|稱呼我|我的名字",
    _I,
)

# 3. The person speaking of their own habits, tastes and tools.
_FIRST_PERSON = re.compile(
    r"\bi(?:'m|\s+am)?\s+(?:\w+ly\s+)?(?:always|never|usually|normally|generally|typically|prefer|like|love|hate|"
    r"dislike|use|work|type|read|write|code|live|am\s+based|'m\s+based)\b|\bi(?:'d|\s+would)\s+(?:rather|prefer|like)\b|"
    r"\bmy\s+(?:(?:own|usual|favou?rite|preferred|default)\s+)?(?:editor|ide|shell|terminal|keyboard|layout|os|"
    r"operating\s+system|laptop|machine|computer|setup|dotfiles|workflow|habit|timezone|time\s+zone|username|"
    r"handle|email|e-mail|language|locale|preference|style|font|theme|browser)\b|\bfor\s+me\b|"
    r"我(?![们們])(?:比较|比較|更|还是|還是|一般|通常|平时|平時|向来|向來|一向|总是|總是|一直|从来|從來|从不|從不|都)?"
    r"(?:习惯|習慣|喜欢|喜歡|偏好|偏爱|偏愛|爱用|愛用|常用|讨厌|討厭|不喜欢|不喜歡|不习惯|不習慣|用|使用)|"
    r"我(?![们們])的[^，,。；;]{1,24}?(?:一律|一向|向来|向來|永远|永遠|总是|總是)|"
    r"我(?![们們])的(?:编辑器|編輯器|终端|終端|电脑|電腦|系统|系統|时区|時區|邮箱|郵箱|习惯|習慣|键盘|鍵盤|用户名|用戶名|配置)",
    _I,
)
# A team speaking, or a file of the project named: the habit is the project's.
_TEAM = re.compile(
    r"\b(?:we|we're|we've|we'll|us|our|the\s+team|team's)\b|我们|我們|咱们|咱們|大家|团队|團隊",
    _I,
)
_PROJECT_THING = re.compile(
    r"(?:^|[\s`'\"(])(?:\.{0,2}/)?[\w.-]+/[\w./-]+|"  # a path: src/app.py, ./scripts/deploy
    r"\b[\w-]+\.(?:py|js|ts|tsx|jsx|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|sql|toml|ya?ml|json|lock|cfg|ini|"
    r"md|sh|env)\b|"
    r"\b(?:makefile|dockerfile|pyproject|package\.json|requirements\.txt|staging|production|prod|the\s+ci|"
    r"the\s+build|the\s+database|the\s+db|the\s+api|the\s+deploy(?:ment)?)\b",
    _I,
)


# Pointing at something in front of them ("I like this approach", 我喜欢这个方案): a taste about the
# work at hand, not a habit that holds everywhere.
_AT_HAND = re.compile(
    r"\b(?:this|that|these|those|here|it)\b|这个|這個|那个|那個|这些|這些|这里|這裡|这儿|這兒|这样|這樣",
    _I,
)


def scope_of(text: str) -> ScopeOf:
    """``"person"`` for a statement about the person (true in every project), else ``"project"``."""
    if _EVERYWHERE.search(text):  # "in this repo or anywhere else": beyond the project
        return PERSON
    if _PROJECT.search(text):
        return PROJECT
    if _ANSWERS.search(text):
        return PERSON
    if _FIRST_PERSON.search(text) and not any(p.search(text) for p in (_TEAM, _PROJECT_THING, _AT_HAND)):
        return PERSON
    return PROJECT
