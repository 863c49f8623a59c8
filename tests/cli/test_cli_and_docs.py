"""The llm-marl command, and docs that must match the code (README table, quick start, env pages,
the maze example of docs/environments.md)."""

from __future__ import annotations

import re
from pathlib import Path


import llm_marl_envs
from llm_marl_envs.cli import env_pages, env_table, main

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")
ENVIRONMENTS = (REPO / "docs" / "environments.md").read_text(encoding="utf-8")


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert all(env_id in out for env_id in llm_marl_envs.list_envs())


def test_demo_plays_the_newest_version_of_every_env(capsys):
    assert main(["demo", "--policy", "scripted", "--episodes", "1", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    newest = llm_marl_envs.latest_envs()
    assert "llm_marl_envs/TLDRSummarization-v1" in newest
    assert "llm_marl_envs/TLDRSummarization-v0" not in newest
    assert {e.rpartition("-v")[0] for e in newest} == {
        e.rpartition("-v")[0] for e in llm_marl_envs.list_envs()
    }
    for env_id in newest:
        env = llm_marl_envs.make(env_id)
        assert f"=== {env_id} | episode 0 | seed 3" in out
        name = env_id.split("/")[-1]
        assert re.search(rf"^{re.escape(name)}\s+{env.possible_agents[0]}\s+1\s+-?\d", out, re.M)


def test_demo_rejects_unknown_env(capsys):
    assert main(["demo", "--env", "llm_marl_envs/GSM9K-v0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("llm-marl: error: Unknown environment id") and err.count("\n") == 1


def test_readme_table_matches_the_registry():
    table = (
        README.split("<!-- env-table:start", 1)[1]
        .split("-->", 1)[1]
        .split("<!-- env-table:end -->")[0]
    )
    assert table.strip() == env_table(markdown=True)


def test_maze_example_runs(capsys):
    page = ENVIRONMENTS.split("## Multi-round games", 1)[1]
    code = page.split("```python", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/environments.md maze example", "exec"), {})
    out = capsys.readouterr().out
    assert "success after" in out and "MazeCollab-v0" in out


def test_readme_quick_start_runs(capsys):
    code = README.split("## Quick start", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    exec(compile(code, "README quick start", "exec"), {})
    assert "[observer_0 | observer]" in capsys.readouterr().out


def test_env_pages_are_current():
    for name, text in env_pages().items():
        path = REPO / "docs" / "envs" / name
        assert path.is_file(), f"{path} is missing: run `llm-marl docs`"
        assert path.read_text(encoding="utf-8") == text, f"{path} is stale: run `llm-marl docs`"


def test_readme_commands_exist_in_makefile_and_ci():
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)
    assert "make test" in (REPO / ".ci" / "run").read_text()
    assert "make demo" in README and "make test" in README


def test_readme_links_name_files_of_the_repository():
    """Each relative link of the README (read on a forge or in a checkout) names a file."""
    prose = re.sub(r"^```.*?^```", "", README, flags=re.S | re.M)
    links = re.findall(r"\]\(([^)\s]+)\)", prose)
    local = [link.split("#")[0] for link in links if "://" not in link and not link.startswith("#")]
    assert len(local) >= 10, local  # one per area at least
    assert not [link for link in local if not (REPO / link).is_file()], local
