"""baselines/training.py, the skeleton both trainers share: their tyro command lines (every
documented command parses, ``--help`` shows each option's help and default), the one resume
check and its message, the JSONL logs."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("tyro")

ROOT = Path(__file__).resolve().parents[2]


def load(name: str):
    """``baselines/<name>.py`` as the module ``<name>_baseline`` (the one the trainer's own tests
    use; registered in sys.modules, where tyro looks up ``Args``' annotations and docstrings)."""
    key = f"{name}_baseline"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / "baselines" / f"{name}.py")
        sys.modules[key] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[key])
    return sys.modules[key]


cory, magrpo = load("cory"), load("magrpo")
training = cory.training
TRAINERS = {"cory": cory, "magrpo": magrpo}


def parse(name: str, argv: list[str]):
    """What the trainer makes of ``argv`` before it trains (cory: with the env's defaults)."""
    args = TRAINERS[name].parse_args(argv)
    return cory.resolve(args) if name == "cory" else args


def documented_commands(path: Path) -> list[tuple[str, list[str]]]:
    """``(trainer, argv)`` of every ``python baselines/<trainer>.py ...`` line in ``path`` (shell
    comments dropped, continuation lines joined, ``$seed`` of a shell loop read as 0)."""
    text = path.read_text(encoding="utf-8").replace("\\\n", " ")
    found = re.findall(r"^\s*python baselines/(cory|magrpo)\.py(.*)$", text, flags=re.MULTILINE)
    return [(name, shlex.split(rest.replace("$seed", "0"), comments=True)) for name, rest in found]


def test_both_trainers_share_one_skeleton():
    assert cory.training is magrpo.training  # one module, not a copy each
    for module in (cory, magrpo):
        assert not hasattr(module, "RESUMABLE_CHANGES")  # one list: training.RESUMABLE_CHANGES
        assert not hasattr(module, "argparse") and not hasattr(module, "ast")


@pytest.mark.parametrize("doc", ["baselines/README.md", "baselines/cory.py", "baselines/magrpo.py"])
def test_every_documented_command_line_parses(doc):
    commands = documented_commands(ROOT / doc)
    assert len(commands) >= 5, commands
    for name, argv in commands:
        args = parse(name, argv)  # a flag tyro did not know would exit here
        for flag in (token for token in argv if token.startswith("--")):
            field = flag.removeprefix("--no-").removeprefix("--").replace("-", "_")
            assert hasattr(args, field), (name, argv, flag)


def test_command_lines_of_the_other_docs_parse():
    """The trainer commands of the main README and docs/baselines.md (read, not owned here)."""
    for doc in ("README.md", "docs/baselines.md"):
        for name, argv in documented_commands(ROOT / doc):
            parse(name, argv)


