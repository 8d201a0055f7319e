# relay (runtime/docker/internal/relay/src/relay.c): the program of the
# container that stands for the egress proxy for @docker calls, in a
# network namespace of loopback only that a call's container joins.
# Freestanding C like once (mk/once.mk: the same flags), built
# for each architecture an engine may run; the binaries are generated
# files, committed and embedded, and TestBuiltFromSource
# (runtime/docker/internal/relay) rebuilds them and fails when they differ.

RELAY_SRC := runtime/docker/internal/relay/src
RELAY_OUT ?= runtime/docker/internal/relay

.PHONY: relay
relay: ## rebuild relay, runtime/docker/internal/relay/relay_{amd64,arm64}.bin (gcc, gcc-aarch64-linux-gnu)
	$(CC_AMD64) $(ONCE_CFLAGS) -fcf-protection=none -o $(RELAY_OUT)/relay_amd64.bin $(RELAY_SRC)/relay.c
	$(CC_ARM64) $(ONCE_CFLAGS) -mbranch-protection=none -o $(RELAY_OUT)/relay_arm64.bin $(RELAY_SRC)/relay.c
