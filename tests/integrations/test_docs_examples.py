"""The examples of docs/integrations.md ("Using other RL stacks") run as written.

Every fenced ``python`` block runs in a fresh namespace, in a temporary working directory,
against the real libraries, offline. Sections whose heading starts with "Gymnasium", "TRL" or
"CoMLRL" are run by their own tests (tests/integrations/test_gymnasium.py, test_trl.py,
test_comlrl.py) and skipped here. Model servers are stood in for on loopback: an example that
talks to ``127.0.0.1:8000`` (vLLM in the page) talks to the package's own OpenAI-compatible server
serving the tiny model, on a free port that replaces 8000; in the vLLM ``bash`` recipe the
``vllm serve`` line starts that stand-in and the ``llm-marl`` line runs as
``python -m llm_marl_envs.cli``. The page's claims about SuperSuit's wrappers are checked
wrapper by wrapper, and the count of our lines (``# ours``) against the page's table.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import llm_marl_envs
from policy_server_helpers import FaultyPolicyServer

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"
TEXT = PAGE.read_text(encoding="utf-8")
DELEGATED = ("Gymnasium", "TRL", "CoMLRL")  # headings whose examples other test files run
STAND_IN = "127.0.0.1:8000"
#: What to import to skip an example whose library is missing (our GEM adapter imports GEM
#: without letting it configure the test session's root logger).
IMPORTERS = {
    "openenv": "openenv",
    "gem": "llm_marl_envs.integrations.gem",
    "llm_marl_envs.integrations.gem": "llm_marl_envs.integrations.gem",
    "supersuit": "supersuit",
    "trl": "trl",
    "skyrl_gym": "skyrl_gym",
    "llm_marl_envs.integrations.openenv": "openenv",
    "llm_marl_envs.integrations.skyrl": "skyrl_gym",
    "llm_marl_envs.integrations.verl": "verl.experimental.agent_loop",
    "llm_marl_envs.integrations.verifiers": "verifiers.v1",
}


def _blocks() -> list[tuple[str, str, str]]:
    """``(section heading, language, code)`` of every fenced block, in page order."""
    blocks, heading, fence, lines = [], "", None, []
    for line in TEXT.splitlines():
        if fence is None and line.startswith("## "):
            heading = line[3:].strip()
        elif fence is None and line.startswith("```"):
            fence, lines = line[3:].strip(), []
        elif fence is not None and line.startswith("```"):
            blocks.append((heading, fence, "\n".join(lines) + "\n"))
            fence = None
        elif fence is not None:
            lines.append(line)
    assert fence is None, "an unclosed code fence"
    return blocks


BLOCKS = [b for b in _blocks() if not b[0].startswith(DELEGATED)]
PYTHON = [(heading, code) for heading, language, code in BLOCKS if language == "python"]


def _slug(heading: str) -> str:
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading.lower())).strip("-")


@pytest.fixture(autouse=True)
def offline_loopback(monkeypatch, tmp_path):
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def vllm_stand_in():
    """The package's OpenAI-compatible server with the tiny model, as ``vllm serve MODEL`` is."""
    pytest.importorskip("torch")
    from llm_marl_envs.policies.hf import HFPolicy

    servers, policies = [], []

    def start(model: str):
        policies.append(HFPolicy.from_spec("tiny", max_new_tokens=16))
        servers.append(FaultyPolicyServer(policies[-1], model_name=model))  # records requests
        return servers[-1]

    yield start
    for server in servers:
        server.close()
    for policy in policies:
        policy.close()


def test_the_page_has_the_sections_and_placeholders():
    headings = [line[3:] for line in TEXT.splitlines() if line.startswith("## ")]
    for name in ("OpenEnv", "GEM", "PettingZoo and SuperSuit", "RLlib and Tianshou", "vLLM"):
        assert name in headings
    assert any(h.startswith("Tool calling with TRL") for h in headings)
    for placeholder, name in (
        ("<!-- gymnasium section -->", "Gymnasium"),
        ("<!-- trl section -->", "TRL"),
    ):
        assert placeholder in TEXT or any(h.startswith(name) for h in headings)
    assert len(PYTHON) >= 6


@pytest.mark.parametrize(
    ("heading", "code"), PYTHON, ids=[f"{_slug(h)}-{i}" for i, (h, _) in enumerate(PYTHON)]
)
def test_python_example_runs(heading, code, vllm_stand_in):
    for module, importer in IMPORTERS.items():
        if re.search(rf"^(import|from) {module}\b", code, re.M):
            pytest.importorskip(importer, exc_type=ImportError)  # ours raise an ImportError
    server = None
    if STAND_IN in code:
        model = re.search(rf"{STAND_IN}/v1#(\S+?)\"", code).group(1)
        server = vllm_stand_in(model)
        code = code.replace(STAND_IN, f"127.0.0.1:{server.port}")
    exec(compile(code, f"{PAGE.name}[{heading}]", "exec"), {"__name__": "__docs__"})
    if server is not None:
        assert server.requests, "the example never reached the stand-in server"
        assert server.requests[0]["body"]["return_token_ids"] is True


