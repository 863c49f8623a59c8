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

# ---------------------------------------------------------------------------------------------
# The tables of the MAGRPO authors' released code (OpenMLRL/LLM_Collab_Writing,
# rewards/tldr_rewards.py and rewards/arxiv_rewards.py; identical in both files). Used by
# ``reward_impl="authors"`` / ``"authors-2025"``. Their matching is different from ours: a
# category counts when any of its phrases is a plain substring of the lower-cased text ("so"
# inside "also" counts), and a phrase listed under two categories counts for both.
# 12 categories: T reaches at most 0.4 + 0.05 * 11 = 0.95.

AUTHORS_TRANSITIONS: dict[str, tuple[str, ...]] = {
    "elaboration": (
        "furthermore", "moreover", "additionally", "also", "besides", "in addition",
        "what is more", "not only", "as well as", "along with", "coupled with",
        "together with", "likewise", "similarly", "equally important", "by the same token",
        "in the same way", "correspondingly", "in like manner", "comparatively", "analogously",
    ),
    "examples": (
        "for example", "for instance", "specifically", "particularly", "namely", "such as",
        "including", "especially", "in particular", "to illustrate", "as an illustration",
        "case in point", "to demonstrate", "as evidence", "to exemplify", "notably",
        "markedly", "chiefly", "mainly", "primarily", "above all", "most importantly",
    ),
    "explanation": (
        "that is", "in other words", "to put it simply", "to clarify", "indeed", "in fact",
        "actually", "clearly", "obviously", "to put it another way", "to rephrase",
        "more precisely", "specifically speaking", "what this means is", "the point is",
        "essentially", "basically", "fundamentally", "at its core", "in essence", "simply put",
        "stated differently",
    ),
    "cause_effect": (
        "therefore", "thus", "consequently", "as a result", "hence", "accordingly",
        "for this reason", "due to this", "because of this", "so", "then", "thereby",
        "wherefore", "thence", "ergo", "as a consequence", "in consequence", "it follows that",
        "this leads to", "this results in", "this causes", "this brings about", "owing to",
        "on account of", "thanks to", "resulting from",
    ),
    "contrast": (
        "however", "nevertheless", "nonetheless", "on the other hand", "in contrast", "while",
        "whereas", "although", "even though", "despite this", "but", "yet", "still",
        "conversely", "on the contrary", "rather", "instead", "alternatively", "otherwise",
        "in opposition", "by contrast", "contrarily", "notwithstanding", "regardless",
        "all the same", "even so", "be that as it may", "in any case", "at any rate",
    ),
    "sequence": (
        "first", "second", "third", "next", "then", "after that", "finally", "lastly",
        "initially", "subsequently", "meanwhile", "to begin with", "to start with",
        "in the beginning", "at first", "at the outset", "primarily", "secondly", "thirdly",
        "following this", "afterward", "later", "later on", "in the meantime", "simultaneously",
        "concurrently", "at the same time", "in conclusion", "to conclude", "ultimately",
        "in the end", "to summarize", "in summary",
    ),
    "emphasis": (
        "indeed", "certainly", "surely", "undoubtedly", "without doubt", "definitely",
        "absolutely", "positively", "unquestionably", "indubitably", "of course", "naturally",
        "obviously", "clearly", "evidently", "manifestly", "undeniably", "admittedly",
        "granted", "to be sure", "in fact", "as a matter of fact", "notably", "significantly",
    ),
    "summary": (
        "in summary", "in conclusion", "to summarize", "to conclude", "in short", "in brief",
        "briefly", "to sum up", "on the whole", "overall", "all in all", "in essence",
        "essentially", "basically", "fundamentally", "in the final analysis", "after all",
        "ultimately", "in the end", "when all is said and done", "the bottom line is",
    ),
    "comparison": (
        "similarly", "likewise", "in the same way", "equally", "just as", "comparable to",
        "in comparison", "by the same token", "correspondingly", "in like manner",
        "along the same lines", "in similar fashion", "analogously", "by analogy",
        "just like", "much like", "as with",
    ),
    "concession": (
        "although", "though", "even though", "while", "whereas", "despite", "in spite of",
        "regardless of", "notwithstanding", "admittedly", "granted", "even if",
        "be that as it may", "nevertheless", "nonetheless", "however", "yet", "still",
        "all the same",
    ),
    "condition": (
        "if", "unless", "provided that", "assuming that", "supposing that", "in case",
        "in the event that", "on condition that", "given that", "as long as", "so long as",
        "only if", "even if", "whether or not", "should", "were", "had", "otherwise",
        "or else",
    ),
    "time": (
        "when", "while", "as", "after", "before", "until", "since", "during", "meanwhile",
        "simultaneously", "at the same time", "concurrently", "previously", "formerly",
        "earlier", "later", "afterward", "subsequently", "eventually", "finally", "recently",
        "lately", "nowadays", "currently", "presently", "immediately",
    ),
}  # fmt: skip

AUTHORS_STOPWORDS: frozenset[str] = frozenset(
    """
    a all also an and any are as at bad be been being both but by can could did do does each
    few first for from good great had has have he her here him his how i if in is it its just
    last left little long low many may me might more most much must my new no not now of old on
    only or other our own right same shall should so some such than that the their them then
    there these they this those to too us very was we were what when where which who why will
    with would you your
    """.split()
)
