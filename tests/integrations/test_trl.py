"""TRL's GRPOTrainer on the environments: every path trained for 2 optimizer steps (tiny model).

Paths: the rewards of ``llm_marl_envs.rewards`` as ``reward_funcs`` (text and conversational
datasets from ``env_dataset``), ``env_reward`` (replay in the real env), ``env_rollout_func``
(whole episodes through the rollout engine) and ``tool_environment`` (``environment_factory``,
with TRL's Qwen3 chat template, which renders tool calls). Each asserts that the reward
reached the trainer: the values the reward function returned are the ones TRL logged.
The ``test_docs_*`` tests run the examples of docs/integrations.md (TRL section) as written.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import pytest

trl = pytest.importorskip("trl")
torch = pytest.importorskip("torch")

import llm_marl_envs  # noqa: E402
from llm_marl_envs.integrations import trl as trl_envs  # noqa: E402
from llm_marl_envs.integrations.trl import (  # noqa: E402
    coop_coding_reward,
    env_dataset,
    env_reward,
    env_rollout_func,
    episode_reward,
    tool_environment,
)
from llm_marl_envs.integrations.trl.rollout_func import trl_batch  # noqa: E402
from llm_marl_envs.models import tiny_model  # noqa: E402
from llm_marl_envs.policies.generation import GenerationConfig  # noqa: E402
from llm_marl_envs.policies.scripted import scripted_policy  # noqa: E402
from llm_marl_envs.rewards import gsm8k_reward, joint_reward, sentiment_reward  # noqa: E402

GRPOConfig, GRPOTrainer = trl.GRPOConfig, trl.GRPOTrainer
BUNDLED = {"data_source": "bundled"}
MAZE = {"size": 5, "max_cycles": 3}
QWEN3_TEMPLATE = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()

#: (env id, learner, env kwargs, the reward of llm_marl_envs.rewards that scores it)
TASKS = [
    ("llm_marl_envs/GSM8K-v0", "observer_0", BUNDLED, gsm8k_reward),
    ("llm_marl_envs/IMDBSentiment-v0", "observer_0", BUNDLED, sentiment_reward),
    ("llm_marl_envs/TLDRSummarization-v0", "elaborator_0", BUNDLED, joint_reward),
    ("llm_marl_envs/ArxivExpansion-v0", "background_0", BUNDLED, joint_reward),
    ("llm_marl_envs/CoopCoding-v0", "main_0", {}, coop_coding_reward),
    ("llm_marl_envs/CoopCoding-v3", "helper_0", {}, coop_coding_reward),  # authors_harness
]
TASK_IDS = [t[0].split("/")[1] for t in TASKS]


@pytest.fixture(autouse=True)
def _quiet(monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func, environment_factory


@pytest.fixture
def config(tmp_path):
    """GRPOConfig for a 2-step CPU run: batch 2, 2 generations (one group per step)."""

    def make(**overrides):
        options = {
            "output_dir": str(tmp_path / "out"),
            "max_steps": 2,
            "per_device_train_batch_size": 2,
            "num_generations": 2,
            "max_completion_length": 8,
            "learning_rate": 1e-4,
            "report_to": [],
            "use_cpu": True,
            "logging_steps": 1,
            "save_strategy": "no",
            "disable_tqdm": True,
            "seed": 0,
        }
        options.update(overrides)
        return GRPOConfig(**options)

    return make


class Spy:
    """A reward function that records what TRL passed and what it returned."""

    def __init__(self, fn, name=None):
        self.fn, self.calls, self.outputs = fn, [], []
        self.__name__ = name or fn.__name__

    def __call__(self, **kwargs):
        out = self.fn(**kwargs)
        self.calls.append(kwargs)
        self.outputs.append(list(out))
        return out


def logged(trainer, name):
    """The per-step means TRL logged for reward function ``name``."""
    key = f"rewards/{name}/mean"
    return [entry[key] for entry in trainer.state.log_history if key in entry]


def assert_reached_trainer(trainer, spy, steps=2):
    means = logged(trainer, spy.__name__)
    assert len(spy.outputs) == steps and len(means) == steps
    for step_mean, values in zip(means, spy.outputs, strict=True):
        assert step_mean == pytest.approx(sum(values) / len(values), abs=1e-5)


# --------------------------------------------------------------------------- reward_funcs
@pytest.mark.parametrize("conversational", [False, True], ids=["text", "chat"])
@pytest.mark.parametrize(("env_id", "agent", "env_kwargs", "reward"), TASKS, ids=TASK_IDS)
@pytest.mark.slow
def test_reward_funcs_train_with_env_datasets(
    env_id, agent, env_kwargs, reward, conversational, config
):
    model, tokenizer = tiny_model()
    dataset = env_dataset(env_id, agent, 4, env_kwargs=env_kwargs, conversational=conversational)
    spy = Spy(reward)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=spy,
        args=config(),
        train_dataset=dataset,
    )
    trainer.train()
    assert_reached_trainer(trainer, spy)
    call = spy.calls[0]
    prompt_type = list if conversational else str
    assert all(isinstance(p, prompt_type) for p in call["prompts"])
    assert all(isinstance(c, prompt_type) for c in call["completions"])
    assert {"seed", "agent", "trainer_state", "completion_ids"} <= set(call)
    assert set(dataset.column_names) - {"prompt"} <= set(call)


@pytest.mark.parametrize(("env_id", "agent", "env_kwargs", "reward"), TASKS, ids=TASK_IDS)
def test_each_reward_on_its_dataset_columns_equals_the_env_reward(
    env_id, agent, env_kwargs, reward
):
    """The learner's scripted answer, scored by the reward from the row's columns, earns what
    the real env pays it (individual rewards: GSM8K and IMDB in reward_mode='individual')."""
    kwargs = dict(env_kwargs)
    if "GSM8K" in env_id or "IMDB" in env_id:
        kwargs["reward_mode"] = "individual"
    dataset = env_dataset(env_id, agent, 3, seed=5, env_kwargs=kwargs, conversational=True)
    player = scripted_policy(env_id, agent, 0)
    answers = [
        player(llm_marl_envs_observation(env_id, kwargs, agent, row["seed"]), {}) for row in dataset
    ]
    columns = {k: dataset[k] for k in dataset.column_names if k != "prompt"}
    chat = [[{"role": "assistant", "content": a}] for a in answers]
    direct = reward(completions=chat, prompts=list(dataset["prompt"]), **columns)
    replayed = env_reward(env_id, agent, env_kwargs=kwargs)(
        completions=answers, prompts=list(dataset["prompt"]), **columns
    )
    assert direct == pytest.approx(replayed)
    assert any(value != 0 for value in direct)


def llm_marl_envs_observation(env_id, env_kwargs, agent, seed):
    """The learner's first observation (partners scripted), for its scripted answer."""
    env = llm_marl_envs.make(env_id, **env_kwargs)
    env.reset(seed=seed)
    for current in env.agent_iter():
        observation, _, terminated, truncated, info = env.last()
        if current == agent:
            return str(observation)
        env.step(
            None
            if terminated or truncated
            else scripted_policy(env_id, current, 0)(str(observation), info)
        )
    raise AssertionError(f"{agent} never acts")


