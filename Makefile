# loom's build and test entry points. `make test` is what CI runs (.ci/run).

GO ?= go

.PHONY: test test-long check tools fuzz example onednn suite graphbench defaulttable sweep modelbench runtimetable onnx-proto onnx-testdata

# test runs every test, with the tools they need and the formatting and
# vet checks first. The tests allocate much and keep little: the
# collector runs only when a process's heap reaches a gigabyte
# (GOGC=off GOMEMLIMIT=1GiB), which takes a quarter off the CPU time of
# the packages that search schedules against collecting at four times
# the live heap (GOGC=400; autotune's default-schedule tests: 56.8 s of
# CPU against 41.8 s). go test runs the packages two at
# a time in the order it is given them: the longest first (SLOW_FIRST, a
# package's share of the run on two cores, longest first), so that no
# long package starts last and runs alone while the other core idles.
SLOW_FIRST = ./autotune ./tools/loom ./module ./schedule ./codegen/cuda ./codegen/partition ./fusion ./poly
# The build's tests (codegen/llvm/native) run once more inside that run
# with the newest LLVM loom supports (TestNewestLLVM: LOOM_LLVM=19; the
# run itself takes the LLVM on PATH, 14 on Debian 12), so that the IR
# stays good for LLVM 14 to 19.
test: tools check
	GOGC=off GOMEMLIMIT=1GiB $(GO) test -timeout 45m $$($(GO) list $(SLOW_FIRST) ./...)

# test-long runs the packages of LONG_PKGS with -long (their randomized
# runs at full size, every seed, the validator on every step: hours) and
# the others as test does.
LONG_PKGS = poly schedule autotune codegen/cuda codegen/partition module codegen/llvm/native fusion
test-long: tools check
	GOGC=off GOMEMLIMIT=1GiB $(GO) test -timeout 12h $$($(GO) list ./... | grep -v -E '/($(subst $(eval) ,|,$(LONG_PKGS)))$$')
	GOGC=off GOMEMLIMIT=1GiB $(GO) test -timeout 12h $(addprefix ./,$(LONG_PKGS)) -long

# tools installs what the tests need besides Go: clang-14 and clang-16
# (sm_90), which compile the generated CUDA to PTX on machines without a
# GPU, and g++ (C++20),
# which runs the generated CUDA on the CPU, a thread per GPU thread
# (codegen/cuda); LLVM 14 and 19, the oldest and newest LLVM the CPU code
# generator is checked with.
tools:
	@missing=; \
	command -v clang-14 >/dev/null 2>&1 || missing="$$missing clang-14"; \
	command -v clang-16 >/dev/null 2>&1 || missing="$$missing clang-16"; \
	command -v g++ >/dev/null 2>&1 || missing="$$missing g++"; \
	command -v opt-14 >/dev/null 2>&1 || command -v opt >/dev/null 2>&1 || missing="$$missing llvm-14"; \
	command -v opt-19 >/dev/null 2>&1 || missing="$$missing llvm-19"; \
	if [ -n "$$missing" ]; then \
		echo "installing$$missing for the code generators' checks"; \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq $$missing >/dev/null; \
	fi

# check fails on unformatted files and on go vet findings.
check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# fuzz runs each fuzz target for FUZZTIME (opt-in; tests run only the seeds).
FUZZTIME ?= 1m
fuzz:
	$(GO) test ./ast -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./ast -run '^$$' -fuzz '^FuzzParseExpr$$' -fuzztime $(FUZZTIME)
	$(GO) test ./poly -run '^$$' -fuzz '^FuzzParseSet$$' -fuzztime $(FUZZTIME)
	$(GO) test ./schedule -run '^$$' -fuzz '^FuzzParseTraceText$$' -fuzztime $(FUZZTIME)
	$(GO) test ./schedule -run '^$$' -fuzz '^FuzzParseTrace$$' -fuzztime $(FUZZTIME)
	$(GO) test ./schedule -run '^$$' -fuzz '^FuzzSchedule$$' -fuzztime $(FUZZTIME)
	$(GO) test ./codegen/llvm -run '^$$' -fuzz '^FuzzLower$$' -fuzztime $(FUZZTIME)
	$(GO) test ./fusion -run '^$$' -fuzz '^FuzzGraph$$' -fuzztime $(FUZZTIME)
	$(GO) test ./fusion -run '^$$' -fuzz '^FuzzShapes$$' -fuzztime $(FUZZTIME)
	$(GO) test ./module -run '^$$' -fuzz '^FuzzCompile$$' -fuzztime $(FUZZTIME)
	$(GO) test ./autotune -run '^$$' -fuzz '^FuzzModelJSON$$' -fuzztime $(FUZZTIME)
	$(GO) test ./onnx -run '^$$' -fuzz '^FuzzImport$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/safetensors -run '^$$' -fuzz '^FuzzFile$$' -fuzztime $(FUZZTIME)

