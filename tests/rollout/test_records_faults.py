"""JSONL records under faults: torn last lines, a killed writer, oversized records, Ctrl-C.

Names added for these faults (``append_line``, ``IncompleteLineWarning``, ...) are imported
inside the tests, so that on a version without them each test fails on its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

from llm_marl_envs.policies import Completion, Policy, PolicyError
from llm_marl_envs.policies.scripted import scripted_policy
from llm_marl_envs.rollout import (
    EpisodeRecord,
    RolloutError,
    TurnRecord,
    read_jsonl,
    rollout,
    write_jsonl,
)

MAZE = "llm_marl_envs/MazeCollab-v0"
SHORT = {"size": 5, "max_cycles": 2}  # 4 turns per episode whatever the answers


def record(episode: int, action: str = "MOVE: stay") -> EpisodeRecord:
    turn = TurnRecord(agent="gnome_0", role="explorer", observation="o", messages=[], action=action)
    return EpisodeRecord(
        env_id="x", seed=0, episode=episode, group=episode, turns=[turn], returns={"gnome_0": 1.0}
    )


def line_of(rec: EpisodeRecord) -> bytes:
    return (json.dumps(rec.to_dict(), ensure_ascii=False) + "\n").encode()


def warnings_named(caught, name: str) -> list[str]:
    return [str(w.message) for w in caught if w.category.__name__ == name]


# ---------------------------------------------------------------------- torn lines
@pytest.mark.parametrize("cut", ["json", "utf8"])
def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path, cut):
    path = tmp_path / "torn.jsonl"
    write_jsonl([record(i) for i in range(3)], path)
    torn = line_of(record(3, action="é" * 50))
    # cut inside a two-byte character (invalid UTF-8) or at a plain character (invalid JSON)
    end = torn.index("é".encode()) + (1 if cut == "utf8" else 2 * 20)
    with open(path, "ab") as handle:
        handle.write(torn[:end])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = read_jsonl(path)
    assert [r.episode for r in records] == [0, 1, 2]
    [message] = warnings_named(caught, "IncompleteLineWarning")
    assert f"{path}:4:" in message and "incomplete last line" in message


def test_a_bad_line_in_the_middle_is_still_an_error(tmp_path):
    path = tmp_path / "bad.jsonl"
    lines = [line_of(record(i)) for i in range(3)]
    path.write_bytes(lines[0] + lines[1][: len(lines[1]) // 2] + b"\n" + lines[2])
    with pytest.raises(ValueError, match=rf"{path}:2: not an episode record"):
        read_jsonl(path)
    path.write_bytes(lines[0] + lines[1][:20] + lines[2])  # a torn line, then more records
    with pytest.raises(ValueError, match=rf"{path}:2: not an episode record"):
        read_jsonl(path)
    path.write_bytes(lines[0] + b'{"not": "a record"}')  # valid JSON, no newline: not torn
    with pytest.raises(ValueError, match=rf"{path}:2: not an episode record"):
        read_jsonl(path)


def test_appending_after_a_torn_line_cuts_it_off_first(tmp_path):
    path = tmp_path / "append.jsonl"
    write_jsonl([record(0), record(1)], path)
    with open(path, "ab") as handle:
        handle.write(line_of(record(2))[:30])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert write_jsonl([record(3)], path, append=True) == 1
    [message] = warnings_named(caught, "IncompleteLineWarning")
    assert str(path) in message and "dropped an incomplete last line (30 bytes" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no torn line any more
        assert [r.episode for r in read_jsonl(path)] == [0, 1, 3]


def test_a_failed_write_leaves_the_file_on_a_record_boundary(tmp_path):
    from llm_marl_envs.rollout.records import append_line

    class DiskFills:
        """A raw file that takes half of the second line, then reports a full disk."""

        def __init__(self, raw):
            self.raw, self.calls = raw, 0

        def write(self, data):
            self.calls += 1
            if self.calls == 1:
                return self.raw.write(data)
            if self.calls == 2:
                return self.raw.write(bytes(data[: len(data) // 2]))
            raise OSError(28, "No space left on device")

        def __getattr__(self, name):
            return getattr(self.raw, name)

    path = tmp_path / "full.jsonl"
    with open(path, "wb", buffering=0) as raw:
        handle = DiskFills(raw)
        append_line(handle, line_of(record(0)))
        with pytest.raises(OSError, match="No space"):
            append_line(handle, line_of(record(1)))
    assert path.read_bytes() == line_of(record(0))


CHILD = textwrap.dedent("""
    import sys
    from itertools import repeat
    from llm_marl_envs.rollout.records import EpisodeRecord, TurnRecord, write_jsonl
    turn = TurnRecord(agent="a", role=None, observation="o", messages=[],
                      action="\\u00e9" * int(sys.argv[2]))
    record = EpisodeRecord(env_id="x", seed=0, episode=0, group=0, turns=[turn])
    write_jsonl(repeat(record, 10**6), sys.argv[1])
