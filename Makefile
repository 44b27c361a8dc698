# optlab: the two commands of README.md are `make book` and `make test`.
# Everything installs from this repository's own files into .venv (created if missing).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.optlab-installed
NODE_STAMP := node_modules/.optlab-installed
CACHE  := _build/.jupyter_cache
JOBS   ?= 2
export PYDEVD_DISABLE_FILE_VALIDATION := 1

.PHONY: setup lock book test test-numerics test-numerics-ci lab assign exercises bench gpu-check browser clean help

help:
	@echo "make book   execute every notebook and build the HTML book into _build/html"
	@echo "make test   ruff, pytest (lab, notebooks via nbval, assignments), the book, pytest (built pages, browser)"
	@echo "make test-numerics [CH=<slug>]  every verdict under 3 numerics modes + a seed shift (before a release)"
	@echo "make lab    open JupyterLab in the project's environment"
	@echo "make assign CH=<slug>   student notebook + autograder into _build/assign/<slug>/"
	@echo "make bench [GPU=1] [CH=<slug>]  benchmarks -> benchmarks/results/ (book/performance.md)"
	@echo "make gpu-check          CUDA tests + GPU benchmarks (on a CUDA box)"

# -- set-up ------------------------------------------------------------------------------
# rfc3987-syntax (pulled in by jupyter-events through jsonschema[format-nongpl]) compiles 39 lark
# grammars whenever jsonschema is imported: 1.3 s per Python process on an idle core, up to 6 s
# under load, paid by every process that imports nbformat or otter (each graded kernel, nbval,
# jupyter-book). jsonschema skips the one format it serves ("iri") when it is absent; nothing of
# ours validates IRIs. So it is removed after the install.
NO_RFC3987 := $(BIN)/python -m pip uninstall --quiet --yes rfc3987-syntax
# constraints.txt pins every package (torch to the CPU wheel these machines carry; pyproject
# keeps torch>=2.3). Where pip is configured with a folder of wheels (PIP_FIND_LINKS or pip's
# own config: these machines keep the CPU build of torch there), uv installs the pinned set:
# 43 s against pip's 75-120 s on a clean machine (uv resolves and downloads in parallel). uv
# reads no pip configuration, so the folder is handed to it; without such a folder (a laptop),
# pip installs as before. uv compiles no bytecode and these machines set
# PYTHONDONTWRITEBYTECODE=1, so the Makefile lets Python cache the bytecode of what it imports
# (else every kernel would compile torch again).
FIND_LINKS := $(strip $(or $(PIP_FIND_LINKS),$(shell $(PYTHON) -m pip config get global.find-links 2>/dev/null)))
UV_VERSION := 0.13.9
unexport PYTHONDONTWRITEBYTECODE
$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
ifneq ($(FIND_LINKS),)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	$(BIN)/uv pip install --quiet --python $(BIN)/python $(addprefix --find-links ,$(FIND_LINKS)) \
	  -c constraints.txt -e '.[dev]'
else
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
endif
	$(NO_RFC3987)
	@touch $(STAMP)

# MathJax, require.js and the ipywidgets html-manager, served from the book itself (no CDN).
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	@touch $(NODE_STAMP)

# The Python install and npm ci run side by side (-j2: npm ci, 5-11 s, mostly waits on the
# network while uv unpacks).
setup:
	@$(MAKE) --no-print-directory -j2 $(STAMP) $(NODE_STAMP)

# Re-resolve the lock: the newest versions pyproject.toml allows, in a fresh venv, torch kept at
# the CPU wheel; writes constraints.txt (then run `make test` before committing it).
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock
	echo "torch==2.13.0" > .venv-lock/torch.txt
	.venv-lock/bin/python -m pip install --quiet --upgrade pip
	.venv-lock/bin/python -m pip install --quiet -c .venv-lock/torch.txt -e '.[dev]'
	{ sed -n '/^#/p' constraints.txt; .venv-lock/bin/python -m pip freeze --exclude-editable \
	  | grep -v '^-e' | sed 's/^torch==2.13.0+cpu$$/torch==2.13.0/'; } > .venv-lock/constraints.txt
	mv .venv-lock/constraints.txt constraints.txt && rm -rf .venv-lock
	@echo "constraints.txt refreshed: $$(grep -c '==' constraints.txt) pins"

# Debian packages, installed when missing (root + apt-get; otherwise a note and the dependent
# test skips): chromium for the headless-browser test, espeak-ng for the arecho chapter's
# corpus command (the chapter itself falls back to formant speech without it), bubblewrap for
# lab grade's per-submission sandbox (book/teaching.md).
SYSTEM_PACKAGES := chromium:chromium espeak-ng:espeak-ng bwrap:bubblewrap
browser:
	@for pair in $(SYSTEM_PACKAGES); do cmd=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$cmd >/dev/null 2>&1 && continue; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing $$pkg (Debian)"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$pkg >/dev/null) \
	      || echo "could not install $$pkg: what needs it will be skipped"; \
	  else echo "$$cmd not found (install the Debian package $$pkg): what needs it will be skipped"; fi; \
	done