def test_coop_coding_reward_runs_the_tests_in_the_sandbox():
    columns = {
        "problem_prompt": ['def add(a, b):\n    """Add two numbers."""\n'],
        "test": [
            "def check(candidate):\n    assert candidate(1, 2) == 3\n    assert candidate(2, 2) == 5\n"
        ],
        "entry_point": ["add"],
        "partner_completion": ["def aux(a, b):\n    return a + b\n"],
        "agent": ["main_0"],
    }
    main = "```python\ndef add(a, b):\n    return aux(a, b)\n```"
    # structure 0.4 + 0.6, syntax 0.5, tests 1/2 (the second assert is wrong), calls aux 0.5
    assert coop_coding_reward(completions=[main], **columns) == [pytest.approx(2.5)]


def test_env_dataset_rows():
    text = env_dataset("llm_marl_envs/GSM8K-v0", "observer_0", 3, seed=7, env_kwargs=BUNDLED)
    assert text["seed"] == [7, 8, 9]
    env = llm_marl_envs.make("llm_marl_envs/GSM8K-v0", **BUNDLED)
    env.reset(seed=8)
    assert text[1]["answer"] == env.gold and text[1]["question"] == env.question
    assert text[1]["prompt"][-1]["content"].startswith(f"Question: {env.question}\nReference: ")
    assert text[1]["partner_completion"] in text[1]["prompt"][-1]["content"]
    tldr = env_dataset(
        "llm_marl_envs/TLDRSummarization-v0",
        "summarizer_0",
        1,
        env_kwargs=BUNDLED,
        conversational=False,
    )
    assert tldr[0]["learner"] == "first" and tldr[0]["task"] == "tldr"
    assert isinstance(tldr[0]["prompt"], str) and tldr[0]["partner_completion"]
    with pytest.raises(ValueError, match="no agent"):
        env_dataset("llm_marl_envs/GSM8K-v0", "nobody", 1, env_kwargs=BUNDLED)