""")


@pytest.mark.slow
def test_a_writer_killed_mid_write_leaves_the_earlier_records_readable(tmp_path):
    chars = 2_000_000  # a 4 MB line, so a write takes long enough to be caught in the middle
    line_length = len(
        line_of(
            EpisodeRecord(
                env_id="x",
                seed=0,
                episode=0,
                group=0,
                turns=[
                    TurnRecord(
                        agent="a", role=None, observation="o", messages=[], action="é" * chars
                    )
                ],
            )
        )
    )
    for trial in range(5):
        path = tmp_path / f"killed-{trial}.jsonl"
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), str(chars)])
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # wait for a write in progress after a full line
                size = path.stat().st_size if path.exists() else 0
                if size > line_length and size % line_length:
                    break
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            break  # a torn last line, as a kill -9 during a large write leaves
    else:
        pytest.fail("no kill landed in the middle of a write in 5 trials")
    complete = len(data) // line_length
    assert complete >= 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = read_jsonl(path)
    assert len(records) == complete and records[0].turns[0].action == "é" * chars
    [message] = warnings_named(caught, "IncompleteLineWarning")
    assert f"{path}:{complete + 1}:" in message


# ---------------------------------------------------------------------- record size cap
class _Ramble(Policy):
    """Stays put; the answers of calls ``huge`` are padded to ``size`` characters.

    Call number ``fail_at`` raises ``error`` instead (a server failure, a Ctrl-C).
    """

    name = "ramble"

    def __init__(
        self, huge: range, size: int, fail_at: int = 0, error: BaseException | None = None
    ) -> None:
        self.calls, self.huge, self.size = 0, huge, size
        self.fail_at, self.error = fail_at, error

    def generate(self, prompts):
        self.calls += 1
        if self.calls == self.fail_at:
            raise self.error
        text = "MOVE: stay"
        if self.calls in self.huge:
            text += " " + "x" * self.size
        return [Completion(text) for _ in prompts]


def test_a_record_over_the_cap_is_skipped_and_counted(tmp_path):
    out = tmp_path / "capped.jsonl"
    # batch_size=1: calls 5-8 are the four turns of episode 1
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = rollout(
            MAZE,
            _Ramble(range(5, 9), 200_000),
            episodes=4,
            batch_size=1,
            env_kwargs=SHORT,
            out=out,
            progress=False,
            max_record_bytes=100_000,
        )
    assert [e.episode for e in result.episodes] == [0, 1, 2, 3]  # kept in memory
    assert result.unwritten_episodes == [1]
    [message] = warnings_named(caught, "RecordTooLargeWarning")
    assert str(out) in message and "episode 1 not written" in message
    assert "max_record_bytes=100000" in message
    assert [r.episode for r in read_jsonl(out)] == [0, 2, 3]
    assert max(len(line) for line in out.read_bytes().splitlines()) < 100_000

    # a failure in episode 3: the summary says what was kept and what was not written
    failing = _Ramble(range(5, 9), 200_000, fail_at=13, error=PolicyError("server gone"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RolloutError) as caught_error:
            rollout(
                MAZE,
                failing,
                episodes=4,
                batch_size=1,
                env_kwargs=SHORT,
                out=out,
                progress=False,
                max_record_bytes=100_000,
            )
    assert "3 finished episode(s) kept (2 written to" in str(caught_error.value)
    assert "1 over the record size cap not written: episodes [1]" in str(caught_error.value)


def test_write_jsonl_skips_records_over_the_cap(tmp_path):
    path = tmp_path / "capped.jsonl"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        written = write_jsonl(
            [record(0), record(1, "x" * 5000), record(2)], path, max_record_bytes=2000
        )
    assert written == 2 and [r.episode for r in read_jsonl(path)] == [0, 2]
    assert len(warnings_named(caught, "RecordTooLargeWarning")) == 1


def test_the_default_record_cap_is_far_above_a_normal_record(tmp_path):
    from llm_marl_envs.rollout.records import DEFAULT_MAX_RECORD_BYTES

    out = tmp_path / "normal.jsonl"
    policies = {a: scripted_policy(MAZE, a) for a in ("gnome_0", "gnome_1")}
    rollout(MAZE, policies, episodes=2, out=out, include_tokens=True, progress=False)
    assert max(len(line) for line in out.read_bytes().splitlines()) * 100 < DEFAULT_MAX_RECORD_BYTES


# ---------------------------------------------------------------------- Ctrl-C
def test_ctrl_c_keeps_the_finished_episodes(tmp_path):
    out = tmp_path / "interrupted.jsonl"
    with pytest.raises(KeyboardInterrupt) as caught:  # call 11: in episode 2 (batch_size=1)
        rollout(
            MAZE,
            _Ramble(range(0), 0, fail_at=11, error=KeyboardInterrupt()),
            episodes=5,
            batch_size=1,
            env_kwargs=SHORT,
            out=out,
            progress=False,
        )
    error = caught.value
    assert type(error).__name__ == "RolloutInterrupted"
    assert [e.episode for e in error.result.episodes] == [0, 1]
    assert "interrupted (Ctrl-C); 2 finished episode(s) kept" in str(error)
    assert str(out) in str(error)
    assert [r.episode for r in read_jsonl(out)] == [0, 1]
    assert out.read_bytes().endswith(b"\n")


def test_records_are_written_as_whole_lines(tmp_path, monkeypatch):
    # Each record reaches the OS as one complete line, flushed at once (what a kill relies on).
    from llm_marl_envs.rollout.records import append_line as original

    out = tmp_path / "writes.jsonl"
    writes: list[bytes] = []

    def spy(handle, line):
        size = os.fstat(handle.fileno()).st_size
        original(handle, line)
        writes.append(bytes(line))
        assert os.fstat(handle.fileno()).st_size == size + len(line)  # flushed: on disk already

    # RolloutEngine writes the records; its home is rollout/_loop.py (re-exported by engine)
    monkeypatch.setattr("llm_marl_envs.rollout.loop.append_line", spy)
    policies = {a: scripted_policy(MAZE, a) for a in ("gnome_0", "gnome_1")}
    rollout(MAZE, policies, episodes=3, batch_size=2, env_kwargs=SHORT, out=out, progress=False)
    assert len(writes) == 3 and all(w.endswith(b"\n") and w.count(b"\n") == 1 for w in writes)
    assert sorted(writes) == sorted(out.read_bytes().splitlines(keepends=True))