# onnx-proto regenerates onnx/internal/onnxpb from ONNX's schema (Debian's
# python3-onnx and protobuf-compiler, installed when missing).
onnx-proto:
	onnx/internal/onnxpb/generate.sh

# onnx-testdata remakes the small ONNX models of testdata/onnx and ONNX
# Runtime's outputs for them (python3-onnx, numpy, npm's onnxruntime-node).
onnx-testdata:
	@/usr/bin/python3 -c 'import onnx, numpy' 2>/dev/null || { \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq python3-onnx python3-numpy >/dev/null; }
	@[ -d bin/modelbench/node_modules/onnxruntime-node ] || { mkdir -p bin/modelbench && \
		cd bin/modelbench && ( [ -f package.json ] || echo '{"name": "loom-modelbench", "private": true}' > package.json ) && \
		npm install --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30 >/dev/null; }
	/usr/bin/python3 testdata/onnx/make.py
	/usr/bin/python3 -c 'import torch' 2>/dev/null && /usr/bin/python3 testdata/onnx/make_torch.py || \
		echo "no PyTorch (python3-torch): the exported networks of make_torch.py are left as they are"
	NODE_PATH=bin/modelbench/node_modules node testdata/onnx/reference.js

# example is the main job for now: print and interpret an example function.
example:
	$(GO) run ./tools/loom example

# onednn builds oneDNN's side of the benchmark suite (tools/onednn), with
# Debian's oneDNN 2.6 (libdnnl-dev), installed when missing.
ONEDNN_BIN ?= bin/onednn_suite
onednn: $(ONEDNN_BIN)
$(ONEDNN_BIN): tools/onednn/suite.cpp
	@[ -f /usr/include/oneapi/dnnl/dnnl.hpp ] && command -v g++ >/dev/null 2>&1 || { \
		echo "installing libdnnl-dev and g++ for oneDNN's side of the suite"; \
		sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
		$$sudo apt-get update -qq && $$sudo apt-get install -y -qq libdnnl-dev g++ >/dev/null; }
	@mkdir -p $(dir $@)
	g++ -O2 -std=c++17 -o $@ $< -ldnnl

# suite tunes every case of the benchmark suite (testdata/suite: ResNet-50,
# MobileNetV2, BERT-base, GPT-2 small) with TRIALS trials per kernel on
# THREADS threads and prints one JSON line per case, loom against oneDNN
# measured in the same run. CASES selects cases by a regular expression.
# The lines also go to RESULTS, and a case RESULTS has a line for (same
# threads, trials and CPU) is not run again: an interrupted run resumes.
TRIALS ?= 64
THREADS ?= 1
CASES ?= .
RESULTS ?= bin/suite-$(THREADS)threads.jsonl
suite: onednn
	$(GO) run ./tools/loom bench -suite testdata/suite -cases '$(CASES)' -trials $(TRIALS) -threads $(THREADS) -onednn $(ONEDNN_BIN) -results $(RESULTS)

# graphbench compiles each shipped graph (testdata/graphs, mlp) as a module
# and times it beside numpy computing the same graph op by op, on
# GRAPH_THREADS (default 1 and 2): one JSON line per run, then a table. It installs
# python3-numpy when missing.
GRAPH_THREADS ?= 1 2
graphbench:
	tools/graphbench/run $(GRAPH_THREADS)

# modelbench exports real models with PyTorch (resnet50, mobilenet_v2,
# efficientnet_b0, vit_b_16, a BERT-base layer and 12 of them, a GPT-2 small
# prefill), imports each with loom, and times loom's module (Go and its C
# library), ONNX Runtime 1.30 and PyTorch eager at 1 and 2 threads, outputs
# checked, with loom's compile times cold and cached (tools/modelbench/models;
# MODELS="..." for some of them). It installs PyTorch, OpenBLAS, python3-onnx
# and onnxruntime-node (into bin/modelbench) when missing.
MODELS ?=
modelbench:
	tools/modelbench/models $(MODELS)

# runtimetable measures issue 45's runtime table: each shipped graph (and
# mlp) as loom's module and in ONNX Runtime 1.30, at 1 and 2 threads on an
# idle machine and at 2 beside one busy process (tools/modelbench/run;
# OLD=DIR adds the loom of another work tree).
runtimetable:
	tools/modelbench/run

# defaulttable measures issue 21's table: loom's default schedule against its
# tuned one, Halide's hand schedule and autoschedulers, oneDNN and OpenBLAS,
# on each built-in workload, in one run (tools/defaulttable; the peers from
# ../shared/peers, as its README sets them up).
DEFAULT_THREADS ?= 1 2
defaulttable:
	tools/defaulttable/run $(DEFAULT_THREADS)

# sweep measures issue 23's shape sweep: buckets tuned over a symbolic size,
# against exact-size and one-size tuning, size by size (tools/sweep; hours).
SWEEP_THREADS ?= 1 2
sweep:
	tools/sweep/run $(SWEEP_THREADS)
