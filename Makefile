# Two commands do all set-up on a fresh machine:  `make run`  and  `make test`.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install run test test-fast lint

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	# The CPU build of torch first: a plain `torch` would pull a multi-GB CUDA build.
	$(BIN)/pip install --disable-pip-version-check -q torch==2.13.0
	$(BIN)/pip install --disable-pip-version-check -q -e ".[test]"
	touch $(STAMP)

install: $(STAMP)
	@# Browser tests drive Debian's Chromium through Playwright (`playwright install` cannot download here).
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
		|| echo "warning: could not install chromium; the browser tests will be skipped"
	@# axe-core (npm) for the accessibility checks of tests/browser/test_every_page.py, into node_modules/.
	@test -f node_modules/axe-core/axe.min.js || { command -v npm >/dev/null && npm install --prefix . --no-save --no-package-lock \
		--no-audit --no-fund -q axe-core; } || echo "warning: could not install axe-core; the accessibility checks will be skipped"

run: install
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_user
	$(BIN)/python manage.py collectstatic --noinput -v 0
	@echo "Local development server on http://$(HOST):$(PORT)/ with DEBUG off (MEMORYOS_DEBUG=1 turns it on):"
	@echo "  the secret key is var/secret_key, made for this machine; a deployment sets SECRET_KEY and ALLOWED_HOSTS."
	$(BIN)/daphne -b $(HOST) -p $(PORT) memoryos_site.asgi:application

test: install
	$(BIN)/pytest

# The fast tier while developing: every test but the browser's and those marked real_adapters, on
# tests/fakes.py's embedder, vector index and fast password hasher (no MiniLM, no Qdrant shard),
# spread over the cores by pytest-xdist. `make test` (the real adapters, every test) stays the CI gate.
test-fast: install
	$(BIN)/pytest --fakes -m "not browser" -n auto

lint: install
	$(BIN)/ruff check memory persona memoryos_site tests
