PYTHON ?= python3
PTB ?= ../shared/data/ptb/wsj
RUN ?= runs/wsj-paper

.PHONY: install models lint test test-models test-fast docs bench train eval-dev clean

TORCH_INDEX ?=  # where no wheel of torch's CPU build lies on disk: https://download.pytorch.org/whl/cpu

install:  ## torch's CPU build by name (2.13.0+cpu: the CPU build or an error, never CUDA's), then onparse and pytest
	$(PYTHON) -m pip install -q 'torch==2.13.0+cpu' $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(PYTHON) -m pip install -q -e '.[test]'

models:  ## every shipped model but the default as its own pip package, into dist/models (pip install one to load it)
	$(PYTHON) -c "from onparse.store.packaging import build_catalogue; print(*build_catalogue(), sep='\n')"

lint:  ## ruff: the style (120 columns) and the lint rules in pyproject.toml
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .

test: lint  ## everything; data-backed checks skip when $(PTB) is absent
	$(PYTHON) -m pytest -q --durations=15

test-models:  ## every shipped model parses its dev trees to its card's figures, recorded in tests/fixtures/checked_models.json (before shipping a model; make test checks only models changed since)
	ONPARSE_CHECK_MODELS=all $(PYTHON) -m pytest -q tests/test_data.py -k reproduces

test-fast: lint  ## between edits: every unit test, without the fits, subprocesses, wheel and docs builds (marked slow)
	$(PYTHON) -m pytest -q -m "not data and not slow"

docs:  ## the documentation site into site/ (MkDocs, strict: a broken link or reference fails)
	$(PYTHON) -m mkdocs build --strict

bench:  ## parse speed (benchmarks/results.json) and what early stopping saves on the shipped runs' curves
	$(PYTHON) benchmarks/bench.py --ptb $(PTB) --out benchmarks/results.json
	$(PYTHON) benchmarks/early_stopping.py --out benchmarks/early_stopping.json

train:  ## the shipped model's recipe (resumable: add RESUME=--resume)
	onparse train --train '$(PTB)/[01][0-9]' --train $(PTB)/20 --dev $(PTB)/22 --out $(RUN) --epochs 7 --max-minutes 110 $(RESUME)

eval-dev:  ## section 22 and WSJ10 (sections 00-22) with the shipped model
	onparse eval --gold $(PTB)/22
	onparse eval --gold '$(PTB)/[0-2][0-9]' --max-length 10

clean:
	rm -rf build site dist *.egg-info .pytest_cache
