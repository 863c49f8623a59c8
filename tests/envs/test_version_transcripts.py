"""Every registered id behaves exactly as it did before versions became registry arguments.

``version_transcripts.json`` holds, per id and seed, the hash of the scripted, random and
Parallel episodes' transcripts, rewards and infos (see ``version_transcripts.py``), computed
on the tree that still had one subclass per version. A new id has no expected hashes yet:
add them with the module's command line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import version_transcripts as transcripts

import llm_marl_envs

EXPECTED = json.loads(Path(__file__).with_name("version_transcripts.json").read_text())


@pytest.mark.parametrize("env_id", sorted(EXPECTED))
def test_every_id_replays_its_transcripts_rewards_and_infos(env_id):
    assert env_id in llm_marl_envs.list_envs()
    got = [transcripts.episode_hash(env_id, seed) for seed in transcripts.SEEDS]
    assert got == EXPECTED[env_id]


def test_every_registered_id_has_expected_hashes():
    assert sorted(llm_marl_envs.list_envs()) == sorted(EXPECTED)


def test_a_changed_reward_changes_the_hash(monkeypatch):
    env_id = "llm_marl_envs/GSM8K-v0"
    before = transcripts.episode_hash(env_id, 0)
    monkeypatch.setattr("llm_marl_envs.envs.gsm8k.answers_match", lambda *args: True)
    assert transcripts.episode_hash(env_id, 0) != before
