# traj — build, test and demo. Every tool the tests need is installed here,
# into git-ignored folders, so a fresh clone needs only Go, npm, gcc and git.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

GO          ?= go
TOOLS       := $(CURDIR)/.tools
TOOLBIN     := $(TOOLS)/bin
OPENCODE_NPM := $(CURDIR)/sandbox/opencode/npm
OPENCODE_BIN := $(OPENCODE_NPM)/node_modules/opencode-linux-x64/bin/opencode
CLAUDE_NPM  := $(CURDIR)/sandbox/claudecode/npm
CLAUDE_BIN  := $(CLAUDE_NPM)/node_modules/@anthropic-ai/claude-code-linux-x64/claude
CODEX_NPM   := $(CURDIR)/sandbox/codex/npm
CODEX_BIN   := $(CODEX_NPM)/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex
# DuckDB (npm @duckdb/node-api) reads the Parquet exports in the export tests.
DUCKDB_NPM  := $(CURDIR)/replay/export/testdata/duckdb
DUCKDB_STAMP := $(DUCKDB_NPM)/node_modules/.installed
VERSITYGW_VERSION   := v1.8.0
STATICCHECK_VERSION := v0.8.2
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
TRAJ        := $(CURDIR)/bin/traj
# make install links bin/traj into BINDIR (on PATH). A link, not a copy: traj
# then still finds this checkout's OpenCode install (sandbox/opencode/npm).
PREFIX      ?= /usr/local
BINDIR      ?= $(PREFIX)/bin
# Public suite samples live beside the repository in ../shared/fixtures.
TRAJ_TESTS_DIR ?= $(abspath $(CURDIR)/../shared/fixtures)
# Per package: cmd/traj and orchestrator record many real trajectories (three
# harnesses x two sandbox providers, the adversarial compilers); 14m was too
# short for them on 2 cores. The 20-minute make test target is not met on
# the CI runner (28-29 minutes; 10.5 on a faster machine, see AGENTS.md).
TEST_TIMEOUT ?= 50m
BENCHTIME   ?= 1s

export PATH := $(TOOLBIN):$(PATH)
export TRAJ_TESTS_DIR
export TRAJ_OPENCODE_BIN ?= $(OPENCODE_BIN)
export TRAJ_CLAUDE_BIN ?= $(CLAUDE_BIN)
export TRAJ_CODEX_BIN ?= $(CODEX_BIN)

.PHONY: install setup build test lint bench demo stress fuzz clean tools opencode harnesses duckdb export-fixture view-fork-fixture report-png view-png chromium sandbox-debs bwrap image

## setup: install everything the tests and the demo need (idempotent).
setup: tools opencode harnesses duckdb chromium sandbox-debs slurm

# Debian's headless Chromium: the viewer's browser tests (replay/view) drive
# it with chromedp; report-png and view-png screenshot with it.
chromium:
	@command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; }

# The sandbox providers: bubblewrap (bwrap), podman with runc (crun fails on
# cgroup hybrid hosts) and uidmap, mmdebstrap for `make image`. Installed
# with apt-get when missing (as root; otherwise the command to run is printed).
SANDBOX_DEBS := bubblewrap podman runc uidmap mmdebstrap
# apt_install installs the Debian packages $(1) that are missing (as root;
# otherwise it prints the command to run).
define apt_install
	@command -v dpkg >/dev/null || { echo "not Debian: install $(1) with your package manager"; exit 0; }; \
	missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
		else echo "missing Debian packages:$$missing (run: sudo apt-get install$$missing)"; exit 1; fi; \
	fi
endef
sandbox-debs:
	$(call apt_install,$(SANDBOX_DEBS))

# bwrap: the one sandbox package the demo needs.
bwrap:
	$(call apt_install,bubblewrap)

## image: the container sandbox's image, built offline from Debian once (mmdebstrap + import; ~1-2 min).
image: build sandbox-debs
	$(TRAJ) sandbox image

# slurm: Slurm and munge from Debian for the experiment test, which starts
# its own single-node cluster (config in a temporary folder).
.PHONY: slurm
slurm:
	@{ command -v slurmctld && command -v slurmd && command -v sbatch && command -v munged; } >/dev/null 2>&1 || \
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y slurm-wlm munge; }

tools: $(TOOLBIN)/versitygw $(TOOLBIN)/staticcheck

