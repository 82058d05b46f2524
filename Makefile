# Two commands set everything up on a fresh machine: `make demo` and `make test`.
# Every step is idempotent: re-running reinstalls nothing that is already in place.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.zerojit-installed

.PHONY: install demo test clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# Re-run pip only when the project's dependencies change. torch is pinned to the CPU
# build these machines carry; FlyDSL's AMDGPU linker comes from the ziglang wheel;
# CuTe DSL and FlashAttention-4 compile for NVIDIA targets without a GPU.
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[rocm,cuda,test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/zerojit demo

test: install
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .pytest_cache