# --------------------------------------------------------------------------- env_reward
@pytest.mark.slow
def test_env_reward_trains_on_replayed_episodes(config):
    model, tokenizer = tiny_model()
    dataset = env_dataset("llm_marl_envs/MazeCollab-v0", "gnome_0", 4, env_kwargs=MAZE)
    spy = Spy(env_reward("llm_marl_envs/MazeCollab-v0", "gnome_0", env_kwargs=MAZE))
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=spy,
        args=config(),
        train_dataset=dataset,
    )
    trainer.train()
    assert spy.__name__ == "env_reward"
    assert_reached_trainer(trainer, spy)
    assert all(v < 0 for values in spy.outputs for v in values)  # step penalties at least


def test_env_reward_replays_the_whole_episode():
    """GSM8K in collective mode: the pioneer's reward is r1 + r2, the observer (scripted)
    answering after seeing the pioneer's completion."""
    gsm8k = "llm_marl_envs/GSM8K-v0"
    dataset = env_dataset(gsm8k, "pioneer_0", 2, env_kwargs=BUNDLED, conversational=False)
    reward = env_reward(gsm8k, "pioneer_0", env_kwargs=BUNDLED)
    completions = [f"The answer is {row['answer']}." for row in dataset]
    expected = []
    for row, completion in zip(dataset, completions, strict=True):
        env = llm_marl_envs.make(gsm8k, **BUNDLED)
        env.reset(seed=row["seed"])
        env.step(completion)
        observation, _, _, _, info = env.last()
        env.step(scripted_policy(gsm8k, "observer_0", 0)(str(observation), info))
        expected.append(env.rewards["pioneer_0"])
    out = reward(completions=completions, prompts=list(dataset["prompt"]), seed=dataset["seed"])
    assert out == expected and out[0] >= 1.0
    other = env_reward(gsm8k, "pioneer_0", env_kwargs={"data_source": "procedural"})
    with pytest.raises(ValueError, match="same env_id"):
        other(completions=completions, prompts=list(dataset["prompt"]), seed=dataset["seed"])
    with pytest.raises(TypeError, match="seed"):
        reward(completions=completions)


