# The two commands of the README. Both set up everything on a fresh machine.
PYTHON ?= python3.11
VENV := .venv
ORACLE := .venv-oracle
PY := $(VENV)/bin/python
WORKDIR ?= work/demo
AXE := tests/axe/node_modules/axe-core/axe.min.js

.PHONY: demo test test-fast lint format env oracle-env clean chromium

## make demo: build the demo corpus (tagging, retrieval, verdicts) and serve the site on
## http://127.0.0.1:$(PORT)/ with the course baseline to compare (a build that exists is reused; a killed one resumes).
## The build and the server run side by side: the site is served once the build checkpoint's
## verdicts are written (every walkthrough), while the build's last steps finish; a page that
## needs one of them says it is being built and reloads itself (serve --while-building). Stopping
## the server (Ctrl-C) stops the build too (the shell's traps: a job in the background ignores
## Ctrl-C), and the next make demo resumes it.
## Beside them, the modules the build and the site import get their bytecode written once
## (scripts/compile_bytecode.py: uv writes none, and where PYTHONDONTWRITEBYTECODE is set no
## process would, each compiling them from source at every start).
## Where no data folder is found, the course's files are downloaded into ./data first (claimtrace
## data fetch: pinned addresses and digests; without a network it says what to download by hand).
PORT ?= 8000
demo: $(VENV)/.installed
	@$(PY) -c 'from claimtrace.data.files import find_data_dir; find_data_dir()' 2>/dev/null || $(VENV)/bin/claimtrace data fetch
	$(PY) scripts/compile_bytecode.py & bytecode=$$!; \
	$(VENV)/bin/claimtrace build --demo --workdir $(WORKDIR) --port $(PORT) & build=$$!; \
	trap 'kill $$build $$bytecode 2>/dev/null' EXIT; trap 'exit 130' INT TERM; \
	$(VENV)/bin/claimtrace serve --workdir $(WORKDIR) --port $(PORT) --course-baseline --while-building

## make test: the whole test suite, with the 2024 reference environment beside it. Its first
## step installs Debian's chromium for the page tests when it is missing (as root, with apt-get),
## else stops at once saying what to install (scripts/ensure-chromium); axe-core for the pages'
## accessibility checks comes from npm (tests/axe).
## The tests run in two processes (pytest-xdist, both cores; a process that finishes its share
## takes tests from the other's, --dist worksteal), and Python writes the bytecode of what they
## import: the tests start many processes (servers, the command line, the oracle, the
## platform reruns), and where PYTHONDONTWRITEBYTECODE is set each one compiled every module it
## imported, PyTorch's included, from source.
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -n 2 --dist worksteal
test: chromium $(VENV)/.installed-test $(ORACLE)/.installed $(AXE)
	$(PYTEST)

chromium:
	@scripts/ensure-chromium

## make test-fast: everything but the oracle, browser, cross-platform and package tests, in two
## processes (pytest-xdist: both cores; about 1.5 minutes with the demo build kept).
## One stage's tests alone: .venv/bin/python -m pytest tests/pipeline/test_tagging.py -m "not oracle"
test-fast: $(VENV)/.installed-test
	$(PYTEST) -m "not oracle and not browser and not platform and not package"

## make lint: ruff's lint rules and its format check (pyproject.toml); make format rewrites.
lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff check src tests bench scripts oracle
	$(VENV)/bin/ruff format --check src tests bench scripts oracle

format: $(VENV)/.installed-test
	$(VENV)/bin/ruff check --fix src tests bench scripts oracle
	$(VENV)/bin/ruff format src tests bench scripts oracle

env: $(VENV)/.installed

## The installer: uv, pinned here, puts the locks' exact versions into the venvs from the same
## registry pip uses, in seconds rather than pip's minute and a half (docs/benchmarks.md, "First
## contact"). pip fetches uv itself into the venv's own folder; the machine's pip find-links
## (PIP_FIND_LINKS: where a local PyTorch CPU wheel lies) are given to uv as well, so both
## installers take the same files. Files are hard-linked from uv's cache where it can (its
## default, unless UV_LINK_MODE says otherwise): copying PyTorch's gigabyte a second time took 5
## of a fresh install's 10 s.
UV_VERSION := 0.13.9
UV := $(VENV)/installer/bin/uv
UV_PIP = UV_FIND_LINKS="$${UV_FIND_LINKS-$${PIP_FIND_LINKS-}}" UV_LINK_MODE="$${UV_LINK_MODE-hardlink}" $(UV) pip install -q
UV_INSTALL = $(UV_PIP) --python $(PY)

$(UV):
	test -x $(PY) || $(PYTHON) -m venv --without-pip $(VENV)
	$(PYTHON) -m pip install -q --disable-pip-version-check --target $(VENV)/installer uv==$(UV_VERSION)

$(VENV)/.installed: requirements.lock pyproject.toml $(UV)
	$(UV_INSTALL) -r requirements.lock
	$(UV_INSTALL) --no-deps -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed requirements-dev.lock
	$(UV_INSTALL) -r requirements-dev.lock
	touch $@

## axe-core for the browser tests' accessibility checks, pinned by tests/axe/package-lock.json
## (npm's registry; nothing of it is served by the site).
$(AXE): tests/axe/package.json tests/axe/package-lock.json
	cd tests/axe && npm ci --no-audit --no-fund --silent
	touch $@

## The 2024 reference environment (numpy 1.24, scikit-learn 1.2.2, pandas 2.0.3, nltk 3.8.1), on
## numpy's generic code path on every CPU: reference_platform.pth switches AVX-512 dispatch off
## for every process it starts (docs/architecture.md, "Reference platform"). Installed by the
## same uv as .venv, from the same registry and find-links (docs/benchmarks.md, "The test suite").
oracle-env: $(ORACLE)/.installed

$(ORACLE)/.installed: oracle/requirements.txt oracle/reference_platform.pth $(UV)
	test -x $(ORACLE)/bin/python || $(PYTHON) -m venv --without-pip $(ORACLE)
	$(UV_PIP) --python $(ORACLE)/bin/python -r oracle/requirements.txt
	cp oracle/reference_platform.pth "$$($(ORACLE)/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/"
	$(ORACLE)/bin/python -c 'import numpy, sys; sys.path.insert(0, "oracle"); import reference_platform; reference_platform.require()'
	touch $@

clean:
	rm -rf $(VENV) $(ORACLE) work tests/axe/node_modules