def test_our_lines_are_at_most_three_and_match_the_table():
    table = dict(re.findall(r"^\| \[[^\]]+\]\(#([\w-]+)\) \|.*\| (\d+|-) \|$", TEXT, re.M))
    counted = {}
    every_python = [(h, code) for h, language, code in _blocks() if language == "python"]
    for heading, code in every_python:  # the delegated sections' examples count too
        ours = sum("# ours" in line for line in code.splitlines())
        if ours:
            assert ours <= 3, (heading, ours)
            counted[_slug(heading)] = max(ours, counted.get(_slug(heading), 0))
    for anchor, count in table.items():
        if count != "-":
            assert counted.get(anchor) == int(count), (anchor, counted)


def test_the_tested_versions_are_the_installed_ones():
    """The page's "tested with" column names the versions this test environment has."""
    from importlib.metadata import PackageNotFoundError, version

    rows = re.findall(r"^\| [^|]+ \| ((?:[\w-]+ [\d.]+(?:, )?)+) \| [^|]+ \|$", TEXT, re.M)
    named = [pair.split(" ") for row in rows for pair in row.split(", ")]
    assert len(named) >= 8, named
    for distribution, tested in named:
        try:
            installed = version(distribution)
        except PackageNotFoundError:
            continue  # an extra this environment lacks: its tests skip too
        assert installed == tested, f"{distribution}: the page says {tested}, {installed} here"


@pytest.mark.slow
def test_the_vllm_recipe_runs_against_the_stand_in(vllm_stand_in, tmp_path):
    [recipe] = [
        code for heading, language, code in BLOCKS if heading == "vLLM" and language == "bash"
    ]
    server = None
    ran = []
    for line in recipe.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[:2] == ["vllm", "serve"]:
            server = vllm_stand_in(words[2])
        elif words[0] == "llm-marl":
            assert server is not None, "the recipe runs llm-marl before serving a model"
            args = [w.replace(STAND_IN, f"127.0.0.1:{server.port}") for w in words[1:]]
            proc = subprocess.run(
                [sys.executable, "-m", "llm_marl_envs.cli", *args],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert proc.returncode == 0, proc.stdout + proc.stderr
            ran.append(args)
        else:
            pytest.fail(f"the recipe has a command this test cannot stand in for: {line!r}")
    assert ran and server.requests
    out = tmp_path / ran[0][ran[0].index("--out") + 1]
    episodes = int(ran[0][ran[0].index("--episodes") + 1])
    assert len(out.read_text().splitlines()) == episodes


# ---------------------------------------------------------------------- SuperSuit's wrappers
REFUSE_TEXT = {
    "color_reduction_v0": (),
    "dtype_v0": (np.float32,),
    "flatten_v0": (),
    "normalize_obs_v0": (),
    "reshape_v0": ((1,),),
    "resize_v1": (4, 4),
    "frame_stack_v1": (2,),
    "max_observation_v0": (2,),
    "delay_observations_v0": (1,),
    "pad_observations_v0": (),
    "pad_action_space_v0": (),
    "agent_indicator_v0": (),
    "black_death_v3": (),
    "clip_actions_v0": (),
}
WORK_ON_TEXT = {
    "clip_reward_v0": {"lower_bound": 0, "upper_bound": 1},
    "sticky_actions_v0": {"repeat_action_probability": 0.25},
}


def _text_parallel_env():
    return llm_marl_envs.make_parallel("llm_marl_envs/TLDRSummarization-v0", data_source="bundled")


@pytest.mark.parametrize("name", sorted(REFUSE_TEXT))
def test_supersuit_observation_and_action_wrappers_refuse_text(name):
    supersuit = pytest.importorskip("supersuit")
    assert f"`{name}`" in TEXT
    with pytest.raises(Exception):  # noqa: B017 - each refuses in its own way (assert, type, ...)
        env = getattr(supersuit, name)(_text_parallel_env(), *REFUSE_TEXT[name])
        env.reset(seed=0)
        env.step({agent: "Some words of text." for agent in env.agents})


@pytest.mark.parametrize("name", sorted(WORK_ON_TEXT))
def test_supersuit_wrappers_that_leave_observations_alone_work(name):
    supersuit = pytest.importorskip("supersuit")
    assert f"`{name}`" in TEXT
    env = getattr(supersuit, name)(_text_parallel_env(), **WORK_ON_TEXT[name])
    observations, _ = env.reset(seed=0)
    assert all(isinstance(text, str) and text for text in observations.values())
    _, rewards, terminations, _, _ = env.step({a: "Some words of text." for a in env.agents})
    assert set(rewards) == set(observations) and all(terminations.values())


def test_turn_based_games_have_no_parallel_form_as_the_page_says():
    named = ("GSM8K", "IMDB", "MazeCollab", "DonorGame")
    for env_id in llm_marl_envs.list_envs():
        turn_based = llm_marl_envs.spec(env_id).parallel_entry_point is None
        assert turn_based == any(name in env_id for name in named), env_id
        if turn_based:
            with pytest.raises(ValueError, match="turn-based"):
                llm_marl_envs.make_parallel(env_id)