# --------------------------------------------------------------------------- rollout_func
@pytest.mark.slow
def test_rollout_func_plays_whole_episodes_in_groups(config):
    model, tokenizer = tiny_model()
    dataset = env_dataset("llm_marl_envs/MazeCollab-v0", "gnome_1", 4, env_kwargs=MAZE)
    rollout_func = env_rollout_func("llm_marl_envs/MazeCollab-v0", "gnome_1", env_kwargs=MAZE)
    seen = []

    def recorded(prompts, trainer):
        out = rollout_func(prompts, trainer)
        seen.append((prompts, out))
        return out

    spy = Spy(episode_reward)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=spy,
        args=config(per_device_train_batch_size=4),  # two groups of 2 per step
        train_dataset=dataset,
        rollout_func=recorded,
    )
    trainer.train()
    assert_reached_trainer(trainer, spy)
    for (prompts, out), call in zip(seen, spy.calls, strict=True):
        assert call["episode_return"] == out["episode_return"]
        assert prompts[0] == prompts[1] and prompts[2] == prompts[3]  # TRL's repeats
        assert out["prompt_ids"][0] == out["prompt_ids"][1] != out["prompt_ids"][2]
        for ids, mask, logprobs in zip(
            out["completion_ids"], out["env_mask"], out["logprobs"], strict=True
        ):
            assert len(ids) == len(mask) == len(logprobs) and mask[0] == 1
        assert all(t >= 2 for t in out["learner_turns"])  # whole multi-turn episodes
    # called directly: a group of 2, and prompts that are not repeated (groups of 1)
    rows = [dataset[0]["prompt"], dataset[0]["prompt"], dataset[3]["prompt"], dataset[1]["prompt"]]
    out = rollout_func(rows, trainer)
    assert out["prompt_ids"][0] == out["prompt_ids"][1]
    assert len({tuple(ids) for ids in out["prompt_ids"]}) == 3
    with pytest.raises(ValueError, match="env_dataset"):
        rollout_func([[{"role": "user", "content": "not a row"}]] * 2, trainer)


@pytest.mark.slow
def test_rollout_func_self_play(config):
    model, tokenizer = tiny_model()
    gsm8k = "llm_marl_envs/GSM8K-v0"
    dataset = env_dataset(gsm8k, "pioneer_0", 2, env_kwargs=BUNDLED, conversational=False)
    rollout_func = env_rollout_func(
        gsm8k, "pioneer_0", partners={"observer_0": "learner"}, env_kwargs=BUNDLED
    )
    spy = Spy(episode_reward)
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        reward_funcs=spy,
        args=config(),
        train_dataset=dataset,
        rollout_func=rollout_func,
    )
    trainer.train()
    assert_reached_trainer(trainer, spy)
    assert spy.calls[0]["learner_turns"] == [1, 1]


# --------------------------------------------------------------------------- environment_factory
def tool_calling(model, tokenizer, call: str):
    """The tiny model, made to answer every turn with ``call`` (a Qwen3 tool call), so that
    TRL's tool loop really runs; its weights and log-probabilities stay the model's own."""
    ids = tokenizer(call + "<|im_end|>", add_special_tokens=False)["input_ids"]

    class ToolCaller(type(model)):
        def generate(self, input_ids=None, attention_mask=None, **kwargs):
            tail = torch.tensor([ids] * input_ids.shape[0], dtype=input_ids.dtype)
            return torch.cat([input_ids, tail], dim=1)

    model.__class__ = ToolCaller
    return model


MAZE_CALL = (
    '<tool_call>\n{"name": "move", "arguments": {"direction": "up", "message": "hi"}}\n</tool_call>'
)
DONOR_CALL = '<tool_call>\n{"name": "donate", "arguments": {"amount": 3}}\n</tool_call>'


