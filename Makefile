# afc: every target creates .venv and installs what it needs, so it works on a fresh machine.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
EXTRAS := test,onnx,torch,safetensors,hfusion
STAMP  := $(VENV)/.installed
# bench alone also installs IREE (the bench extra), so `make test` never downloads it
BENCH_STAMP := $(VENV)/.installed-bench

.PHONY: run test bench lint typecheck lit pytest clean mlir-tools

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[$(EXTRAS)]'
	touch $@

run: $(STAMP)
	$(BIN)/afc compile examples/llama_layer.afc --chip Ascend910B1 -o build/llama_layer --check

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

lit: $(STAMP)
	$(BIN)/lit -sv --order=smart tests/filecheck examples/embedding/tests

pytest: $(STAMP) mlir-tools
	$(BIN)/pytest -n 2

# mlir-cpu-runner (Debian mlir-19-tools) runs bishengir's CPU lowering in the hfusion
# numerics tests: installed where we are root with apt, else those tests skip and say why
mlir-tools:
	-@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! command -v mlir-cpu-runner-19 >/dev/null; then \
	  apt-get install -y -qq mlir-19-tools >/dev/null 2>&1 || \
	  { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq mlir-19-tools >/dev/null 2>&1; } || \
	  echo "note: mlir-19-tools could not be installed; the hfusion numerics tests will skip"; fi

test: lint typecheck lit pytest

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[$(EXTRAS),bench]'
	touch $@

bench: $(BENCH_STAMP)
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info
