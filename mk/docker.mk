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

# BENCH_DOCKER_BASE: another ccrun binary (say, a build of the last commit)
# whose `ccrun exec` runs are interleaved with $(BIN)'s, for a before/after.
BENCH_DOCKER_BASE ?=

.PHONY: bench-docker
bench-docker: build ## `ccrun exec` (cold, pooled) and Run against `docker run --rm --network none`, side by side, with the ratios
	@uptime
	@CCRUN_BIN=$$(realpath $(BIN)) CCRUN_BIN_BASE=$(if $(BENCH_DOCKER_BASE),$$(realpath $(BENCH_DOCKER_BASE))) \
	$(GO) test -run '^$$' -bench 'SideBySide' -benchtime $(BENCH_DOCKER_N)x ./runtime/docker/ | \
	awk '/^BenchmarkSideBySide/ { for (i = 3; i < NF; i += 2) m[$$(i+1)] = $$i; lib = 1 } \
	     /^BenchmarkCLISideBySide/ { for (i = 3; i < NF; i += 2) c[$$(i+1)] = $$i; cli = 1 } \
	     END { if (!lib && !cli) { print "bench-docker: no figures (no docker engine?)"; exit 1 } \
	           n = "$(BENCH_DOCKER_N)"; \
	           if (cli) { printf "Whole processes, medians of %s, interleaved:\n", n; \
	             printf "  docker run --rm --network none IMG true: %7.1f ms\n", c["cli-ms"]; \
	             printf "  ccrun exec --docker IMG -- true (cold):   %7.1f ms  %.2fx (goal <= 0.9x)\n", c["cold-ms"], c["cold/cli"]; \
	             printf "  ccrun exec of a \"pool\": true capability: %7.1f ms  %.2fx (goal <= 0.15x; then its refill: %.0f ms)\n", c["pool-ms"], c["pool/cli"], c["pool-wait-ms"]; \
	             printf "  docker exec into a started container:    %7.1f ms  %.2fx (the floor of a pooled run)\n", c["exec-ms"], c["exec/cli"]; \
	             if ("base-cold-ms" in c) { \
	               printf "  $(BENCH_DOCKER_BASE), cold:  %7.1f ms  %.2fx\n", c["base-cold-ms"], c["base-cold/cli"]; \
	               printf "  $(BENCH_DOCKER_BASE), pool:  %7.1f ms  %.2fx\n", c["base-pool-ms"], c["base-pool/cli"] } } \
	           if (lib) { printf "The library (Executor.Run in one process), medians of %s, interleaved:\n", n; \
	             printf "  docker run --rm --network none: %7.1f ms\n", m["cli-ms"]; \
	             printf "  Run, cold:                      %7.1f ms  %.2fx\n", m["cold-ms"], m["cold/cli"]; \
	             printf "  Run, warm pool:                 %7.1f ms  %.2fx\n", m["pool-ms"], m["pool/cli"]; \
	             printf "    then in the background:       %7.1f ms  (refill, removal; Close waits <= 3 s)\n", m["pool-bg-ms"]; \
	             printf "  docker run, Run'"'"'s hardening:    %7.1f ms  (Run, cold: %.2fx of it)\n", m["hardened-cli-ms"], m["cold/hardened-cli"] } }'
	@uptime

bench: bench-docker
