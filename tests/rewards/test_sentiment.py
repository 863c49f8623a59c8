"""Sentiment scorers: VADER (offline default), any callable, and a real transformers classifier."""

from __future__ import annotations

import pytest

from llm_marl_envs.rewards.sentiment import (
    join_continuation,
    resolve_scorer,
    sentiment_reward,
)

POSITIVE = [
    "This film is wonderful, moving and beautifully acted.",
    "I loved every minute; a brilliant, joyful masterpiece.",
    "Great story, great cast, and a truly happy ending.",
]
NEGATIVE = [
    "This film is boring, ugly and painfully stupid.",
    "I hated every minute; a dreadful, miserable waste of time.",
    "Terrible acting, awful script, and a horrible ending.",
]


def test_vader_sign_on_clear_text():
    pytest.importorskip("vaderSentiment")
    scores = sentiment_reward(POSITIVE + NEGATIVE)
    assert all(s > 0.3 for s in scores[:3]), scores
    assert all(s < -0.3 for s in scores[3:]), scores
    assert all(-1.0 <= s <= 1.0 for s in scores)


def test_prompt_is_scored_with_the_completion():
    pytest.importorskip("vaderSentiment")
    [alone] = sentiment_reward(["and nothing else."])
    [joined] = sentiment_reward(["and nothing else."], prompts=["A wonderful, joyful film"])
    assert alone == pytest.approx(0.0) and joined > 0.3


def test_callable_scorer_is_used_as_is():
    lengths = sentiment_reward(["ab", "abcd"], scorer=lambda texts: [len(t) for t in texts])
    assert lengths == [2.0, 4.0]


def test_bad_scorer_argument():
    with pytest.raises(TypeError, match="scorer"):
        resolve_scorer(3)


@pytest.mark.parametrize(
    ("query", "continuation", "joined"),
    [
        ("A fine", "film", "A fine film"),
        ("A fine ", "film", "A fine film"),
        ("A fine", " film", "A fine film"),
        ("A", "", "A"),
    ],
)
def test_join_continuation(query, continuation, joined):
    assert join_continuation(query, continuation) == joined


def test_transformers_classifier_scores_the_positive_logit(tmp_path):
    """A real (tiny, random-init) sequence classifier saved locally, loaded by path."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    from llm_marl_envs.rewards.sentiment import TransformersSentimentScorer

    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    trainer = tokenizers.trainers.WordLevelTrainer(
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    )
    tok.train_from_iterator(POSITIVE + NEGATIVE, trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
    )
    config = transformers.DistilBertConfig(
        vocab_size=tok.get_vocab_size(),
        dim=32,
        hidden_dim=64,
        n_layers=1,
        n_heads=2,
        id2label={0: "NEGATIVE", 1: "POSITIVE"},
        label2id={"NEGATIVE": 0, "POSITIVE": 1},
    )
    torch.manual_seed(0)
    model = transformers.DistilBertForSequenceClassification(config).eval()
    model.save_pretrained(tmp_path)
    fast.save_pretrained(tmp_path)

    scorer = TransformersSentimentScorer(str(tmp_path), batch_size=2)
    texts = POSITIVE + NEGATIVE
    with torch.no_grad():
        enc = fast(texts, padding=True, return_tensors="pt")
        expected = model(**enc).logits[:, 1].tolist()
    assert scorer(texts) == pytest.approx(expected, abs=1e-5)
    assert scorer.positive_index == 1


def test_missing_classifier_gives_a_clear_error():
    pytest.importorskip("transformers")
    from llm_marl_envs.rewards.sentiment import TransformersSentimentScorer

    with pytest.raises(OSError, match="scorer='vader'"):
        TransformersSentimentScorer("no-such-user/no-such-classifier")


# --- TRL's calling convention (issue 16, defect 3) -------------------------------------------
def _chat(user: str) -> list[dict[str, str]]:
    return [
        {"role": "system", "content": "Continue the review."},
        {"role": "user", "content": user},
    ]


def _seen(texts: list[str]) -> list[float]:
    _seen.texts = list(texts)
    return [float(len(t)) for t in texts]


def test_conversational_prompts_and_completions_score_like_text():
    """TRL passes message lists; they used to crash in join_continuation ('dict' has no isspace)."""
    text = sentiment_reward(["and nothing else."], prompts=["A wonderful film"], scorer=_seen)
    chat = sentiment_reward(
        [[{"role": "assistant", "content": "and nothing else."}]],
        prompts=[_chat("A wonderful film")],
        scorer=_seen,
    )
    assert chat == text and _seen.texts == ["A wonderful film and nothing else."]


def test_conversational_completion_without_prompts_scores_its_text_not_a_repr():
    sentiment_reward([[{"role": "assistant", "content": "Lovely."}]], scorer=_seen)
    assert _seen.texts == ["Lovely."]


def test_trl_keywords_are_accepted_and_the_query_column_wins():
    """As GRPOTrainer calls it: prompts, completions, completion_ids, trainer_state, columns."""
    out = sentiment_reward(
        prompts=['I can make this sentence "A film" more positive: A film'],
        completions=["that shines."],
        completion_ids=[[1, 2]],
        trainer_state=None,
        log_extra=print,
        log_metric=print,
        query=["A film"],  # the observer's score is query + its own continuation
        seed=[3],
        scorer=_seen,
    )
    assert out == [float(len("A film that shines."))] and _seen.texts == ["A film that shines."]
