# `make test` is THE test command (CI runs it via .ci/run).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.requirements.stamp

.PHONY: venv lint test test-fast clean

venv: $(STAMP)

# Re-installs only when requirements.txt changes (the stamp records the last install).
$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	touch $(STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/lint-imports

# All tests, slow ones included (no marker filter).
test: venv lint
	$(BIN)/pytest

test-fast: venv lint
	$(BIN)/pytest -m "not slow"

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
