# The @wasm executor (runtime/wasm): guest modules, benchmarks, WASI conformance.

WASM_GUESTS  := hello escape probe
WASM_OUT     ?= testdata/wasm
WASI_SUITE   ?= /tmp/wasi-testsuite
# WAZERO: the wazero CLI beside ccrun in wasi-testsuite; when it is not the version go.mod
# names, that version is installed into GOBIN (or GOPATH/bin) and run instead.
WAZERO       ?= $(shell command -v wazero || echo $$($(GO) env GOPATH)/bin/wazero)

.PHONY: wasm-guests
wasm-guests: ## build the wasm test guests into testdata/wasm/*.wasm (the tests also build their own)
	@for g in $(WASM_GUESTS); do \
		(cd testdata/wasm/$$g && GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 $(GO) build -o ../$$g.wasm .) || exit 1; \
		echo "testdata/wasm/$$g.wasm"; \
	done

.PHONY: bench-wasm
bench-wasm: ## wasm figures: in-process runs, timeout cost; ccrun exec (warm server, in process, CPU-bound) vs wazero run, side by side
	$(GO) test -run '^$$' -bench . -benchtime 20x ./runtime/wasm/
	@if [ -d cmd/ccrun ]; then $(MAKE) --no-print-directory build && testdata/wasm/bench.sh $(BIN) 50 3; \
	else echo "no cmd/ccrun yet: skipping ccrun exec --wasm vs wazero run"; fi

bench: bench-wasm

# WASI_SUITE_REPO: where the suite is cloned from (a local mirror works).
WASI_SUITE_REPO ?= https://github.com/WebAssembly/wasi-testsuite

.PHONY: wasi-testsuite
wasi-testsuite: ## run WebAssembly/wasi-testsuite (wasm32-wasip1) through runtime/wasm and wazero run; fails on a test not listed as known; WASI_SUITE=checkout
	@if [ ! -d $(WASI_SUITE)/tests ]; then \
		echo "fetching wasi-testsuite (branch prod/testsuite-base) from $(WASI_SUITE_REPO) into $(WASI_SUITE)"; \
		git clone --depth 1 --branch prod/testsuite-base $(WASI_SUITE_REPO) $(WASI_SUITE); \
	fi
	@echo "wasi-testsuite at $$(git -C $(WASI_SUITE) log -1 --format='%h %cs' 2>/dev/null || echo '(not a git checkout)')"
	@v=$$($(GO) list -m -f '{{.Version}}' github.com/tetratelabs/wazero); wz="$(WAZERO)"; \
	if [ "$$("$$wz" version 2>/dev/null)" != "$$v" ]; then \
		bin=$$($(GO) env GOBIN); wz=$${bin:-$$($(GO) env GOPATH)/bin}/wazero; \
		if [ "$$("$$wz" version 2>/dev/null)" != "$$v" ]; then \
			echo "installing wazero $$v (the version go.mod names) for the side-by-side figure"; \
			$(GO) install github.com/tetratelabs/wazero/cmd/wazero@$$v || exit 1; \
		fi; \
	fi; \
	echo "wazero run: $$wz $$v"; \
	out=$$(CCRUN_WASI_TESTSUITE=$(WASI_SUITE) CCRUN_WAZERO=$$wz \
		$(GO) test -count=1 -run '^TestWASITestsuite$$' -v ./runtime/wasm/ 2>&1); rc=$$?; \
		printf '%s\n' "$$out" | grep -v '^ *\(=== \|--- PASS\)'; exit $$rc
