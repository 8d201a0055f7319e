# ccrun — run `make help` for the targets.
GO       ?= go
PKGS     ?= ./...
BIN      ?= bin/ccrun

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_.-]+:.*## /{printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# Two static binaries, side by side. bin/ccrun is the front
# (cmd/ccrun/front): it links the gate and @shell alone and starts in a
# third of the time; what it does not serve it hands, by execve, to
# bin/ccrun-full, the whole ccrun (cmd/ccrun). Keep them in one directory. A static
# binary starts ~2 ms faster than one linked against libc (no dynamic
# loader): it matters for an agent that calls ccrun again and again.
.PHONY: build

# VERSION is stamped into both binaries (ccrun version): git describe of
# the work tree, or "devel" outside one.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
VERSION_LDFLAGS = -X github.com/ccrun/ccrun/cmd/ccrun/internal/cli.version=$(VERSION)

build: ## build bin/ccrun (the front: the gate and @shell) and bin/ccrun-full (the rest), static
	CGO_ENABLED=0 $(GO) build -ldflags='$(VERSION_LDFLAGS)' -o $(BIN) ./cmd/ccrun/front
	CGO_ENABLED=0 $(GO) build -ldflags='$(VERSION_LDFLAGS)' -o $(BIN)-full ./cmd/ccrun

# PREFIX: where `make install` puts the two binaries (PREFIX/bin), side by
# side as the front needs them. Default ~/.local (no root needed; put
# ~/.local/bin on PATH).
PREFIX ?= $(HOME)/.local

.PHONY: install
install: build ## install bin/ccrun and bin/ccrun-full into $(PREFIX)/bin (default ~/.local/bin)
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BIN) $(BIN)-full $(DESTDIR)$(PREFIX)/bin/
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "note: $(PREFIX)/bin is not on PATH: add it, e.g. export PATH=\"$(PREFIX)/bin:\$$PATH\"";; esac

.PHONY: test
# -timeout: the @wasm and @docker sandbox tables run hundreds of guests and
# containers; under -race on 2 cores a package can pass go test's default
# 10 minutes.
test: ## run every test with the race detector
	$(GO) test -race -count=1 -timeout 40m $(PKGS)

.PHONY: check
check: fmt-check vet cross lint tidy-check test ## gofmt, vet, darwin build, lint, go mod tidy, tests (TestLayers keeps the layers apart): what CI runs

.PHONY: fmt-check
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet:
	$(GO) vet $(PKGS)

# The library and the CLI build for darwin: Linux-only code lives in
# _linux.go files with an _other.go counterpart.
.PHONY: cross
cross: ## build for darwin (GOOS=darwin go build)
	GOOS=darwin GOARCH=arm64 $(GO) build $(PKGS)

.PHONY: lint
lint: ## staticcheck when installed
	@if command -v staticcheck >/dev/null; then staticcheck $(PKGS); else echo "staticcheck not installed: go install honnef.co/go/tools/cmd/staticcheck@latest"; fi

.PHONY: tidy-check
tidy-check:
	@cp go.mod /tmp/ccrun-go.mod.bak; cp go.sum /tmp/ccrun-go.sum.bak; $(GO) mod tidy; \
	if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changed go.mod/go.sum"; git diff -- go.mod go.sum | head -20; exit 1; fi

BENCH_N ?= 200

.PHONY: bench
bench: bench-gate bench-shell ## the side-by-side figures: gate, @shell, @wasm, @docker

.PHONY: bench-gate
bench-gate: ## a decision for a simple and a compound command, parse included
	@$(GO) test -run '^$$' -bench 'Decision|ParseCommand' -benchmem ./permission/ . | grep -E '^Benchmark'

.PHONY: bench-shell
# BENCH_SHELL_BASE: another front (its ccrun-full beside it), run in turn
# with $(BIN), for a before/after.
bench-shell: build ## `ccrun exec --shell true`, `ccrun version` and a handed-over `ccrun capability list` (the front, and the whole ccrun) against `sh -c true`, as new processes, interleaved
	@l0=$$(cut -d' ' -f1-3 /proc/loadavg); \
	CCRUN_BENCH_BIN=$(abspath $(BIN)) CCRUN_BENCH_BASE=$(if $(BENCH_SHELL_BASE),$(abspath $(BENCH_SHELL_BASE))) \
	$(GO) test -run '^$$' -bench ShellTrue -benchtime $(BENCH_N)x ./cmd/ccrun/internal/cli/ | \
	awk -v l0="$$l0" '/^BenchmarkShellTrue/ { for (i = 3; i < NF; i += 2) m[$$(i+1)] = $$i } END { if (!("sh-c-ms" in m)) { print "bench-shell: no figures"; exit 1 } \
	     getline l1 < "/proc/loadavg"; split(l1, a, " "); s = m["sh-c-ms"]; \
	     printf "ccrun exec --shell true: %6.2f ms  vs sh -c true %6.2f ms: +%.2f ms (median of the differences; goal <= +3 ms)\n", m["ccrun-exec-ms"], s, m["overhead-ms"]; \
	     printf "ccrun version:           %6.2f ms\n", m["ccrun-version-ms"]; \
	     printf "the whole ccrun (bin/ccrun-full, go install): exec %6.2f ms (+%.2f ms), version %6.2f ms\n", m["whole-exec-ms"], m["whole-overhead-ms"], m["whole-version-ms"]; \
	     printf "ccrun capability list:   %6.2f ms  vs the whole ccrun %6.2f ms: +%.2f ms (what the hand-over costs)\n", m["ccrun-handed-ms"], m["whole-handed-ms"], m["handoff-ms"]; \
	     if ("base-exec-ms" in m) printf "the base (BENCH_SHELL_BASE): exec %6.2f ms (+%.2f ms), capability list %6.2f ms (+%.2f ms)\n", m["base-exec-ms"], m["base-overhead-ms"], m["base-handed-ms"], m["base-handoff-ms"]; \
	     printf "load average: %s before, %s %s %s after\n", l0, a[1], a[2], a[3] }'

-include mk/*.mk