$(TOOLBIN)/versitygw:
	GOBIN=$(TOOLBIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

$(TOOLBIN)/staticcheck:
	GOBIN=$(TOOLBIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

opencode: $(OPENCODE_BIN)

$(OPENCODE_BIN): $(OPENCODE_NPM)/package.json $(OPENCODE_NPM)/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required to install OpenCode (apt-get install npm)"; exit 1; }
	@# npm ci refuses this lockfile: npm records only this platform's optional
	@# opencode-<os>-<arch> packages. npm install with --no-save installs exactly
	@# the locked versions (integrity-checked) and never rewrites the lockfile.
	cd $(OPENCODE_NPM) && npm install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error
	test -x $(OPENCODE_BIN)
	touch $(OPENCODE_BIN)

## harnesses: Claude Code and Codex, pinned by the lockfiles beside their adapters.
harnesses: $(CLAUDE_BIN) $(CODEX_BIN)

# Like OpenCode's, these lockfiles name this platform's optional binary
# package only; npm install --no-save installs exactly the locked versions.
$(CLAUDE_BIN): $(CLAUDE_NPM)/package.json $(CLAUDE_NPM)/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required to install Claude Code (apt-get install npm)"; exit 1; }
	cd $(CLAUDE_NPM) && npm install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error
	test -x $(CLAUDE_BIN)
	touch $(CLAUDE_BIN)

$(CODEX_BIN): $(CODEX_NPM)/package.json $(CODEX_NPM)/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required to install Codex (apt-get install npm)"; exit 1; }
	cd $(CODEX_NPM) && npm install --no-save --no-audit --no-fund --ignore-scripts --loglevel=error
	test -x $(CODEX_BIN)
	touch $(CODEX_BIN)

## duckdb: DuckDB for the export tests, pinned by its lockfile.
duckdb: $(DUCKDB_STAMP)

$(DUCKDB_STAMP): $(DUCKDB_NPM)/package.json $(DUCKDB_NPM)/package-lock.json
	@command -v npm >/dev/null || { echo "npm is required to install DuckDB for the export tests (apt-get install npm)"; exit 1; }
	@# As for OpenCode: the lockfile holds only this platform's optional
	@# @duckdb/node-bindings-<os>-<arch>; install the locked versions as they are.
	cd $(DUCKDB_NPM) && npm install --no-save --no-audit --no-fund --loglevel=error
	test -d $(DUCKDB_NPM)/node_modules/@duckdb/node-api
	touch $(DUCKDB_STAMP)

## build: the traj binary and its sandbox helper (traj-sandbox: what every sandbox shows) in ./bin.
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(CURDIR)/bin/ ./cmd/traj ./cmd/traj-sandbox

## install: build bin/traj and link it as $(BINDIR)/traj (PREFIX=/usr/local;
## `make install PREFIX=$$HOME/.local` needs no root). `make setup` first for OpenCode.
install: build
	mkdir -p $(BINDIR)
	ln -sfn $(TRAJ) $(BINDIR)/traj
	@echo "traj → $(BINDIR)/traj ($$(command -v traj >/dev/null && echo on PATH || echo "add $(BINDIR) to PATH"))"

## test: every test, with the real OpenCode, git CLI, S3 server, C compiler, bwrap and podman.
test: setup build image
	@command -v gcc >/dev/null || { echo "gcc is required (apt-get install gcc)"; exit 1; }
	@command -v git >/dev/null || { echo "git is required (apt-get install git)"; exit 1; }
	TRAJ_BIN=$(TRAJ) $(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME_SHORT)

## lint: gofmt, go vet, staticcheck.
lint: $(TOOLBIN)/staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...

## bench: the speed and memory targets, measured side by side.
bench: setup build image
	TRAJ_BIN=$(TRAJ) $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

## bench-scale: the issue-40 table (orchestrator/synth BenchmarkScale at 10,000 and 100,000
## parts, side by side with git and trace show, plus the report over 10,000 trajectories);
## part of make bench too. SYNTH_DIR keeps the synthetic stores between runs (100,000
## parts take minutes to write); make stress runs it at 1,000,000.
.PHONY: bench-scale
SYNTH_DIR ?=
bench-scale: build
	TRAJ_BIN=$(TRAJ) TRAJ_SYNTH_DIR=$(SYNTH_DIR) $(GO) test -run '^$$' -bench '^(BenchmarkScale|BenchmarkReport10000)$$' -benchtime 1x -timeout 90m -v ./orchestrator/synth ./replay/report

## bench-fresh: the fresh suite's cost (generation + gcc oracle) against one tree's
## evaluation CPU, side by side (target <= 0.20; part of make bench too).
.PHONY: bench-fresh
bench-fresh: build
	$(GO) test -run '^$$' -bench '^BenchmarkFreshOverhead$$' -benchtime 3x ./replay/evalbox

## report-png: build a sample store and batch report (out/report-sample/report.html)
## and screenshot it with Debian's headless Chromium to out/report.png.
report-png:
	@command -v chromium >/dev/null || { apt-get update && apt-get install -y chromium; }
	mkdir -p out/report-sample
	TRAJ_REPORT_SAMPLE_DIR=$(CURDIR)/out/report-sample $(GO) test -count=1 -run '^TestSampleReport$$' ./cmd/traj/
	profile=$$(mktemp -d) && trap 'rm -rf "$$profile"' EXIT && \
	chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	  --disable-background-networking --disable-component-update --disable-sync \
	  --user-data-dir="$$profile" --screenshot=$(CURDIR)/out/report.png --window-size=1200,1600 \
	  file://$(CURDIR)/out/report-sample/report.html 2>out/chromium.log || { cat out/chromium.log; exit 1; }
	@test -s out/report.png && echo "report PNG: out/report.png (page: out/report-sample/report.html)"

## view-png: screenshots of every viewer page (store, trajectory, diff, code,
## tests, compare, and a trace holding script injections) on a sample store,
## the recorded demo's tool parts, a 10,000-part trajectory without
## evaluation, a 120-run store grouped by model and a 12-run compare, taken
## by headless Chromium through chromedp, into out/view-*.png.
view-png: chromium
	mkdir -p out
	TRAJ_VIEW_PNG_DIR=$(CURDIR)/out $(GO) test -count=1 -run '^TestViewScreenshots$$' ./replay/view/
	@ls out/view-*.png

## demo: record a real trajectory (real OpenCode, or AGENT=claude-code|codex; the scripted demo model,
## the C-compiler environment) into ./runs, then show it and what to try next.
# AGENT=claude-code or AGENT=codex records the same demo with that harness.
AGENT       ?= opencode
ifeq ($(AGENT),opencode)
DEMO_SCRIPT ?= sandbox/scripted/demo/c-compiler.jsonl
DEMO_HARNESS := $(OPENCODE_BIN)
else
DEMO_SCRIPT ?= sandbox/scripted/demo/c-compiler-$(AGENT).jsonl
DEMO_HARNESS := $(if $(filter claude-code,$(AGENT)),$(CLAUDE_BIN),$(CODEX_BIN))
endif
ifndef DEMO_ID
DEMO_ID     := demo-$(shell date -u +%Y%m%d-%H%M%S)
endif
# The demo installs only what it runs: its harness (npm) and bubblewrap; the
# rest of setup (other harnesses, DuckDB, Chromium, podman, Slurm, versitygw)
# is for the tests.
demo: $(DEMO_HARNESS) bwrap build
	$(TRAJ) run --task c-compiler --agent $(AGENT) --model scripted/demo --script $(DEMO_SCRIPT) \
		--max-parts 50 --timeout 15m --trajectory-id $(DEMO_ID) --store ./runs
	@echo
	$(TRAJ) trace show runs/trajectories/$(DEMO_ID)
	@echo
	@echo "Try next:"
	@echo "  bin/traj replay checkout-part $(DEMO_ID) --part 10 --checkout-dest out/$(DEMO_ID)-part10"
	@echo "  bin/traj replay evaluate $(DEMO_ID) --tests-dir $(TRAJ_TESTS_DIR) --output out/$(DEMO_ID)-eval.json --html out/$(DEMO_ID)-eval.html"
	@echo "  bin/traj trace validate runs/trajectories/$(DEMO_ID)"

## export-fixture: re-record the export tests' demo trajectory (replay/export/testdata/demo:
## the demo with the real OpenCode and the scripted model, evaluated by traj replay evaluate),
## then refresh the ATIF golden file. Needed when the trace format changes.
export-fixture: setup build
	tmp=$$(mktemp -d /tmp/traj-demo.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	$(TRAJ) run --task c-compiler --model scripted/demo --script $(DEMO_SCRIPT) --max-parts 50 \
		--timeout 30m --trajectory-id demo --store "$$tmp/runs" --quiet && \
	$(TRAJ) replay evaluate --trajectory-id demo --store "$$tmp/runs" --output "$$tmp/eval.json" && \
	cp "$$tmp/runs/trajectories/demo/"{agent_trace.json,evaluation.json,repo.bundle} replay/export/testdata/demo/
	$(GO) test -count=1 -run TestATIFDemo ./replay/export -update

## view-fork-fixture: re-record the viewer's recorded fork (replay/view/testdata/recorded-fork):
## the OpenCode demo as "demo-src" and a fork of it in turn 2 (FORK_PART) with fork.jsonl and a
## prompt as "demo-fork" (it ends agent_error, exit 3, when fork.jsonl runs out).
FORK_PART ?= 20
view-fork-fixture: setup build
	tmp=$$(mktemp -d /tmp/traj-fork.XXXXXX) && trap 'rm -rf "$$tmp"' EXIT && \
	$(TRAJ) run --task c-compiler --model scripted/demo --script sandbox/scripted/demo/c-compiler.jsonl \
		--max-parts 50 --timeout 30m --trajectory-id demo-src --store "$$tmp/runs" --quiet && \
	{ $(TRAJ) run --fork demo-src --at-part $(FORK_PART) --script replay/view/testdata/recorded-fork/fork.jsonl \
		--prompt "Hint: the fork may stop here." --max-parts 60 --store "$$tmp/runs" --trajectory-id demo-fork --quiet; \
	  test $$? -eq 3; } && \
	for id in demo-src demo-fork; do mkdir -p replay/view/testdata/recorded-fork/$$id && \
		cp "$$tmp/runs/trajectories/$$id/"{agent_trace.json,repo.bundle} replay/view/testdata/recorded-fork/$$id/; done

## fuzz: each fuzz target for FUZZTIME; `make test` runs them for FUZZTIME_SHORT.
## A failing input is written to the package's testdata/fuzz/<target>/ and fails the run. Go
## 1.26's fuzz coordinator can also end a run at the deadline with a bare "context deadline
## exceeded" and no input (go.dev/issue/75804, fixed in Go 1.27): that is reported, not failed.
FUZZTIME_SHORT ?= 8s
FUZZ_TARGETS   := FuzzRead:./trace FuzzOpenForAppend:./trace FuzzParseTestPath:./environment/ccompiler FuzzIndex:./replay/view FuzzEvalReport:./replay/view FuzzReadBundle:./trace/gitstate FuzzDecodePart:./replay/export FuzzDecodePart:./sandbox/opencode/wire FuzzString:./trace/jsondec
fuzz:
	for t in $(FUZZ_TARGETS); do \
		name=$${t%%:*}; pkg=$${t#*:}; corpus=$$pkg/testdata/fuzz/$$name; \
		before=$$( (ls "$$corpus" 2>/dev/null || true) | wc -l); rc=0; \
		out=$$($(GO) test $(FUZZFLAGS) -fuzz "^$$name$$" "$$pkg" 2>&1) || rc=$$?; \
		printf '%s\n' "$$out"; \
		if [ $$rc -ne 0 ]; then \
			after=$$( (ls "$$corpus" 2>/dev/null || true) | wc -l); \
			if [ "$$after" = "$$before" ] && printf '%s' "$$out" | grep -q 'context deadline exceeded'; then \
				echo "fuzz $$name: Go's fuzz coordinator stopped on its deadline race (go.dev/issue/75804), no failing input: not a failure"; \
			else exit $$rc; fi; \
		fi; \
	done

## stress: the fuzzers for FUZZTIME each, the kill -9 test with STRESS_KILLS kills, the
## crash test of a trace at CRASH_PARTS parts (make test runs it at 20,000), and the
## issue-40 table at 1,000,000 parts (writing that synthetic trajectory takes hours).
FUZZTIME     ?= 60s
STRESS_KILLS ?= 50
CRASH_PARTS  ?= 100000
# Minimizing an input of FuzzOpenForAppend runs file I/O per try; keep it short.
FUZZFLAGS    := -run '^$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 5s
stress: setup build
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)
	TRAJ_BIN=$(TRAJ) TRAJ_KILLS=$(STRESS_KILLS) $(GO) test -count=1 -timeout 60m -run '^TestKillRun' -v ./orchestrator
	TRAJ_CRASH_PARTS=$(CRASH_PARTS) $(GO) test -count=1 -timeout 30m -run '^TestCrashResumeLarge$$' -v ./trace
	TRAJ_BIN=$(TRAJ) TRAJ_SYNTH_DIR=$(SYNTH_DIR) TRAJ_SCALE_PARTS=1000000 $(GO) test -run '^$$' -bench '^BenchmarkScale$$' -benchtime 1x -timeout 600m -v ./orchestrator/synth

clean:
	rm -rf bin out