@pytest.mark.parametrize(
    ("env_id", "agent", "env_kwargs", "call", "tool", "with_dataset"),
    [
        ("llm_marl_envs/MazeCollab-v0", "gnome_0", MAZE, MAZE_CALL, "move", True),
        (
            "llm_marl_envs/DonorGame-v0",
            "player_1",
            {"num_agents": 4, "num_rounds": 2},
            DONOR_CALL,
            "donate",
            False,
        ),
    ],
    ids=["maze-dataset", "donor-no-dataset"],
)
@pytest.mark.slow
def test_environment_factory_plays_tool_calls(
    env_id, agent, env_kwargs, call, tool, with_dataset, config
):
    model, tokenizer = tiny_model()
    tokenizer.chat_template = QWEN3_TEMPLATE  # renders tool calls; TRL parses Qwen3's
    model = tool_calling(model, tokenizer, call)
    base = tool_environment(env_id, agent, env_kwargs=env_kwargs)
    calls, rewards = [], []

    class Recorded(base):
        def get_reward(self):
            rewards.append(super().get_reward())
            return rewards[-1]

    method = getattr(base, tool)

    @functools.wraps(method)
    def recorded_tool(self, *args, **kwargs):
        result = method(self, *args, **kwargs)
        calls.append((kwargs, result))
        return result

    setattr(Recorded, tool, recorded_tool)
    Recorded.__name__ = base.__name__
    dataset = env_dataset(env_id, agent, 4, env_kwargs=env_kwargs) if with_dataset else None
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config(max_completion_length=256, max_tool_calling_iterations=1),
        train_dataset=dataset,
        environment_factory=Recorded,
    )
    trainer.train()
    assert [t.__name__ for t in trainer.tools] == [tool]
    assert calls and all(kwargs and isinstance(result, str) and result for kwargs, result in calls)
    means = logged(trainer, base.__name__)
    assert len(means) == 2 and len(rewards) == 4  # one get_reward per rollout, 2 per step
    for step, mean in enumerate(means):
        assert mean == pytest.approx(sum(rewards[2 * step : 2 * step + 2]) / 2, abs=1e-5)


def test_tool_environment_in_trl_tool_loop_terms():
    """What TRL does with the class: reset(**row), the tool schema in the chat template,
    the model's tool call parsed and executed, get_reward."""
    from trl.chat_template_utils import add_response_schema, parse_response, supports_tool_calling

    _, tokenizer = tiny_model()
    assert not supports_tool_calling(tokenizer)  # the tiny ChatML template drops tool calls
    tokenizer.chat_template = QWEN3_TEMPLATE
    assert supports_tool_calling(tokenizer)
    add_response_schema(tokenizer)
    Maze = tool_environment("llm_marl_envs/MazeCollab-v0", "gnome_0", env_kwargs=MAZE)
    row = env_dataset("llm_marl_envs/MazeCollab-v0", "gnome_0", 1, env_kwargs=MAZE)[0]
    env = Maze()
    assert env.reset(**row) is None  # the row's prompt already holds the observation
    rendered = tokenizer.apply_chat_template(
        row["prompt"], tools=[env.move], tokenize=False, add_generation_prompt=True
    )
    assert '"name": "move"' in rendered and "up, down, left, right or stay" in rendered
    prefix = tokenizer(rendered, add_special_tokens=False)["input_ids"]
    ids = tokenizer(MAZE_CALL + "<|im_end|>", add_special_tokens=False)["input_ids"]
    [tool_call] = parse_response(tokenizer, ids, prefix=prefix, tools=[env.move])["tool_calls"]
    function = tool_call["function"]
    result = getattr(env, function["name"])(**function["arguments"])
    assert "Turn " in result  # the learner's next observation
    reward = env.get_reward()
    replay = env_reward(
        "llm_marl_envs/MazeCollab-v0", "gnome_0", env_kwargs=MAZE, continuation=None
    )(completions=["MOVE: up\nSAY: hi"], seed=[row["seed"]])
    assert reward == pytest.approx(replay[0]) and math.isfinite(reward)
    fresh = Maze()
    observation = fresh.reset(prompt=[{"role": "user", "content": ""}])  # TRL's placeholder
    assert "MOVE:" in observation and fresh.get_reward() < 0
    assert fresh.move("up") == "The game is over; no more moves."
    punishing = trl_envs.tool_environment(
        "llm_marl_envs/DonorGame-v0", "player_0", env_kwargs={"num_agents": 4, "punishment": True}
    )
    tools = [n for n in dir(punishing) if not n.startswith("_")]
    assert tools == ["donate", "get_reward", "punish", "reset"]