# -- the book ----------------------------------------------------------------------------
# The book's executions run with LAB_PROGRESS=0, as nbval's do in make test, so that an execution
# cached by either is the same (a progress bar is a live widget: on a static page it is a frozen
# bar of a loop that has finished).
book: export LAB_PROGRESS := 0
book: export LAB_CLAIMS_MISMATCH := error
book: setup
	@$(BIN)/python -m lab.tooling.cache $(CACHE) --prefill --jobs $(JOBS)
	$(BIN)/jupyter-book build . --all -W --keep-going
	@echo "The book is at file://$(CURDIR)/_build/html/index.html"

# -- the tests ---------------------------------------------------------------------------
# Every notebook is executed once. ruff; the cache guard (drops executions made under other lab
# sources); pytest on book/: nbval runs every notebook, two at a time, and stores each one that
# ran through in the book's execution cache (--nbval-cache, lab.tooling.nbcache_plugin); then,
# at the same time, the book build (warnings are errors; its prefill executes only what nbval
# did not store) and pytest on tests/: unit tests of lab, assignment round-trips, book structure
# and the tests of the built book (headless browser, generated claims, built pages, the
# notebook time budget: marked `book`, run last, each waiting for the build's exit status in
# $(BOOK_STATUS); tests/conftest.py). Sphinx writes the pages on one core; the unit tests use
# the other meanwhile (about a minute on these machines).
# nbval needs a notebook's cells in one worker (loadfile), longest notebook first (conftest.py;
# --no-loadscope-reorder keeps that order); the tests of tests/ are spread one by
# one (worksteal), so that a slow file (the assignment round trips) does not hold one worker alone.
PYTEST := LAB_PROGRESS=0 $(BIN)/python -m pytest -n $(JOBS) -p no:cacheprovider \
  --durations=10 -m "not slow"
BOOK_STATUS := _build/book.status
BOOK_LOG    := _build/book.log
# The book's own build is strict: a verdict that differs from the expected one raises
# ClaimMismatch (LAB_CLAIMS_MISMATCH=error); a reader's kernel only shows a warning card.
test: export LAB_CLAIMS_MISMATCH := error
test: setup browser
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	@$(BIN)/python -m lab.tooling.cache $(CACHE)
	$(PYTEST) --dist loadfile --no-loadscope-reorder --nbval-lax --nbval-current-env \
	  --nbval-cache $(CACHE) book/
	@mkdir -p _build; rm -f $(BOOK_STATUS); echo "building the book meanwhile (log: $(BOOK_LOG))"
	@{ $(MAKE) --no-print-directory book > $(BOOK_LOG) 2>&1; echo $$? > $(BOOK_STATUS); } & \
	LAB_BOOK_STATUS=$(CURDIR)/$(BOOK_STATUS) $(PYTEST) --dist worksteal tests/; tests=$$?; wait; \
	book=$$(cat $(BOOK_STATUS) 2>/dev/null || echo 1); \
	if [ "$$book" != 0 ]; then cat $(BOOK_LOG); echo "make test: the book build failed" >&2; \
	else tail -n 3 $(BOOK_LOG); fi; \
	[ "$$tests" = 0 ] && [ "$$book" = 0 ]

# -- the numerics check ------------------------------------------------------------------
# Every claim's verdict must be the same under the native numerics, two emulated ones (every
# dispatcher set together: MKL_CBWR, ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA, OPENBLAS_CORETYPE)
# and the registered seed shift (LAB_SEED_SHIFT=1000): lab.tooling.numerics runs the notebooks
# under each, two at a time, and fails on any verdict that differs. The full check (every
# notebook, 4 configurations) is for releases; CI runs test-numerics-ci after make test: the
# notebooks whose claims are decided over seeds or state no margin, with the native records
# taken from make test's build.
test-numerics: setup
	$(BIN)/python -m lab.tooling.numerics --jobs $(JOBS) $(CH)

test-numerics-ci: setup
	$(BIN)/python -m lab.tooling.numerics --jobs $(JOBS) --select fragile \
	  --native-from _build/html --configs native,avx2,baseline,seed+1000

lab: setup
	$(BIN)/jupyter lab $(if $(filter 0,$(shell id -u)),--allow-root,) book/

assign: setup
	@test -n "$(CH)" || { echo "usage: make assign CH=<slug>"; exit 2; }
	$(BIN)/python -m lab assign $(CH)

exercises: setup
	@for d in book/*/assignment.ipynb; do $(BIN)/python -m lab exercises $$(basename $$(dirname $$d)); done

# Every benchmarks/bench_<slug>.py (CPU sizes; GPU=1 for the CUDA sizes), one results file per
# chapter + the run record benchmarks/results/run-<cpu|gpu>.json; book/performance.md shows them.
bench: setup
	$(BIN)/lab bench $(if $(GPU),--gpu,) $(CH)

# On a CUDA box: the CUDA tests and every benchmark's GPU sizes, as one script.
gpu-check: setup
	$(BIN)/python -m pytest -m cuda -q -p no:cacheprovider tests/
	$(BIN)/lab bench --gpu

clean:
	rm -rf _build .pytest_cache .ruff_cache
