"""``ServerOptions``: how an ``openai:`` policy's requests travel, as one checked value; the old
keyword arguments still work for one release (with a warning), and the old module paths still
import (with a warning) as the new modules themselves."""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from llm_marl_envs.policies import GenerationConfig, ModelCache, PolicyFactory
from llm_marl_envs.policies.openai import OpenAIPolicy, ServerOptions

URL = "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("concurrency", 0, "concurrency must be an int >= 1, got 0"),
        ("concurrency", 2.0, "concurrency must be an int >= 1, got 2.0"),
        ("timeout", 0, "timeout must be a finite number > 0, got 0"),
        ("timeout", float("inf"), "timeout must be a finite number > 0, got inf"),
        ("max_retries", -1, "max_retries must be an int >= 0, got -1"),
        ("backoff", -0.5, "backoff must be a finite number >= 0, got -0.5"),
        ("warn_after", 0, "warn_after must be a positive number of seconds or None, got 0"),
        ("warn_after", "5", "warn_after must be a positive number of seconds or None, got '5'"),
        ("max_response_bytes", 0, "max_response_bytes must be an int >= 1, got 0"),
        ("stream", 1, "stream must be a bool, got 1"),
        ("api_key", 42, "api_key must be a string or None, got int"),
    ],
)
def test_each_field_is_checked_with_a_one_line_error(field, value, said):
    with pytest.raises((TypeError, ValueError)) as caught:
        ServerOptions(**{field: value})
    assert str(caught.value) == said
    assert "\n" not in str(caught.value)


def test_values_are_kept_as_plain_types_and_the_key_is_never_shown():
    options = ServerOptions(timeout=7, backoff=1, warn_after=float("inf"), api_key="sekrit")
    assert (options.timeout, options.backoff) == (7.0, 1.0)
    assert type(options.timeout) is float and options.warn_after == float("inf")
    assert "sekrit" not in repr(options) and "timeout=7.0" in repr(options)
    with pytest.raises(AttributeError):
        options.timeout = 3  # frozen
    assert options.replace(max_retries=0).max_retries == 0 and options.max_retries == 3
    with pytest.raises(TypeError, match="unexpected keyword argument.*retries"):
        options.replace(retries=1)


def test_of_takes_the_options_a_mapping_or_none():
    options = ServerOptions(concurrency=3)
    assert ServerOptions.of(options) is options
    assert ServerOptions.of(None) == ServerOptions()
    assert ServerOptions.of({"timeout": None, "max_retries": 1}) == ServerOptions(max_retries=1)
    with pytest.raises(TypeError, match="unexpected keyword argument.*bogus"):
        ServerOptions.of({"bogus": 1})
    with pytest.raises(TypeError, match="ServerOptions, a mapping or None"):
        ServerOptions.of(["concurrency", 3])


def test_the_policy_reads_its_transport_settings_from_the_options():
    options = ServerOptions(concurrency=3, timeout=12, max_retries=1, stream=False, api_key="k")
    policy = OpenAIPolicy(URL, "m", options=options)
    try:
        assert policy.options is options
        assert (policy.concurrency, policy.timeout, policy.max_retries) == (3, 12.0, 1)
        assert policy.stream is False and policy._api_key == "k"
        assert policy._request_body(_prompt())[1].get("stream") is None  # whole answers
    finally:
        policy.close()


def test_the_old_keyword_arguments_still_work_with_a_warning_naming_the_replacement():
    with pytest.warns(DeprecationWarning) as caught:
        policy = OpenAIPolicy(URL, timeout=5, concurrency=2, max_tokens=4)
    try:
        said = str(caught[0].message)
        assert "OpenAIPolicy(timeout=..., concurrency=...) is deprecated" in said
        assert "options=ServerOptions(timeout=..., concurrency=...)" in said
        assert caught[0].filename == __file__  # points at the caller
        assert policy.options == ServerOptions(timeout=5, concurrency=2)
        assert (policy.timeout, policy.concurrency, policy.max_tokens) == (5.0, 2, 4)
    finally:
        policy.close()
    with pytest.warns(DeprecationWarning, match=r"OpenAIPolicy\(max_retries=\.\.\.\)"):
        policy = OpenAIPolicy(URL, options=ServerOptions(concurrency=3), max_retries=0)
    assert (policy.concurrency, policy.max_retries) == (3, 0)  # folded into the options given
    policy.close()


