# runtime/docker: the test image and the side-by-side benchmark.
# Included by the root Makefile.

DOCKER_TEST_IMAGE ?= ccrun-test:busybox
BUSYBOX           ?= /bin/busybox
BENCH_DOCKER_N    ?= 20

.PHONY: testimage
testimage: ## build the docker test image ccrun-test:busybox (needs busybox-static)
	@test -x $(BUSYBOX) || { echo "no busybox at $(BUSYBOX): apt-get install busybox-static (the image is FROM scratch: it must be the static one)"; exit 1; }
	@ctx=$$(mktemp -d) && cp testdata/docker/Dockerfile $$ctx/Dockerfile && cp $(BUSYBOX) $$ctx/busybox && \
	docker build -q -t $(DOCKER_TEST_IMAGE) $$ctx; rc=$$?; rm -rf $$ctx; exit $$rc

.PHONY: bench-docker
bench-docker: ## cold and warm runs against `docker run --rm --network none`, with the ratios
	@$(GO) test -run '^$$' -bench 'SideBySide' -benchtime $(BENCH_DOCKER_N)x ./runtime/docker/ | \
	awk '/^BenchmarkSideBySide/ { for (i = 3; i < NF; i += 2) m[$$(i+1)] = $$i; found = 1 } \
	     END { if (!found) { print "bench-docker: no figures (no docker engine?)"; exit 1 } \
	           printf "docker run --rm --network none: %7.1f ms\n", m["cli-ms"]; \
	           printf "Run, cold:                      %7.1f ms  %.2fx (goal <= 1.0x)\n", m["cold-ms"], m["cold/cli"]; \
	           printf "Run, warm pool:                 %7.1f ms  %.2fx (goal <= 0.3x)\n", m["pool-ms"], m["pool/cli"]; \
	           printf "  then in the background:       %7.1f ms  (refill, removal; Close waits <= 3 s)\n", m["pool-bg-ms"]; \
	           printf "docker run, Run'"'"'s hardening:    %7.1f ms  (Run, cold: %.2fx of it)\n", m["hardened-cli-ms"], m["cold/hardened-cli"] }'
	@if [ -x $(BIN) ] && $(BIN) exec --help 2>/dev/null | grep -q -- --docker; then \
	  n=$(BENCH_DOCKER_N); ns() { date +%s%N; }; \
	  a=$$(ns); for i in $$(seq $$n); do $(BIN) exec --approve once --docker $(DOCKER_TEST_IMAGE) -- /bin/busybox true >/dev/null || exit 1; done; b=$$(ns); \
	  for i in $$(seq $$n); do docker run --rm --network none $(DOCKER_TEST_IMAGE) /bin/busybox true >/dev/null || exit 1; done; c=$$(ns); \
	  awk -v x=$$((b-a)) -v y=$$((c-b)) -v n=$$n 'BEGIN { printf "$(BIN) exec --docker: %7.1f ms  %.2fx docker run (%d runs each)\n", x/n/1e6, x/y, n }'; \
	  bin=$$(realpath $(BIN)); proj=$$(mktemp -d); mkdir -p $$proj/.ccrun/capabilities/bench-pool; \
	  printf '{"name": "bench-pool", "description": "true, pooled", "environment": "@docker", "pool": true, "entry": {"image": "$(DOCKER_TEST_IMAGE)", "command": ["/bin/busybox", "true"]}}\n' \
	    > $$proj/.ccrun/capabilities/bench-pool/capability.json; \
	  (cd $$proj && $$bin exec --approve once bench-pool >/dev/null) || { rm -rf $$proj; exit 1; }; t=0; \
	  for i in $$(seq $$n); do sleep 0.5; a=$$(ns); (cd $$proj && $$bin exec --approve once bench-pool >/dev/null) || { rm -rf $$proj; exit 1; }; t=$$((t+$$(ns)-a)); done; \
	  rm -rf $$proj; \
	  awk -v x=$$t -v y=$$((c-b)) -v n=$$n 'BEGIN { printf "$(BIN) exec (pool capability): %7.1f ms  %.2fx docker run (%d runs, 0.5 s apart for the refill)\n", x/n/1e6, x/y, n }'; \
	else echo "($(BIN) with exec --docker not built: only the library was measured)"; fi

bench: bench-docker
