# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Every step is idempotent: re-running reinstalls nothing that is already in place.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.zerojit-installed

.PHONY: install demo lint test test-fast mutants spec-reference clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-run pip only when the project's dependencies or the pinned versions change. The
# package's requirements are ranges; constraints.txt holds the exact versions tested here
# (torch 2.13.0's CPU build, CuTe DSL 4.8.1, FlyDSL 0.5.0 with the ziglang LLD, ...).
$(STAMP): pyproject.toml constraints.txt | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[rocm,cuda,plots,equivalence,test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/zerojit demo

# The project is held to the linter and formatter it gates migrated code on ([tool.ruff]).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Everything, over two processes a file at a time (--dist loadfile): a file's module fixtures (a migrated release
# tree, a compile cache) are built once, and its tests keep their order (a cold warmup before the cached one).
test: install
	$(PY) -m pytest -q -n 2 --dist loadfile

# The fast tier for the edit loop: every test that neither reads a release tree nor runs a real compiler, over
# two processes (pytest-xdist; the tier holds no test that needs the machine to itself). worksteal: an idle
# process takes tests queued for the other, so a few long tests at the end run side by side (90 s, not 126 s).
test-fast: install
	$(PY) -m pytest -q -n 2 --dist worksteal -m "not release_tree and not compiles"

# Curated mutants in git worktrees, one per core, each against the tests meant to kill it (not part of `make test`).
mutants: install
	$(PY) tests/mutants.py -j $$(nproc)

# docs/spec-reference.md's field tables, written from the spec's parts (a test fails when they differ).
spec-reference: install
	$(PY) -c 'import pathlib; from zerojit.codemods.spec_reference import with_reference_tables as tables; \
	doc = pathlib.Path("docs/spec-reference.md"); doc.write_text(tables(doc.read_text()))'

clean:
	rm -rf $(VENV) .pytest_cache
