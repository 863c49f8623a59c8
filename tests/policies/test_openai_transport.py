"""The ``openai:`` route's transport (issue 39), against the package's stand-in server and
synthetic streams: the adaptive window, streamed answers, deadlines that grow with the budget,
transport options in specs and on the command line, usage, and what a server cannot give."""

from __future__ import annotations

import io
import json
import threading
import time
from collections.abc import Callable, Sequence

import pytest

from llm_marl_envs.policies import CallablePolicy, Completion, Policy, PolicyError, Prompt
from llm_marl_envs.policies.openai.answers import read_stream, clean_text
from llm_marl_envs.policies.openai.flow import START, Window, deadline
from llm_marl_envs.policies.openai import OpenAIPolicy, ServerOptions, split_spec
from policy_server_helpers import FaultyPolicyServer


def chat(text: str) -> Prompt:
    return Prompt("a", text, [{"role": "user", "content": text}], {})


@pytest.fixture
def serve():
    servers: list[FaultyPolicyServer] = []

    def start(policy: Policy | None = None, **kwargs) -> FaultyPolicyServer:
        server = FaultyPolicyServer(policy or CallablePolicy(lambda o, i: f"  {o}  "), **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


# --------------------------------------------------------------------------- the window
def test_the_window_starts_low_grows_while_the_pace_holds_and_halves_on_a_timeout():
    window = Window(most=8)
    assert window.limit == START == 2
    for _ in range(40):  # answers at a steady pace: one more request per round
        assert window.acquire()
        window.release("ok", seconds=1.0, tokens=10)
    assert window.limit == 8  # never above the most
    window.acquire()
    window.release("full")
    assert window.limit == 4
    for _ in range(20):  # answers four times slower per token (a queueing server): no growth
        window.acquire()
        window.release("ok", seconds=4.0, tokens=10)
    assert window.limit == 4
    window.acquire()
    window.release("other")  # another failure says nothing about the load
    assert window.limit == 4


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _rounds(window: Window, clock: Clock, rounds: int, per_token: Callable) -> list[int]:
    """Rounds of answers: the window's limit of requests is sent at once, and each answer of
    10 tokens takes ``per_token(load)`` seconds per token; the limit after each round."""
    limits = []
    for _ in range(rounds):
        load = window.limit
        tickets = [window.acquire() for _ in range(load)]
        clock.now += 10 * per_token(load)
        for ticket in tickets:
            window.release("ok", seconds=10 * per_token(load), tokens=10, ticket=ticket)
        limits.append(window.limit)
    return limits


def test_a_batching_server_fills_the_window_in_a_few_rounds():
    """Latency that grows slower than the load (a server that batches; transformers serve with
    continuous batching on 2 cores measured 1.3x the time per token at twice the load, 2.4x at
    four times): the window doubles per round up to the most."""
    clock = Clock()
    window = Window(most=16, clock=clock)
    limits = _rounds(window, clock, 4, lambda load: 0.05 * (load / 2) ** 0.5)
    assert limits == [4, 8, 16, 16]


def test_a_queueing_server_keeps_the_window_low():
    """Latency in proportion to the load (one request at a time): the window stops growing
    once the answers slow down with it."""
    clock = Clock()
    window = Window(most=16, clock=clock)
    limits = _rounds(window, clock, 10, lambda load: 0.05 * load)
    assert limits[-1] <= 4 and limits[-1] == limits[-2]


def test_the_window_holds_requests_beyond_its_limit():
    window = Window(most=8, start=1)
    assert window.acquire()
    released = threading.Event()

    def second() -> None:
        window.acquire()
        released.set()

    thread = threading.Thread(target=second)
    thread.start()
    assert not released.wait(0.3)  # the second waits for room
    window.release("ok", 1.0, 1)
    assert released.wait(2)
    thread.join()
    assert window.acquire(stop=lambda: True) is False or window.in_flight <= 2


def test_a_restarted_window_starts_again_as_a_new_one(serve):
    """``restart_window`` forgets what the window learnt (a restarted or another server):
    grown to the most, it starts low again; ``start`` holds it at the most from the first
    request; requests in flight refuse it."""
    clock = Clock()
    window = Window(most=16, clock=clock)
    assert _rounds(window, clock, 4, lambda load: 0.05)[-1] == 16 and window.peak == 16
    window.restart()
    assert (window.limit, window.peak) == (START, 0)
    window.restart(16)
    assert window.limit == 16
    ticket = window.acquire()
    with pytest.raises(RuntimeError, match="in flight"):
        window.restart()
    window.release("ok", 1.0, 1, ticket)

    server = serve()
    policy = OpenAIPolicy(server.url, model="m", options=ServerOptions(concurrency=4))
    policy.generate([chat(f"q{i}") for i in range(8)])
    assert 1 <= policy.peak_in_flight <= 4
    policy.restart_window(4)
    assert policy._window.limit == 4 and policy.peak_in_flight == 0
    policy.restart_window(99)  # never beyond the concurrency
    assert policy._window.limit == 4
    policy.close()


@pytest.mark.slow
def test_a_serial_server_is_not_flooded(serve):
    """A server that answers one request at a time: the window settles low instead of putting
    every request in its queue (where each would wait for all the others).

    Each answer takes 0.2 s, as a short answer from a served model does: with 0.05 s (the
    test's first form) the client's own overhead on 2 starved cores was as large as the
    queueing it has to see, and the window reached 11 to 16 in 5 of 6 runs beside 6 busy loops;
    at 0.2 s it stayed at 3 to 6 there. The window reads wall-clock latency, so a burst of CPU
    starvation that fades while it grows looks to it like a server that keeps up (CI saw the
    window reach 16 once beside three other xdist workers): the measurement gets three tries,
    each with a new policy. A window that ignored the latency reaches 16 in every one; the
    exact arithmetic is in the simulated-clock tests above."""
    lock = threading.Lock()

    def serial(observation: str, info: dict) -> str:
        with lock:
            time.sleep(0.2)
        return "ok"

    server = serve(CallablePolicy(serial))
    limits = []
    for _ in range(3):
        policy = OpenAIPolicy(server.url, options=ServerOptions(concurrency=16, backoff=0.01))
        try:
            policy.generate([chat(f"q{i}") for i in range(32)])
            limits.append(policy._window.limit)
        finally:
            policy.close()
        if limits[-1] < 8:
            break
    assert min(limits) < 8, f"the window settled at {limits} in three tries"


def test_the_deadline_grows_with_the_budget():
    assert deadline(128) == pytest.approx(62.0) and deadline(512) > deadline(128)
    policy = OpenAIPolicy("http://127.0.0.1:9/v1", max_tokens=16)
    try:
        assert policy.timeout == deadline(16)
        from llm_marl_envs.policies import GenerationConfig

        bigger = policy.with_generation(GenerationConfig(max_new_tokens=512))
        assert bigger.timeout == deadline(512)
        assert OpenAIPolicy.from_spec("http://127.0.0.1:9/v1#m?timeout=7").timeout == 7
    finally:
        policy.close()


def test_a_timeout_names_the_settings_it_ran_with(serve):
    server = serve(delay=1.0)
    policy = OpenAIPolicy(
        server.url, options=ServerOptions(timeout=0.2, max_retries=1, backoff=0.01, concurrency=3)
    )
    try:
        with pytest.raises(PolicyError) as caught:
            policy.generate([chat("slow")])
    finally:
        policy.close()
    said = str(caught.value)
    assert "concurrency 3" in said and "0.2s deadline" in said
    assert "--timeout" in said and "--concurrency" in said and "\n" not in said


# --------------------------------------------------------------------------- streams
class Padded(Policy):
    """Answers with whitespace around the text, and three completion token ids (so the stand-in
    server reports ``usage``)."""

    name = "padded"

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return [Completion(f"  {p.observation}  ", completion_ids=[5, 6, 7]) for p in prompts]


def test_requests_stream_and_answers_are_stripped_with_their_usage(serve):
    server = serve(Padded())
    policy = OpenAIPolicy(server.url, max_tokens=8)
    try:
        [completion] = policy.generate([chat("left")])
    finally:
        policy.close()
    body = server.requests[-1]["body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert completion.text == "left" == clean_text("  left  ")
    assert completion.completion_tokens == 3  # the server's usage, not the (absent) ids


def test_a_whole_answer_request_is_still_possible(serve):
    server = serve()
    policy = OpenAIPolicy(server.url, options=ServerOptions(stream=False))
    try:
        assert policy.generate([chat("x")])[0].text == "x"
    finally:
        policy.close()
    assert "stream" not in server.requests[-1]["body"]


def _stream(*events: str) -> io.BufferedReader:
    return io.BufferedReader(io.BytesIO("".join(f"{e}\n\n" for e in events).encode()))


def chunk(**choice) -> str:
    return "data: " + json.dumps({"choices": [{"index": 0, **choice}], "model": "m"})


def test_a_stream_is_put_together_into_one_answer():
    answer = read_stream(
        _stream(
            ": a comment",
            chunk(delta={"role": "assistant"}),
            chunk(delta={"content": "35 + "}, logprobs={"content": [{"logprob": -0.5}]}),
            chunk(delta={"content": "12"}, logprobs={"content": [{"logprob": -0.25}]}),
            chunk(delta={}, finish_reason="stop"),
            "data: " + json.dumps({"choices": [], "usage": {"completion_tokens": 2}}),
            "data: [DONE]",
        ),
        cap=10_000,
    )
    assert answer["choices"][0]["message"]["content"] == "35 + 12"
    assert answer["choices"][0]["finish_reason"] == "stop"
    assert answer["choices"][0]["logprobs"]["content"] == [{"logprob": -0.5}, {"logprob": -0.25}]
    assert answer["usage"] == {"completion_tokens": 2} and answer["model"] == "m"
    text = read_stream(_stream(chunk(text="a"), chunk(text="b", finish_reason="length")), 1000)
    assert text["choices"][0]["text"] == "ab"  # a completions stream, ended by the connection


@pytest.mark.parametrize(
    ("events", "error", "words"),
    [
        ([chunk(delta={"content": "half"})], Exception, ""),  # cut short: IncompleteRead
        (['data: {"error": {"message": "model crashed"}}'], PolicyError, "model crashed"),
        (["data: {not json"], PolicyError, "invalid JSON"),
        ([chunk(delta={"content": "x" * 500}, finish_reason="stop")], PolicyError, "longer than"),
    ],
)
def test_a_bad_stream_fails_in_one_line(events, error, words):
    with pytest.raises(error, match=words):
        read_stream(_stream(*events), cap=300)


def test_a_tool_call_only_stream_is_unusable_not_empty():
    from llm_marl_envs.policies.openai.answers import parse_completion

    answer = read_stream(
        _stream(chunk(delta={"tool_calls": [{}]}, finish_reason="tool_calls")), 1000
    )
    with pytest.raises(PolicyError, match="tool_calls only"):
        parse_completion(answer, "url")
    empty = read_stream(_stream(chunk(delta={"role": "assistant"}, finish_reason="stop")), 1000)
    assert parse_completion(empty, "url").text == ""  # a model that stopped at once


# --------------------------------------------------------------------------- asked, not given
class NoLogprobs(Policy):
    name = "plain"

    def generate(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return [Completion("ok") for _ in prompts]


def test_logprobs_a_server_does_not_give_are_refused(serve):
    server = serve(NoLogprobs())
    policy = OpenAIPolicy(server.url, logprobs=True, options=ServerOptions(backoff=0.01))
    try:
        with pytest.raises(PolicyError, match="no log-probabilities .logprobs=True"):
            policy.generate([chat("x")])
    finally:
        policy.close()


def test_token_ids_a_server_does_not_give_are_refused(serve):
    server = serve(NoLogprobs())
    policy = OpenAIPolicy(server.url, return_token_ids=True, options=ServerOptions(backoff=0.01))
    try:
        with pytest.raises(
            PolicyError, match="no completion token ids.*leave --include-tokens out"
        ):
            policy.generate([chat("x")])
    finally:
        policy.close()


def test_include_tokens_with_a_policy_without_ids_warns_once_naming_it(tmp_path):
    from llm_marl_envs.cli.commands import RolloutOutput, run_rollout

    with pytest.warns(UserWarning, match="policy scripted.* gives no token ids") as caught:
        run_rollout(
            "llm_marl_envs/MazeCollab-v1",
            policy="scripted",
            episodes=2,
            output=RolloutOutput(
                out=str(tmp_path / "r.jsonl"), include_tokens=True, progress=False
            ),
            write=lambda line: None,
        )
    said = [str(w.message) for w in caught if "gives no token ids" in str(w.message)]
    assert len(said) == len(set(said)) == 2  # once per policy: the two gnomes' players


# --------------------------------------------------------------------------- options
def test_transport_options_travel_in_the_spec():
    address, options = split_spec("http://h:8000/v1#qwen?concurrency=4&timeout=120&retries=2")
    assert address == "http://h:8000/v1#qwen"
    assert options == {"concurrency": 4, "timeout": 120.0, "max_retries": 2}
    policy = OpenAIPolicy.from_spec(
        "http://h:8000/v1#qwen?concurrency=4", options=ServerOptions(concurrency=16)
    )
    try:
        assert policy.concurrency == 4 and policy.model == "qwen"  # the spec's own wins
    finally:
        policy.close()
    with pytest.raises(
        ValueError, match="unknown option 'batch'.*concurrency=, timeout=, retries="
    ):
        split_spec("http://h/v1#m?batch=3")
    with pytest.raises(ValueError, match="concurrency .* must be a int"):
        split_spec("http://h/v1#m?concurrency=many")


@pytest.mark.parametrize("command", ["eval", "play", "demo", "rollout"])
def test_every_command_a_server_seat_plays_takes_the_transport_options(command, capsys):
    from llm_marl_envs.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    said = capsys.readouterr().out
    assert "--concurrency" in said and "--timeout" in said and "--retries" in said


def test_verify_takes_the_transport_options(capsys):
    from llm_marl_envs.cli import main

    with pytest.raises(SystemExit):
        main(["leaderboard", "verify", "--help"])
    said = capsys.readouterr().out
    assert "--concurrency" in said and "--timeout" in said and "--retries" in said


@pytest.mark.slow
def test_an_eval_resumes_with_other_transport_settings(serve, tmp_path):
    """Transport is not what is played: the same server seat with other options (and another
    batch size: the server batches as it likes) resumes the evaluation."""
    from llm_marl_envs.evaluation.evaluate import EvalError, Team, evaluate
    from llm_marl_envs.evaluation.suite import load_suite

    server = serve()
    spec = f"openai:{server.url}#echo"
    out = tmp_path / "run"
    evaluate(
        load_suite("lite"),
        Team.parse(spec),
        out,
        tasks=["imdb"],
        progress=False,
        batch_size=8,
        write=lambda line: None,
    )
    again = evaluate(
        load_suite("lite"),
        Team.parse(f"{spec}?concurrency=2&timeout=30"),
        out,
        tasks=["imdb"],
        progress=False,
        batch_size=2,
        server_options={"max_retries": 1},
        write=lambda line: None,
    )
    assert again["tasks"]["imdb"]["items"] == 32
    with pytest.raises(EvalError, match="team differ"):
        evaluate(
            load_suite("lite"),
            Team.parse("random"),
            out,
            tasks=["imdb"],
            progress=False,
            write=lambda line: None,
        )


# --------------------------------------------------------------------------- what is served
def test_a_server_seat_is_what_the_server_serves_not_its_urls_text(serve, tmp_path):
    """The same model behind another URL (localhost for 127.0.0.1) resumes the evaluation; a
    server serving another model is refused, naming both."""
    from llm_marl_envs.evaluation.evaluate import EvalError, Team, evaluate
    from llm_marl_envs.evaluation.suite import load_suite

    server = serve(model_name="echo-1")
    out = tmp_path / "run"
    quiet = {"progress": False, "write": lambda line: None, "tasks": ["imdb"]}
    evaluate(load_suite("lite"), Team.parse(f"openai:{server.url}#echo-1"), out, **quiet)
    other_url = server.url.replace("127.0.0.1", "localhost")
    again = evaluate(load_suite("lite"), Team.parse(f"openai:{other_url}#echo-1"), out, **quiet)
    assert again["tasks"]["imdb"]["items"] == 32
    manifest = json.loads((out / "results.json").read_text())["manifest"]
    described = manifest["policies"][f"openai:{server.url}#echo-1"]  # the run that played
    assert described["server_models"] == "echo-1" and described["model_id"] == "echo-1"
    another = serve(model_name="echo-2")
    with pytest.raises(EvalError, match="seat 0: model 'echo-1' .* then, model 'echo-2' .* now"):
        evaluate(load_suite("lite"), Team.parse(f"openai:{another.url}"), out, **quiet)


# --------------------------------------------------------------------------- context limits
_LONG = " ".join(["The maze is a grid of walls and open cells; move left or right."] * 40)


def _tiny(context: int | None = None, max_new_tokens: int = 8) -> Policy:
    from llm_marl_envs.policies.hf import HFPolicy

    policy = HFPolicy.from_spec("tiny", max_new_tokens=max_new_tokens)
    if context is not None:
        policy.model.config.n_positions = context  # the context the model reads
    return policy


def _long_prompt() -> Prompt:
    messages = [
        {"role": "system", "content": "You are a gnome."},
        {"role": "user", "content": _LONG},
        {"role": "assistant", "content": "Action: left."},
        {"role": "user", "content": "Where now? Answer with one word."},
    ]
    return Prompt("a", messages[-1]["content"], messages, {})


def test_a_prompt_over_the_reported_context_is_cut_with_the_in_process_warning(serve):
    """vLLM reports max_model_len and refuses a longer request with HTTP 400: the server route
    counts the prompt at /tokenize, cuts its oldest text until it fits, and warns as the
    in-process route does; the system prompt and the latest message are kept."""
    context, budget = 200, 8
    served = _tiny()
    server = serve(served, max_model_len=context)
    with pytest.warns(UserWarning, match="prompts longer than") as in_process:
        local = _tiny(context, budget)
        local.generate([_long_prompt()])
    policy = OpenAIPolicy(server.url, max_tokens=budget)
    try:
        with pytest.warns(UserWarning, match="prompts longer than") as by_server:
            answer = policy.generate([_long_prompt()])[0]
        assert isinstance(answer.text, str)
        policy.generate([_long_prompt()])  # warned once per policy, not per prompt
        described = policy.describe()
    finally:
        policy.close(), local.close(), served.close()
    said = [str(w.message).split(": ", 1)[1] for w in (*in_process, *by_server)]
    assert (
        said[0]
        == said[-1]
        == (
            f"prompts longer than {context - budget} tokens (the model's context minus "
            f"max_new_tokens={budget}) are cut from the left"
        )
    )
    sent = [r["body"] for r in server.requests if r["path"] == "/v1/chat/completions"]
    assert len(sent) == 2
    messages = sent[0]["messages"]
    assert messages[0] == {"role": "system", "content": "You are a gnome."}
    assert messages[-1]["content"] == "Where now? Answer with one word."
    assert 0 < len(messages[1]["content"]) < len(_LONG) and _LONG.endswith(messages[1]["content"])
    assert served_count(server, messages) <= context - budget
    assert described["server_max_model_len"] == context


def served_count(server: FaultyPolicyServer, messages: list) -> int:
    return server.count_tokens(Prompt("remote", messages[-1]["content"], messages, {}))


def test_short_prompts_ask_nothing_and_a_budget_over_the_context_is_refused(serve):
    server = serve(max_model_len=64)
    policy = OpenAIPolicy(server.url, max_tokens=8)
    try:
        assert policy.generate([chat("hi")])[0].text == "hi"
        assert [r["path"] for r in server.requests] == ["/v1/chat/completions"]
    finally:
        policy.close()
    greedy = OpenAIPolicy(server.url, max_tokens=64)
    try:
        with pytest.raises(PolicyError, match="max_tokens=64 leaves no room.*context of 64"):
            greedy.generate([_long_prompt()])
    finally:
        greedy.close()


def test_a_server_that_reports_a_context_but_counts_nothing_gets_the_prompt_as_is(serve):
    """No /tokenize: the prompt is sent whole (nothing to cut it by), and the server's refusal
    says which limit it was over."""

    class Refusing(FaultyPolicyServer):
        def _admit(self, number, method, path, headers, body):
            super()._admit(number, method, path, headers, body)
            if path == "/v1/chat/completions":
                from llm_marl_envs.policies.server.answers import RequestError

                raise RequestError(400, "This model's maximum context length is 100 tokens.")

    server = Refusing(CallablePolicy(lambda o, i: o), max_model_len=100)
    policy = OpenAIPolicy(server.url, max_tokens=8)
    try:
        with pytest.raises(PolicyError) as caught:
            policy.generate([_long_prompt()])
    finally:
        policy.close(), server.close()
    text = str(caught.value)
    assert "HTTP 400" in text and "longer than 92 tokens" in text and "/tokenize" in text
    sent = [r["body"] for r in server.requests if r["path"] == "/v1/chat/completions"]
    assert sent[0]["messages"][1]["content"] == _LONG
    assert [r["path"] for r in server.requests].count("/tokenize") == 1  # asked once


@pytest.mark.parametrize(
    ("served_then", "served_now", "url_now", "resumes"),
    [
        ({"A": "m"}, {"B": "m"}, "B", True),  # one model, another URL
        ({"A": "m"}, {"B": "n"}, "B", False),  # another model
        (None, {"A": "m"}, "A", True),  # a folder from before servers were asked
        ({"A": "m"}, {"A": None}, "A", True),  # the server does not answer now: by URL
        ({"A": "m"}, {"B": None}, "B", False),  # ... and then another URL is another seat
    ],
)
def test_what_resumes_by_what_is_served(served_then, served_now, url_now, resumes):
    from llm_marl_envs.evaluation.evaluate import Team, _plan_changes

    def run(url: str, served: dict | None) -> dict:
        spec = f"openai:http://{url}/v1#m"
        described = {"seats": [spec], "agents": {"a": spec}}
        named = {f"openai:http://{k}/v1#m": v for k, v in (served or {}).items()}
        return {"team": described, **({"served": named} if served is not None else {})}

    before, now = run("A", served_then), run(url_now, served_now)
    changes = _plan_changes(before, now, Team.parse(now["team"]["seats"][0]))
    assert (changes == []) is resumes


def test_a_prompt_the_server_refuses_as_too_long_is_fitted_and_sent_once_more(serve):
    """A prompt under the byte bound that asks nothing first, over a small reported context:
    the server's HTTP 400 ("maximum context length") makes the client ask for the context,
    cut the prompt to it, warn as in-process, and send it once more."""
    context, budget = 96, 8
    served = _tiny()
    server = serve(served, max_model_len=context)
    words = "The maze is a grid of walls and open cells. " * 12  # about 500 bytes
    prompt = Prompt("a", words, [{"role": "user", "content": words}], {})
    policy = OpenAIPolicy(server.url, max_tokens=budget, options=ServerOptions(max_retries=0))
    try:
        with pytest.warns(UserWarning, match=f"prompts longer than {context - budget} tokens"):
            assert isinstance(policy.generate([prompt])[0].text, str)
    finally:
        policy.close(), served.close()
    paths = [r["path"] for r in server.requests]
    assert paths[0] == "/v1/chat/completions" and paths[-1] == "/v1/chat/completions"
    assert "/v1/models" in paths and "/tokenize" in paths and paths.count("/v1/models") == 1
    last = server.requests[-1]["body"]["messages"][-1]["content"]
    assert words.endswith(last) and len(last) < len(words)
