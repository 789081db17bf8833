# `make test` is THE test command (CI runs it via .ci/run).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.requirements.stamp

# Some machines (this project's CI among them) set PYTHONDONTWRITEBYTECODE=1: every pytest process
# would then compile and assertion-rewrite every module again, 7 s of each worker's start. An
# empty value lets Python keep its caches (__pycache__/, ignored by git).
export PYTHONDONTWRITEBYTECODE :=

.PHONY: venv run lint test test-fast check-test-env services clean

venv: $(STAMP)

# Re-installs only when requirements.txt changes (the stamp records the last install).
$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps -e .  # the participant CLI (`leaderboard`)
	touch $(STAMP)

# The embedded service: migrate, load the demo task (real Febrl data), submit runs, then serve
# the web app and a worker (SQLite + filesystem broker: no server to install). PORT=8000.
PORT ?= 8000
run: venv
	$(BIN)/python manage.py demo --port $(PORT) --answer 150

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	DJANGO_SETTINGS_MODULE=config.settings_test $(BIN)/python manage.py makemigrations --check --dry-run
	$(BIN)/mypy

# All tests, slow ones included, on SQLite: those that need no service or browser on every core
# (pytest-xdist: each worker has its own test database; --dist loadscope keeps a module's tests on
# one worker, so a world shared by a module, tests/support/shared_world.py, is built once), then the integration and browser tests
# one at a time (they start Redis, Celery workers, Chromium and a live server of their own, and
# wait on them). Then, when TEST_POSTGRES_URL is set, the integration and postgres tests again on
# PostgreSQL (pytest-django creates test_<name>). REQUIRE_POSTGRES=1 (set by .ci/run) makes a
# missing TEST_POSTGRES_URL an error, before any test. Hypothesis runs its `ci` profile here and
# its `dev` profile in test-fast (tests/support/hypothesis_profiles.py).
test: check-test-env venv lint
	$(BIN)/pytest --hypothesis-profile=ci -n auto --dist loadscope -m "not integration and not browser"
	$(BIN)/pytest --hypothesis-profile=ci -m "integration or browser"
	@if [ -n "$$TEST_POSTGRES_URL" ]; then \
		echo "make test: integration and postgres tests on PostgreSQL (TEST_POSTGRES_URL)"; \
		echo 'DATABASE_URL=$$TEST_POSTGRES_URL $(BIN)/pytest -m "(integration or postgres) and not statistical"'; \
		DATABASE_URL="$$TEST_POSTGRES_URL" $(BIN)/pytest --hypothesis-profile=ci \
			-m "(integration or postgres) and not statistical"; \
	else \
		echo "make test: TEST_POSTGRES_URL is not set: PostgreSQL pass skipped"; \
	fi

# The loop while editing (a minute or two): every test that needs no service, browser or long run.
test-fast: venv lint
	$(BIN)/pytest --hypothesis-profile=dev -n auto --dist loadscope \
		-m "not slow and not integration and not browser and not postgres"

check-test-env:
	@case "$$REQUIRE_POSTGRES" in 1|true|yes|on) \
		if [ -z "$$TEST_POSTGRES_URL" ]; then \
			echo "make test: REQUIRE_POSTGRES=$$REQUIRE_POSTGRES but TEST_POSTGRES_URL is not set" \
			     "(postgres://USER:PASS@HOST:PORT/DB of a role that may create databases;" \
			     ".ci/run starts one)" >&2; \
			exit 1; \
		fi;; \
	esac

# Installs the Debian packages the tests need and starts PostgreSQL (as root), then prints the
# environment for `make test`:  eval "$(make -s services)"
services:
	@.ci/run --services

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
	rm -f var/test-db-*.sqlite3*
