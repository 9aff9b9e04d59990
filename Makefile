# Quick start: `make demo` and `make test`. Both create .venv when it is absent.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_DIR := demo-out

.PHONY: bench-remote-cache demo test acceptance acceptance-lowering acceptance-scheduler acceptance-repro acceptance-replay fuzz fuzz-parser opinfo lint format clean grammar-tables bench-cpu bench-cpu-sweep bench-gpu bench-gpu-layouts bench-gpu-limits bench-gpu-models bench-cpu-models bench-compile bench-report bench-cpu-compile bench-gpu-compile test-gpu

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	# A CPU build of torch, pinned: an unpinned torch pulls a multi-GB CUDA build.
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[test,triton]"
	# The remote-cache tests start a real Redis server (Debian's redis-server).
	command -v redis-server >/dev/null || (apt-get update -qq && apt-get install -y -qq redis-server >/dev/null)
	# The report's browser tests drive Debian's chromium (never Playwright's own downloaded browsers).
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/tirc compile examples/gelu_bias.py --dump-after=all --dump-dir $(DEMO_DIR) --check
	$(VENV)/bin/tirc replay $(DEMO_DIR)/04-fusion.tir
	$(VENV)/bin/tirc compile examples/gelu_bias.py --backend triton --dump-after=all --dump-dir $(DEMO_DIR)-triton --check
	$(VENV)/bin/tirc replay $(DEMO_DIR)-triton/02-lower.tir

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/black --check --quiet .
	TRITON_INTERPRET=1 $(PY) -m pytest -q -n 2 tests

# The Foundation issue's checks over examples/, both backends, through the CLI (minutes).
acceptance: $(STAMP)
	$(PY) tests/acceptance/foundation.py

# Many random programs per backend against eager (minutes).
fuzz: $(STAMP)
	TRITON_INTERPRET=1 $(PY) tests/acceptance/fuzz.py cpp 300
	TRITON_INTERPRET=1 $(PY) tests/acceptance/fuzz.py triton 200

# 1000 seeded mutants of real dumps through parse and verify: no traceback, no hang (a minute; SEED=N).
fuzz-parser: $(STAMP)
	$(PY) tests/acceptance/fuzz_parser.py 1000 --seed $(or $(SEED),0)

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/black --check .

format: $(STAMP)
	$(VENV)/bin/black .

# After editing ir_text/grammar.lark: its LALR tables, loaded instead of built (ir_text/grammar_tables.py).
grammar-tables: $(STAMP)
	$(PY) -c "from ir_text.grammar_tables import write_tables; write_tables()"

clean:
	rm -rf $(DEMO_DIR) $(DEMO_DIR)-triton .pytest_cache

# The benchmark-convention corpus (tests/acceptance/problems), cpp backend, against eager (minutes).
acceptance-lowering: $(STAMP)
	$(PY) tests/acceptance/lowering.py

# Kernel counts and peak memory beside Inductor's CPU backend and eager, over three corpora of fusion patterns (minutes).
acceptance-scheduler: $(STAMP)
	$(PY) tests/acceptance/scheduler.py tests/acceptance/problems/patterns tests/acceptance/problems/patterns2 tests/acceptance/problems/fusion

# Every float32 OpInfo op through the cpp backend against eager; writes docs/ops.md (minutes).
opinfo: $(STAMP)
	$(PY) -m tests.opinfo.sweep --write docs/ops.md

# The repro tools on whole models: injected miscompiles reduced to <= 5 ops, crashes in each pass reproduced (minutes per model).
acceptance-repro: $(STAMP)
	$(PY) tests/acceptance/repro.py

# Replay of every dump (all stages) of every program of tests/acceptance/problems and examples/ from the
# headers' seeds alone, without --save-inputs; exits 1 if any replay of a correct compile fails (5 minutes).
acceptance-replay: $(STAMP)
	TRITON_INTERPRET=1 $(PY) tests/acceptance/replay_corpus.py

# Eager vs Inductor vs tirc (C++ backend) on the CPU suite: times, ratios, compile times;
# prints the table and puts it in bench/RESULTS.md (minutes; run on an otherwise idle machine).
bench-cpu: $(STAMP)
	$(PY) bench/cpu.py --write bench/RESULTS.md

# Row ops over shapes and dtypes against eager, off bench-cpu's suite (prints only; minutes).
bench-cpu-sweep: $(STAMP)
	$(PY) bench/cpu_sweep.py

# `tirc report` on about 2,000 kernels: the page loaded in headless chromium, to its first render,
# a search and the fusion graph opened; writes bench/RESULTS.md (a minute).
bench-report: $(STAMP)
	$(PY) bench/report_load.py --write bench/RESULTS.md

# Cold compile time by graph size: about 1k, 5k and 20k ops, per stage (long: the 20k-op programs take minutes).
bench-compile: $(STAMP)
	$(PY) bench/compile_scaling.py --write bench/RESULTS.md

# Cold and warm compile of whole models against Inductor's cold compile, each in a fresh process.
bench-cpu-compile: $(STAMP)
	$(PY) bench/compile_models.py resnet18,resnet50,mobilenet_v2,gpt_block --device cpu --write bench/RESULTS.md

# One training step (forward, loss, backward) of eager, Inductor and tirc on an MLP, a transformer
# block, a ResNet basic-block stack and a cross-entropy head (minutes; keep the machine idle).
bench-train-cpu: $(STAMP)
	$(PY) bench/train.py --device cpu --write bench/RESULTS.md

# These need an NVIDIA GPU (docs/gpu.md).
bench-gpu-train: $(STAMP)
	$(PY) bench/gpu.py --suite train --write bench/RESULTS.md

bench-gpu-compile: $(STAMP)
	$(PY) bench/compile_models.py resnet18,resnet50,mobilenet_v2,gpt_block --device cuda --write bench/RESULTS.md

bench-gpu: $(STAMP)
	$(PY) bench/gpu.py --write bench/RESULTS.md

# Transposes and permutes (tiled pointwise kernels) against eager and Inductor.
bench-gpu-layouts: $(STAMP)
	$(PY) bench/gpu.py --suite layouts --write bench/RESULTS.md

# What a hand-written row copy, layer norm and cross-entropy reach at bench-gpu's sizes.
bench-gpu-limits: $(STAMP)
	$(PY) bench/gpu_limits.py --write bench/RESULTS.md

# Eager vs Inductor vs tirc on model blocks and whole CNNs (bench/model_zoo.py), f32 and bf16 (about 8 minutes).
bench-gpu-models: $(STAMP)
	$(PY) bench/models.py --device cuda --write bench/RESULTS.md

# The same models at CPU sizes, C++ backend, f32 (about 10 minutes on 2 cores; keep the machine idle).
bench-cpu-models: $(STAMP)
	$(PY) bench/models.py --device cpu --write bench/RESULTS.md

# Cold compile against a second machine's through one Redis server (ResNet-50, 12 GPT blocks),
# and 50 compiles with the server killed at random points (minutes; DEVICE=cuda on a GPU).
bench-remote-cache: $(STAMP)
	$(PY) bench/remote_cache.py --device $(or $(DEVICE),cpu) --chaos 50

test-gpu: $(STAMP)
	$(PY) tests/gpu/run_all.py