def test_documented_flags_keep_their_meaning():
    args = parse(
        "cory",
        [
            "--model",
            "tiny",
            "--iterations",
            "3",
            "--max-new-tokens",
            "8",
            "--env-kwargs",
            '{"data_source": "bundled"}',
            "--checkpoint-every",
            "0",
        ],
    )
    assert (args.model, args.iterations, args.max_new_tokens, args.checkpoint_every) == (
        "tiny",
        3,
        8,
        0,
    )
    assert args.env_kwargs == {"data_source": "bundled"}  # a dict, from JSON
    args = parse(
        "cory",
        [
            "--lora",
            "--shared-base",
            "--lr",
            "1e-4",
            "--no-adaptive-kl",
            "--resume",
            "--kl-coef",
            "None",
        ],
    )
    assert args.lora and args.shared_base and args.resume and not args.adaptive_kl
    assert (args.lr, args.kl_coef) == (1e-4, 0.05)  # None: the env's default
    assert parse("cory", ["--env-kwargs", "null"]).env_kwargs == {}  # None: the env's default
    args = parse(
        "magrpo",
        [
            "--env",
            "llm_marl_envs/CoopCoding-v0",
            "--env-kwargs",
            "num_turns=2",
            "--algo",
            "grpo",
            "--no-progress",
            "--normalize-std",
        ],
    )
    assert magrpo.parse_env_kwargs(args.env_kwargs) == {"num_turns": 2}
    assert (args.algo, args.progress, args.normalize_std) == ("grpo", False, True)


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("cory", ["--env-kwargs", "{bad json"]),
        ("cory", ["--env-kwargs", "[1, 2]"]),  # JSON, but not an object
        ("cory", ["--algo", "grpo"]),
        ("cory", ["--iterations", "three"]),
        ("magrpo", ["--algo", "ppo"]),
        ("magrpo", ["--no-such-flag"]),
    ],
)
def test_a_bad_command_line_exits_with_status_2(name, argv, capsys):
    with pytest.raises(SystemExit) as exited:
        TRAINERS[name].parse_args(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err  # says why


@pytest.mark.parametrize("name", ["cory", "magrpo"])
def test_help_shows_every_option_with_its_help_and_default(name, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")  # fewer wrapped lines to join back
    with pytest.raises(SystemExit) as exited:
        TRAINERS[name].main(["--help"])
    assert exited.value.code == 0
    text = " ".join(re.sub(r"[│╭╮╰╯─]", " ", capsys.readouterr().out).split())
    assert TRAINERS[name].__doc__.split("\n\n")[0] in text  # the description
    args = TRAINERS[name].Args
    documented = {p.name: p.metadata["help"] for p in dataclasses.fields(args)}
    for field in dataclasses.fields(args):
        flag = "--" + field.name.replace("_", "-")
        default = field.default
        shown = shlex.quote(default) if isinstance(default, str) else str(default)
        assert f"{flag} " in text or f"{flag}," in text, flag
        assert f"{documented[field.name]} (default: {shown})" in text, field.name
        if field.type in (bool, "bool"):
            assert f"{flag}, --no-{flag[2:]}" in text, flag


def test_help_is_each_field_docstring_as_one_paragraph():
    help_of = {f.name: f.metadata.get("help") for f in dataclasses.fields(cory.Args)}
    assert help_of["lr"] == (
        "AdamW learning rate; None: 5e-5 for IMDB (the paper: 1.41e-5 with "
        "80x more samples), 1e-5 for GSM8K"
    )
    assert all(help_of.values()) and not any("\n" in h or "  " in h for h in help_of.values())


# --------------------------------------------------------------------------- resume check
CHANGED_LR = (
    "--resume: --lr (checkpoint 0.001, now 0.002) differs from the checkpoint's run; "
    "use the checkpoint's values, or a new --out-dir for a new run"
)


@pytest.mark.parametrize("name", ["cory", "magrpo"])
def test_one_resume_check_with_one_message_for_both_trainers(name, tmp_path):
    base = ["--model", "tiny", "--lr", "1e-3", "--iterations", "2", "--out-dir", str(tmp_path)]
    training.save_checkpoint(tmp_path, 2, parse(name, base), [{"iteration": 0}], {})
    # what may change: the length of the run, how often it saves, where it writes, threads,
    # where and in what precision it computes
    free = ["--iterations", "5", "--checkpoint-every", "1", "--resume", "--device", "cpu"]
    free += ["--no-bf16-autocast"]
    free += ["--threads", "2"] if name == "cory" else ["--no-progress"]
    state, _ = training.load_checkpoint(tmp_path, parse(name, [*base, *free]))
    assert state["iteration"] == 2 and state["metrics"] == [{"iteration": 0}]
    moved = training.load_checkpoint(tmp_path, parse(name, [*base, "--out-dir", "elsewhere"]))
    assert moved is not None
    # anything else: refused in one line, the same words for both trainers
    with pytest.raises(SystemExit) as refused:
        training.load_checkpoint(tmp_path, parse(name, [*base, "--lr", "2e-3"]))
    assert str(refused.value) == CHANGED_LR
    with pytest.raises(SystemExit) as refused:
        training.load_checkpoint(tmp_path, parse(name, [*base, "--lr", "2e-3", "--seed", "7"]))
    message = str(refused.value)
    assert "\n" not in message and message.startswith(
        "--resume: --lr (checkpoint 0.001, now 0.002), --seed (checkpoint "
    )
    assert "differ from the checkpoint's run" in message


def test_check_resume_and_check_weights_by_hand():
    saved = {"lr": 1e-3, "iterations": 4, "seed": 0}
    training.check_resume(saved, {**saved, "iterations": 8})  # allowed by RESUMABLE_CHANGES
    # a checkpoint from before --device (no device, bf16_autocast False) resumes with the defaults
    training.check_resume(
        {**saved, "bf16_autocast": False}, {**saved, "bf16_autocast": None, "device": "auto"}
    )
    with pytest.raises(SystemExit, match=r"^--resume: --lr \(checkpoint 0.001, now 0.002\) "):
        training.check_resume(saved, {**saved, "lr": 2e-3})
    with pytest.raises(SystemExit, match="--iterations"):
        training.check_resume(saved, {**saved, "iterations": 8}, free=[])
    args = cory.Args(model="tiny", lora=True)
    training.check_weights(["a", "b"], ("b", "a"), args)
    with pytest.raises(SystemExit) as refused:
        training.check_weights(["a", "b"], ["a"], args)
    assert str(refused.value) == (
        "--resume: the checkpoint's weights do not fit --model 'tiny' "
        "(lora=True); resume with the model it was trained from"
    )


def test_logs_are_rewritten_from_a_checkpoint_then_appended(tmp_path):
    log = tmp_path / "metrics.jsonl"
    log.write_text('{"iteration": 0}\n{"iteration": 1}\n{"iteration": 2, "partial": true}\n')
    training.write_log(log, [{"iteration": 0}, {"iteration": 1}])  # the checkpoint's rows
    training.append_log(log, {"iteration": 2, "reward": 0.5})
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert rows == [{"iteration": 0}, {"iteration": 1}, {"iteration": 2, "reward": 0.5}]
    training.write_log(log, [])
    assert log.read_text() == ""


# --------------------------------------------------------------------------- graceful stops
def _deliver(sig):
    """Send ``sig`` to this process and let its Python handler run."""
    import os
    import time

    os.kill(os.getpid(), sig)
    time.sleep(0.01)  # the handler runs between bytecodes of the main thread


def test_a_signal_is_a_request_read_at_the_next_safe_point(tmp_path, capfd):
    import signal

    before = signal.getsignal(signal.SIGTERM)
    saved = []
    with pytest.raises(SystemExit) as stopped:
        with training.GracefulStop("cory", tmp_path) as stop:
            stop.check(1, saved=False, save=saved.append)  # nothing asked yet: goes on
            assert saved == []
            _deliver(signal.SIGTERM)
            assert stop.requested and saved == []  # the handler saves nothing itself
            stop.check(2, saved=False, save=saved.append)
    assert stopped.value.code == 143 and saved == [2]
    assert signal.getsignal(signal.SIGTERM) is before  # restored
    lines = capfd.readouterr().err.strip().splitlines()
    assert lines[-1] == (
        "cory: stopped by SIGTERM after 2 iterations; there is no checkpoint yet; run the "
        "same command with --resume to continue"
    )
    assert "SIGTERM received" in lines[0]


def test_a_second_ctrl_c_stops_at_once_in_one_line(tmp_path, capfd):
    import signal

    with pytest.raises(SystemExit) as stopped:
        with training.GracefulStop("magrpo", tmp_path):
            _deliver(signal.SIGINT)  # the first: a request
            _deliver(signal.SIGINT)  # the second: KeyboardInterrupt, here
            raise AssertionError("not stopped")
    assert stopped.value.code == 130
    last = capfd.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("magrpo: stopped at once by a second SIGINT; ")


def test_other_os_errors_are_not_called_a_full_disk(tmp_path):
    import errno

    with pytest.raises(FileNotFoundError):
        with training.GracefulStop("cory", tmp_path):
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", "x")


def test_a_read_only_folder_is_one_line_too(tmp_path, capfd):
    import errno

    with pytest.raises(SystemExit) as stopped:
        with training.GracefulStop("magrpo", tmp_path):
            raise PermissionError(
                errno.EACCES, "Permission denied", str(tmp_path / "metrics.jsonl")
            )
    assert stopped.value.code == 1
    last = capfd.readouterr().err.strip().splitlines()[-1]
    assert last.startswith(f"magrpo: cannot access {tmp_path / 'metrics.jsonl'}: Permission denied")
    assert "writable" in last and "--resume" in last
