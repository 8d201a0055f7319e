# The kernel layer (internal/confine): ccrun-confine, the freestanding C
# program that confines itself and becomes the command
# (internal/confine/helper/helper.c). Its binaries are generated files,
# committed and embedded; TestHelperBuiltFromSource rebuilds them with
# this rule and fails when they differ.

CONFINE_SRC := internal/confine/helper
CONFINE_OUT ?= internal/confine
CC_AMD64    ?= gcc
CC_ARM64    ?= aarch64-linux-gnu-gcc
# Reproducible and small: no libc, no build ID, no unwind tables, no
# stack protector (there is no libc to report to), paths made relative.
CONFINE_CFLAGS := -Os -static -nostdlib -ffreestanding -fno-builtin -fno-stack-protector \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fno-pie -no-pie \
	-ffile-prefix-map=$(abspath $(CONFINE_SRC))=. \
	-Wl,--build-id=none -Wl,-z,norelro -Wl,-z,noexecstack -Wl,--gc-sections -s \
	-Wall -Wextra -Werror

.PHONY: confine-helper
confine-helper: ## rebuild internal/confine/helper_{amd64,arm64}.bin from helper.c (gcc, gcc-aarch64-linux-gnu)
	$(CC_AMD64) $(CONFINE_CFLAGS) -fcf-protection=none -o $(CONFINE_OUT)/helper_amd64.bin $(CONFINE_SRC)/helper.c
	$(CC_ARM64) $(CONFINE_CFLAGS) -mbranch-protection=none -o $(CONFINE_OUT)/helper_arm64.bin $(CONFINE_SRC)/helper.c
