# ccrun — run `make help` for the targets.
GO       ?= go
PKGS     ?= ./...
BIN      ?= bin/ccrun

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z_.-]+:.*## /{printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/ccrun
	$(GO) build -o $(BIN) ./cmd/ccrun

.PHONY: test
test: ## run every test with the race detector
	$(GO) test -race -count=1 $(PKGS)

.PHONY: check
check: fmt-check vet lint tidy-check test ## gofmt, vet, lint, go mod tidy, tests: what CI runs

.PHONY: fmt-check
fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet:
	$(GO) vet $(PKGS)

.PHONY: lint
lint: ## staticcheck when installed
	@if command -v staticcheck >/dev/null; then staticcheck $(PKGS); else echo "staticcheck not installed: go install honnef.co/go/tools/cmd/staticcheck@latest"; fi

.PHONY: tidy-check
tidy-check:
	@cp go.mod /tmp/ccrun-go.mod.bak; cp go.sum /tmp/ccrun-go.sum.bak; $(GO) mod tidy; \
	if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changed go.mod/go.sum"; git diff -- go.mod go.sum | head -20; exit 1; fi

.PHONY: bench
bench: ## benchmarks of every package, plus the side-by-side ratios
	$(GO) test -run '^$$' -bench . -benchtime 200x ./permission/

-include mk/*.mk