# --------------------------------------------------------------------------- docs examples
PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrations.md"


def _page_blocks(section: str) -> list[str]:
    """The fenced ``python`` blocks of the page's ``## {section}``, in order."""
    blocks, heading, fence, lines = [], "", None, []
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        if fence is None and line.startswith("## "):
            heading = line[3:].strip()
        elif fence is None and line.startswith("```"):
            fence, lines = line[3:].strip(), []
        elif fence is not None and line.startswith("```"):
            if heading == section and fence == "python":
                blocks.append("\n".join(lines) + "\n")
            fence = None
        elif fence is not None:
            lines.append(line)
    return blocks


SETUP, *EXAMPLES = _page_blocks("TRL (GRPOTrainer)")
#: What each example's trainer logs, in page order.
EXAMPLE_LOGS = ["gsm8k_reward", "env_reward", "episode_reward", "MazeCollabEnvironment"]


def test_docs_examples_are_complete():
    """Issue 30: the snippets omitted their imports. Each example, after the page's setup
    block, names nothing it does not import or define; the ids are the newest versions."""
    import builtins
    import symtable

    setup_names = {"model", "tokenizer", "config"}
    assert len(EXAMPLES) == len(EXAMPLE_LOGS)
    for code in [SETUP, *EXAMPLES]:
        table = symtable.symtable(code, "example", "exec")
        undefined = {
            symbol.get_name()
            for symbol in table.get_symbols()
            if symbol.is_referenced() and not symbol.is_assigned() and not symbol.is_imported()
        } - set(dir(builtins))
        assert undefined <= (setup_names if code is not SETUP else set()), (undefined, code)
        for env_id in re.findall(r"llm_marl_envs/[\w-]+-v\d+", code):
            assert env_id in llm_marl_envs.latest_envs(), f"{env_id} is out of date"


@pytest.fixture
def page_setup(config, monkeypatch, tmp_path):
    """The page's setup block, run with stand-ins: the tiny model for the downloaded one
    (offline), and this file's CPU config (2 steps, short completions) for the page's
    ``GRPOConfig`` (whose arguments are checked)."""
    import transformers

    monkeypatch.chdir(tmp_path)
    loaded, configured = [], []

    def load(part):
        return lambda name, **kw: loaded.append(name) or tiny_model()[part]

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", load(0))
    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", load(1))
    monkeypatch.setattr(trl, "GRPOConfig", lambda **kw: configured.append(kw) or config())
    namespace: dict = {"__name__": "__docs__"}
    exec(compile(SETUP, f"{PAGE.name}[TRL setup]", "exec"), namespace)
    assert len(loaded) == 2 and len(configured) == 1
    GRPOConfig(**{**configured[0], "output_dir": str(tmp_path / "page"), "use_cpu": True})
    namespace["config"] = config()
    return namespace


@pytest.mark.slow
@pytest.mark.parametrize(("index", "logged_as"), list(enumerate(EXAMPLE_LOGS)), ids=EXAMPLE_LOGS)
def test_docs_example_trains(page_setup, config, index, logged_as):
    if logged_as == "MazeCollabEnvironment":
        page_setup["tokenizer"].chat_template = QWEN3_TEMPLATE  # a tool-calling template
        page_setup["config"] = config(max_completion_length=64)  # room for a tool call
    code = EXAMPLES[index]
    exec(compile(code, f"{PAGE.name}[TRL {index}]", "exec"), page_setup)
    assert len(logged(page_setup["trainer"], logged_as)) == 2


