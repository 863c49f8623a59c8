"""IMDBSentiment-v0: query, observer prompt, scorers, reward modes."""

from __future__ import annotations

import pytest

import llm_marl_envs

ID = "llm_marl_envs/IMDBSentiment-v0"


def test_query_is_a_2_to_7_word_prefix():
    env = llm_marl_envs.make(ID, data_source="bundled")
    lengths = set()
    for seed in range(60):
        env.reset(seed=seed)
        query = str(env.observe("pioneer_0"))
        text = env.data.rows[env.data.row_ids.index(env.row_id)]["text"]
        assert text.startswith(query)
        lengths.add(len(query.split()))
    assert lengths == set(range(2, 8))


def test_observer_prompt_and_rewards():
    length_scorer = lambda texts: [float(len(t)) for t in texts]  # noqa: E731
    env = llm_marl_envs.make(
        ID, data_source="bundled", scorer=length_scorer, reward_mode="individual"
    )
    env.reset(seed=2)
    query = env.query
    env.step("was great")
    assert (
        env.observe("observer_0")
        == f'I can make this sentence "{query} was great" more positive: {query}'
    )
    env.step("was truly great fun")
    r1, r2 = len(f"{query} was great"), len(f"{query} was truly great fun")
    assert env.rewards == {"pioneer_0": r1, "observer_0": r2}
    assert env.infos["observer_0"]["reward_components"]["sentiment"] == r2


def test_collective_reward_with_vader():
    pytest.importorskip("vaderSentiment")
    env = llm_marl_envs.make(ID, data_source="bundled")
    env.reset(seed=0)
    env.step("is a wonderful, joyful delight")
    env.step("is dreadful and boring")
    r1 = env.infos["pioneer_0"]["reward_components"]["task_reward"]
    r2 = env.infos["observer_0"]["reward_components"]["task_reward"]
    assert r1 > 0 > r2
    assert env.rewards["pioneer_0"] == env.rewards["observer_0"] == pytest.approx(r1 + r2)


def test_tokenizer_cuts_the_query_in_tokens():
    class CharTokenizer:  # a real (if simple) tokenizer: one token per character
        def encode(self, text, add_special_tokens=False):
            return [ord(c) for c in text]

        def decode(self, ids):
            return "".join(chr(i) for i in ids)

    env = llm_marl_envs.make(
        ID, data_source="bundled", tokenizer=CharTokenizer(), query_length=(3, 3)
    )
    env.reset(seed=0)
    assert len(env.query) == 3


def test_real_imdb_csv(shared_data):
    env = llm_marl_envs.make(ID, data_source=shared_data / "imdb" / "imdb_reviews_2500.csv")
    env.reset(seed=0)
    assert env.infos["pioneer_0"]["data_source"].startswith("local:")
    assert 2 <= len(env.query.split()) <= 7


def test_bad_query_length():
    with pytest.raises(ValueError, match="query_length"):
        llm_marl_envs.make(ID, data_source="bundled", query_length=(5, 2))
