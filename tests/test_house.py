"""How the house reads, measured by ``scripts/house_metrics.py`` (issue 51's targets): private
names imported across modules stay few (siblings share public names), and no function takes
more than 14 parameters (settings travel as objects: ``GenerationConfig``, ``ServerOptions``,
``EvalConfig``, ``EpisodePlan``). An environment's constructor is the exception: its keywords
are the registry's versioned arguments, which ``make(env_id, **kwargs)`` passes."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("house_metrics", REPO / "scripts/house_metrics.py")
house = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(house)
MODULES = house.modules()
MEASURE = house.measure(MODULES)


def test_few_private_names_cross_a_module_boundary():
    crossing = MEASURE["private names imported across modules"]
    assert len(crossing) <= 40, "\n".join(crossing)


def test_no_function_takes_more_than_14_parameters():
    wide = [
        f"{name} ({count})"
        for count, name in MEASURE["most parameters"]
        if count > 14 and not (name.startswith("llm_marl_envs.envs.") and name.endswith("__init__"))
    ]
    assert wide == []


def test_the_package_never_imports_its_own_deprecated_paths():
    aliases = set(MEASURE["deprecated aliases"])
    importing = [
        f"{name} -> {target}"
        for name, path in MODULES.items()
        if name not in aliases
        for target in house.imported_modules(name, path)
        if target in aliases
    ]
    assert importing == []


def test_the_measure_reads_the_package():
    # Guards the tests above against passing on an empty or mis-parsed package.
    assert MEASURE["modules"] > 100 and MEASURE["functions"] > 1000
    assert {"llm_marl_envs.commands", "llm_marl_envs.policies.openai_compat"} <= set(
        MEASURE["deprecated aliases"]
    )
    assert MEASURE["most parameters"][0][0] >= 10  # the widest signatures are read
