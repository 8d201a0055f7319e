# The programs ccrun runs in the containers it makes in advance: once
# (internal/once/src/once.c), the program of every pod and of every pooled
# @docker container, which serves one call; and hold
# (internal/ctr/hold/hold.c), which keeps a pod's copy container
# started. Freestanding C, built for each architecture an engine may run
# (the engine's, not ccrun's: an amd64 laptop may drive arm64 nodes).
# Their binaries are generated files, committed and embedded;
# TestBuiltFromSource (internal/once) rebuilds them with this rule and
# fails when they differ.

ONCE_SRC := internal/once/src
ONCE_OUT ?= internal/once
HOLD_SRC := internal/ctr/hold
HOLD_OUT ?= internal/ctr
CC_AMD64 ?= gcc
CC_ARM64 ?= aarch64-linux-gnu-gcc
# Reproducible and small (a few KB: they travel in a ConfigMap): no libc,
# no build ID, no unwind tables, no stack protector (there is no libc to
# report to), no compiler note, one read-execute segment (no separate
# code pages).
ONCE_CFLAGS := -Os -static -nostdlib -ffreestanding -fno-builtin -fno-stack-protector \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fno-pie -no-pie -fno-ident \
	-Wl,--build-id=none -Wl,-z,norelro -Wl,-z,noexecstack -Wl,-z,noseparate-code -Wl,--gc-sections -s \
	-Wall -Wextra -Werror

.PHONY: once
once: ## rebuild once and hold, internal/once/once_{amd64,arm64}.bin and internal/ctr/hold_{amd64,arm64}.bin (gcc, gcc-aarch64-linux-gnu)
	$(CC_AMD64) $(ONCE_CFLAGS) -fcf-protection=none -o $(ONCE_OUT)/once_amd64.bin $(ONCE_SRC)/once.c
	$(CC_ARM64) $(ONCE_CFLAGS) -mbranch-protection=none -o $(ONCE_OUT)/once_arm64.bin $(ONCE_SRC)/once.c
	$(CC_AMD64) $(ONCE_CFLAGS) -fcf-protection=none -o $(HOLD_OUT)/hold_amd64.bin $(HOLD_SRC)/hold.c
	$(CC_ARM64) $(ONCE_CFLAGS) -mbranch-protection=none -o $(HOLD_OUT)/hold_arm64.bin $(HOLD_SRC)/hold.c