def test_env_reward_with_the_trained_model_as_continuation():
    """The page's setting that makes the learner's own later turns count in env_reward:
    continuation=HFPolicy(model, tokenizer): the model plays them, and its training mode is
    left as it was."""
    from llm_marl_envs.policies.base import Policy
    from llm_marl_envs.policies.hf import HFPolicy

    model, tokenizer = tiny_model()
    model.train()
    maze = "llm_marl_envs/MazeCollab-v1"
    played = []

    class Recording(Policy):
        def __init__(self, inner):
            self.inner = inner

        def generate(self, prompts):
            out = self.inner.generate(prompts)
            played.extend(c.text for c in out)
            return out

    policy = HFPolicy(
        model, tokenizer, max_new_tokens=8, generation=GenerationConfig(do_sample=True)
    )
    dataset = env_dataset(maze, "gnome_0", 2, env_kwargs=MAZE)
    reward = env_reward(maze, "gnome_0", env_kwargs=MAZE, continuation=Recording(policy))
    out = reward(completions=["MOVE: up"] * 2, prompts=dataset["prompt"], seed=dataset["seed"])
    assert played and model.training
    later = iter(played)

    expected = []
    for seed in dataset["seed"]:
        env = llm_marl_envs.make(maze, **MAZE)
        env.reset(seed=seed)
        partner = scripted_policy(maze, "gnome_1", 0)
        first, total = True, 0.0
        for agent in env.agent_iter():
            observation, reward_now, terminated, truncated, info = env.last()
            if agent == "gnome_0" and not first:
                total += reward_now
            if terminated or truncated:
                env.step(None)
            elif agent == "gnome_0":
                action = "MOVE: up" if first else next(later)
                first = False
                env.step(action)
            else:
                env.step(partner(str(observation), info))
        expected.append(total)
    assert out == pytest.approx(expected)


def test_rollout_turns_join_into_one_completion_while_the_chat_extends():
    """A learner's later turns join its first as long as each prompt extends the previous
    prompt + completion token for token; the env's tokens between them are masked."""
    from llm_marl_envs.rollout import EpisodeRecord, TurnRecord

    def turn(prompt_ids, completion_ids, reward):
        return TurnRecord(
            "a",
            None,
            "obs",
            [],
            "x",
            reward,
            prompt_ids=prompt_ids,
            completion_ids=completion_ids,
            logprobs=[-1.0] * len(completion_ids),
        )

    episode = EpisodeRecord(env_id="e", seed=0, episode=0, group=0)
    episode.turns = [
        turn([1, 2], [3, 4], 0.5),
        TurnRecord("b", None, "partner", [], "y", 9.0),
        turn([1, 2, 3, 4, 8, 9], [5], 0.25),
        turn([1, 2, 7], [6], 1.0),  # not an extension: left out of the tokens
    ]
    out = trl_batch([episode], ["obs"], [0], 1, "a")
    assert out["prompt_ids"] == [[1, 2]] and out["completion_ids"] == [[3, 4, 8, 9, 5]]
    assert out["env_mask"] == [[1, 1, 0, 0, 1]]
    assert out["logprobs"] == [[-1.0, -1.0, 0.0, 0.0, -1.0]]
    assert out["trained_turns"] == [2] and out["learner_turns"] == [3]
    assert out["episode_return"] == [1.75]


def test_coop_coding_reward_with_the_authors_implementation():
    columns = {
        "problem_prompt": ['def add(a, b):\n    """Add two numbers."""\n'],
        # Their runner takes each assert line alone: inside the loop, `a` is undefined.
        "test": [
            "def check(candidate):\n    for a in range(3):\n        assert candidate(a, 1) == a + 1\n"
        ],
        "entry_point": ["add"],
        "agent": ["helper_0"],
        "partner_completion": ["def add(a, b):\n    return aux(a, b)\n"],
    }
    aux = ["def aux(a, b):\n    return a + b\n"]
    assert coop_coding_reward(aux, **columns) == [pytest.approx(3.0)]  # paper: the loop passes
    assert coop_coding_reward(aux, reward_impl="authors", **columns) == [1.5]
    with pytest.raises(ValueError, match="reward_impl must be"):
        coop_coding_reward(aux, reward_impl="theirs", **columns)
