"""Word tables of the writing reward: transition-phrase categories and English stopwords.

Tables are data: edit them here, not in the reward code. Matching is case-insensitive on
whole words (``\\b...\\b``); a category counts once however many of its phrases appear.
"""

from __future__ import annotations

TRANSITIONS: dict[str, tuple[str, ...]] = {
    "addition": (
        "furthermore",
        "moreover",
        "in addition",
        "additionally",
        "also",
        "besides",
        "as well as",
    ),
    "contrast": (
        "however",
        "but",
        "nevertheless",
        "nonetheless",
        "on the other hand",
        "whereas",
        "yet",
        "instead",
        "in contrast",
    ),
    "cause_effect": (
        "because",
        "therefore",
        "thus",
        "consequently",
        "as a result",
        "hence",
        "so that",
        "due to",
        "since",
    ),
    "sequence": (
        "first",
        "firstly",
        "second",
        "secondly",
        "then",
        "next",
        "finally",
        "afterwards",
        "subsequently",
        "lastly",
    ),
    "example": (
        "for example",
        "for instance",
        "such as",
        "specifically",
        "to illustrate",
        "in particular",
    ),
    "emphasis": (
        "indeed",
        "in fact",
        "notably",
        "especially",
        "above all",
        "importantly",
        "clearly",
    ),
    "conclusion": (
        "in conclusion",
        "overall",
        "in summary",
        "to sum up",
        "ultimately",
        "in short",
        "all in all",
    ),
    "comparison": (
        "similarly",
        "likewise",
        "in the same way",
        "compared to",
        "compared with",
        "just as",
    ),
    "time": (
        "meanwhile",
        "eventually",
        "at the same time",
        "later",
        "previously",
        "before",
        "after",
        "until",
        "when",
    ),
    "condition": ("if", "unless", "provided that", "as long as", "otherwise", "in case"),
    "clarification": ("in other words", "that is", "namely", "to clarify", "to put it differently"),
    "concession": (
        "although",
        "though",
        "even though",
        "despite",
        "admittedly",
        "granted",
        "even so",
    ),
    "purpose": ("in order to", "so as to", "to this end", "for this reason", "with this in mind"),
}
# 13 categories: T = 0.4 + 0.05 * 12 = 1.0 is reachable, so the joint reward's maximum is 3.0.

STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all am an and any are aren't as at be because been before
    being below between both but by can can't cannot could couldn't did didn't do does doesn't
    doing don't down during each few for from further had hadn't has hasn't have haven't having
    he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've
    if in into is isn't it it's its itself let's me more most mustn't my myself no nor not of
    off on once only or other ought our ours ourselves out over own same shan't she she'd she'll
    she's should shouldn't so some such than that that's the their theirs them themselves then
    there there's these they they'd they'll they're they've this those through to too under
    until up very was wasn't we we'd we'll we're we've were weren't what what's when when's where
    where's which while who who's whom why why's with won't would wouldn't you you'd you'll
    you're you've your yours yourself yourselves s t d ll m o re ve y just also will now
    """.split()
)
