"""Dataset loaders: real data slices, local files in the Hub schema, bundled samples, errors."""

from __future__ import annotations

import csv
import json

import pytest

from llm_marl_envs.data import DataSourceError, load_gsm8k, load_imdb, read_table
from llm_marl_envs.data.loading import hub_status


def test_gsm8k_from_real_folder(shared_data):
    train = load_gsm8k("train", shared_data / "gsm8k")
    test = load_gsm8k("test", str(shared_data / "gsm8k"))
    assert (len(train), len(test)) == (7473, 1319)
    assert test.source.startswith("local:") and test.source.endswith("gsm8k")
    assert test.rows[0]["answer"].rstrip().splitlines()[-1].startswith("####")
    assert test.row_ids == tuple(range(1319))


def test_gsm8k_from_a_single_file(shared_data):
    data = load_gsm8k("train", shared_data / "gsm8k" / "test.jsonl")  # a file: split ignored
    assert len(data) == 1319


def test_imdb_real_csv_schema(shared_data):
    path = shared_data / "imdb" / "imdb_reviews_2500.csv"
    data = load_imdb("train", path)
    assert 2000 < len(data) < 2500  # reviews of <= 200 characters are dropped
    assert all(len(r["text"]) > 200 and "<br" not in r["text"] for r in data.rows)
    assert {r["label"] for r in data.rows} == {0, 1}
    # row ids point back into the original file
    with path.open(encoding="utf-8") as f:
        original = list(csv.DictReader(f))
    i = 7
    assert (
        original[data.row_ids[i]]["review"].replace("<br />", " ")[:50].split()
        == data.rows[i]["text"][:50].split()
    )
    assert len(load_imdb("train", path, min_chars=100)) > len(data)


def test_local_files_in_hub_schema(tmp_path):
    rows = [{"text": "A" * 250, "label": 1}, {"text": "B" * 250, "label": 0}]
    (tmp_path / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "test.json").write_text(json.dumps(rows[:1]))
    with (tmp_path / "extra.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["text", "label"])
        writer.writeheader()
        writer.writerows(rows)
    assert [r["label"] for r in load_imdb("train", tmp_path).rows] == [1, 0]
    assert len(load_imdb("test", tmp_path)) == 1
    assert len(load_imdb("train", tmp_path / "extra.csv")) == 2


def test_parquet_and_hub_shard_layout(tmp_path):
    datasets = pytest.importorskip("datasets")
    folder = tmp_path / "main"
    folder.mkdir()
    rows = [{"question": "What is 2 + 3?", "answer": "2 + 3 = <<2+3=5>>5\n#### 5"}] * 3
    datasets.Dataset.from_list(rows).to_parquet(str(folder / "test-00000-of-00001.parquet"))
    data = load_gsm8k("test", tmp_path)
    assert len(data) == 3 and data.rows[0] == rows[0]
    assert read_table(folder / "test-00000-of-00001.parquet") == rows


def test_bundled_samples_and_their_splits():
    for load, size in ((load_gsm8k, 240), (load_imdb, 220)):
        train, test = load("train", "bundled"), load("test", "bundled")
        assert len(train) + len(test) == size
        assert set(train.row_ids).isdisjoint(test.row_ids)
        assert train.source == test.source == "bundled"


def test_auto_falls_back_to_bundled_offline_and_says_so(capsys, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    from llm_marl_envs.data import gsm8k as gsm8k_module

    gsm8k_module._load.cache_clear()
    data = load_gsm8k("test", "auto")
    assert data.source == "bundled"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gsm8k/test: using bundled" in err and "offline" in err


def test_hub_source_offline_is_a_clear_error():
    pytest.importorskip("datasets")
    assert hub_status()[0]  # offline flag set by conftest: the cache may be tried
    with pytest.raises(DataSourceError, match="data_source='bundled'"):
        load_gsm8k("test", "hub")


def test_hub_rows_are_normalised(monkeypatch):
    """The Hub path converts a real ``datasets.Dataset`` (stand-in for the download)."""
    datasets = pytest.importorskip("datasets")
    from llm_marl_envs.data import imdb as imdb_module

    hub_rows = [{"text": "Great<br />film " * 20, "label": 1}, {"text": "short", "label": 0}]
    monkeypatch.setattr(
        datasets, "load_dataset", lambda repo, split: datasets.Dataset.from_list(hub_rows)
    )
    imdb_module._load.cache_clear()
    data = load_imdb("train", "hub")
    imdb_module._load.cache_clear()
    assert data.source == "hub:stanfordnlp/imdb"
    assert len(data) == 1 and data.row_ids == (0,) and "<br" not in data.rows[0]["text"]


@pytest.mark.parametrize(
    ("source", "error", "match"),
    [
        ("/no/such/path.jsonl", DataSourceError, "data_source must be"),
        ("hubb", DataSourceError, "none of these"),
        (12, TypeError, "data_source"),
    ],
)
def test_bad_sources(source, error, match):
    with pytest.raises(error, match=match):
        load_imdb("train", source)


def test_wrong_schema_names_the_expected_columns(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"prompt": "x", "completion": "y"}) + "\n")
    with pytest.raises(DataSourceError, match="'question' and 'answer'"):
        load_gsm8k("train", path)
    with pytest.raises(DataSourceError, match="review,sentiment"):
        load_imdb("train", path)


def test_unknown_split_in_folder_lists_files(shared_data):
    with pytest.raises(DataSourceError, match="validation"):
        load_gsm8k("validation", shared_data / "gsm8k")


def test_unsupported_file_type(tmp_path):
    path = tmp_path / "rows.txt"
    path.write_text("hello")
    with pytest.raises(DataSourceError, match="unsupported file type"):
        read_table(path)
