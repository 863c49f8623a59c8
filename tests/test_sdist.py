"""The source distribution carries what a wheel is built from, and no tests or docs.

Builds the sdist from a copy of the checkout's files (what git tracks or would track, so no
stale ``build/`` or egg-info of the checkout leaks in), checks what it carries (the licence,
README, changelog, citation, registry, every file of the package and its data, and no
``tests/`` or ``docs/``), then builds one wheel from the unpacked sdist and one from the copy
of the checkout and checks that both hold the same files with the same bytes.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOP_LEVEL = {
    "LICENSE",
    "README.md",
    "CHANGELOG.md",
    "CITATION.cff",
    "envs_registry.yaml",
    "constraints.txt",
    "setup.cfg",
    "setup.py",
    "pyproject.toml",
    "MANIFEST.in",
    "PKG-INFO",
}
PACKAGED = ("llm_marl_envs", "baselines", "verifiers_tasksets")


def _checkout_files() -> list[str]:
    """The files of the work tree that git tracks or would track (not the ignored ones)."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(REPO), "ls-files", "-z", "-co", "--exclude-standard"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs a git checkout of the package")
    return [name for name in listed.split("\0") if name and (REPO / name).is_file()]


def _wheel(source: Path, out: Path) -> Path:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation"]
        + ["-w", str(out), str(source)],
        check=True,
        capture_output=True,
        text=True,
    )
    [wheel] = out.glob("llm_marl_envs-*.whl")
    return wheel


def _contents(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.mark.slow
def test_sdist_carries_the_package_and_no_tests(tmp_path):
    pytest.importorskip("build", reason="building the sdist needs build: pip install -e '.[dev]'")
    files = _checkout_files()
    checkout = tmp_path / "checkout"
    for name in files:
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, checkout / name)
    built = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--skip-dependency-check"]
        + ["--outdir", str(tmp_path / "sdist"), str(checkout)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    [sdist] = (tmp_path / "sdist").glob("llm_marl_envs-*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp_path / "unpacked", filter="data")
        names = {m.name.split("/", 1)[1] for m in archive.getmembers() if m.isfile()}

    assert TOP_LEVEL <= names, sorted(TOP_LEVEL - names)
    assert not [n for n in names if n.startswith(("tests/", "docs/"))]  # a checkout runs them
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    wanted = {n for n in files if n.startswith(PACKAGED) and not n.endswith(".md")}
    assert wanted <= names, sorted(wanted - names)  # every module and data file of the package
    assert "llm_marl_envs/py.typed" in names

    [unpacked] = (tmp_path / "unpacked").iterdir()
    from_sdist = _contents(_wheel(unpacked, tmp_path / "wheel-from-sdist"))
    from_checkout = _contents(_wheel(checkout, tmp_path / "wheel-from-checkout"))
    assert sorted(from_sdist) == sorted(from_checkout)
    differ = [name for name in from_sdist if from_sdist[name] != from_checkout[name]]
    assert not differ, differ
    assert "llm_marl_envs/envs_registry.yaml" in from_sdist  # copied in by setup.py's hook
