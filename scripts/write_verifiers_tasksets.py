"""Write the verifiers taskset modules, one per registered id (maintainers' script).

verifiers loads an environment by a taskset id naming an importable top-level module; the
package ships one per registered id from ``verifiers_tasksets/`` (setup.py maps them).
Run after adding or removing an id: ``python scripts/write_verifiers_tasksets.py`` (it
needs the ``verifiers`` extra, e.g. in ``.stacks/verifiers``).
"""

from __future__ import annotations

from pathlib import Path

import llm_marl_envs
from llm_marl_envs.integrations.tasksets import MODULES_DIR, module_source, taskset_id


def main() -> None:
    folder = Path(__file__).resolve().parents[1] / MODULES_DIR
    folder.mkdir(exist_ok=True)
    wanted = {f"{taskset_id(env_id)}.py": env_id for env_id in llm_marl_envs.list_envs()}
    for stale in folder.glob("llm_marl_envs_*.py"):
        if stale.name not in wanted:
            stale.unlink()
            print(f"removed {stale.name}")
    for name, env_id in wanted.items():
        path = folder / name
        text = module_source(env_id)
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {name} ({env_id})")


if __name__ == "__main__":
    main()