def test_an_unknown_keyword_argument_is_a_type_error_naming_it():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before any deprecation warning
        with pytest.raises(TypeError, match=r"OpenAIPolicy\(\) got unexpected .* temprature"):
            OpenAIPolicy(URL, temprature=0.5, timeout=3)


def test_from_spec_and_from_config_take_options_and_the_old_arguments():
    config = GenerationConfig(max_new_tokens=9)
    policy = OpenAIPolicy.from_config(
        f"{URL}#m?retries=0", config, options=ServerOptions(max_retries=5, concurrency=2)
    )
    assert (policy.max_retries, policy.concurrency, policy.max_tokens) == (0, 2, 9)
    policy.close()
    with pytest.warns(DeprecationWarning, match=r"OpenAIPolicy\.from_spec\(timeout=\.\.\.\)"):
        policy = OpenAIPolicy.from_spec(f"{URL}#m", timeout=4)
    assert policy.timeout == 4.0
    policy.close()
    with pytest.warns(DeprecationWarning, match=r"OpenAIPolicy\.from_config\(backoff=\.\.\.\)"):
        policy = OpenAIPolicy.from_config(f"{URL}#m", config, backoff=0.0)
    assert policy.backoff == 0.0
    policy.close()


def test_the_manifest_record_does_not_change():
    policy = OpenAIPolicy(URL, "m", options=ServerOptions(concurrency=4, api_key="secret"))
    try:
        assert policy.describe() == {
            "kind": "openai-compatible",
            "base_url": URL,
            "model_id": "m",
        }
    finally:
        policy.close()


def test_model_cache_and_factory_take_options_or_the_old_dict():
    cache = ModelCache(
        {"timeout": None, "max_retries": 1, "concurrency": 4, "return_token_ids": True}
    )
    try:
        assert cache.server_options == ServerOptions(max_retries=1, concurrency=4)
        policy = cache.policy(f"openai:{URL}#m", GenerationConfig(max_new_tokens=5))
        assert policy.options == cache.server_options and policy.return_token_ids
    finally:
        cache.close()
    with pytest.raises(TypeError, match="bogus"):
        ModelCache({"bogus": 1})
    options = ServerOptions(timeout=3)
    factory = PolicyFactory("llm_marl_envs/MazeCollab-v1", server_options=options)
    try:
        assert factory.models.server_options is options
        assert factory(f"openai:{URL}#m", "gnome_0").timeout == 3.0
    finally:
        factory.close()
    with pytest.raises(ValueError, match="give server_options to the ModelCache"):
        PolicyFactory("llm_marl_envs/MazeCollab-v1", models=ModelCache(), server_options=options)


@pytest.mark.parametrize(
    ("old", "new"),
    [("llm_marl_envs.policies.openai_compat", "llm_marl_envs.policies.openai.policy")],
)
def test_the_old_module_path_warns_and_is_the_new_module(old, new):
    code = (
        "import importlib, warnings\n"
        "warnings.simplefilter('error', DeprecationWarning)\n"
        "try:\n"
        f"    importlib.import_module({old!r})\n"
        "except DeprecationWarning as warning:\n"
        "    print('warned:', warning)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        f"old, new = importlib.import_module({old!r}), importlib.import_module({new!r})\n"
        "from llm_marl_envs.policies.openai_compat import OpenAIPolicy, DEFAULT_MAX_RESPONSE_BYTES\n"
        "print(old is new, OpenAIPolicy is new.OpenAIPolicy, DEFAULT_MAX_RESPONSE_BYTES)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert f"warned: {old} is now {new}" in out.stdout
    assert out.stdout.strip().endswith(f"True True {32 * 2**20}")


def test_the_server_package_keeps_the_old_module_s_names_and_its_command():
    import llm_marl_envs.policies.server as server
    from llm_marl_envs.policies.server import command, serve

    for name in ("API_KEY_ENV", "PolicyServer", "ServerLimits", "serve_policy"):
        assert getattr(server, name) is getattr(serve, name)
    assert server.main is command.main
    out = subprocess.run(
        [sys.executable, "-m", "llm_marl_envs.policies.server", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--max-in-progress" in out.stdout and "openai:URL#MODEL" in out.stdout


def _prompt():
    from llm_marl_envs.policies import Prompt

    return Prompt("a", "hello", [], {})
