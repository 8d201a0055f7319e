//go:build ccrunfront && linux && amd64

#include "textflag.h"

// frontEntry is the ELF entry point of the front on linux/amd64 (make
// build links it with -E main.frontEntry): it runs before the Go runtime
// starts, and hands to the whole ccrun, by execve, a command that the
// front surely does not serve: argv[1] is neither version nor key, nor exec
// or check with a --shell (or --shell=...) argument before "--". The rest,
// and anything it cannot do (the path of /proc/self/exe too long, no
// ccrun-full beside it, an execve that fails), goes on to the runtime's
// own entry with the process as the kernel made it: package handoff then
// decides precisely, and says what is wrong. A Go process that execs costs
// ~3 ms here (its runtime's start, its threads); this costs the kernel's
// exec of the front and two system calls.
//
// At entry: 0(SP) argc, 8(SP) argv[0..argc-1], NULL, envp..., NULL.
TEXT ·frontEntry(SB), NOSPLIT|NOFRAME, $0
	MOVQ 0(SP), R12 // argc
	CMPQ R12, $2
	JLT  rt0
	MOVQ 16(SP), SI // argv[1]
	LEAQ lit_version<>(SB), DI
	CALL streq<>(SB)
	TESTQ AX, AX
	JNE  rt0
	MOVQ 16(SP), SI
	LEAQ lit_key<>(SB), DI
	CALL streq<>(SB)
	TESTQ AX, AX
	JNE  rt0
	MOVQ 16(SP), SI
	LEAQ lit_exec<>(SB), DI
	CALL streq<>(SB)
	TESTQ AX, AX
	JNE  scan
	MOVQ 16(SP), SI
	LEAQ lit_check<>(SB), DI
	CALL streq<>(SB)
	TESTQ AX, AX
	JNE  scan
	JMP  full

scan: // argv[2..]: a --shell before "--" goes to the runtime
	MOVQ $2, R13
next:
	CMPQ R13, R12
	JGE  full
	MOVQ 8(SP)(R13*8), SI
	LEAQ lit_dashdash<>(SB), DI
	CALL streq<>(SB)
	TESTQ AX, AX
	JNE  full
	MOVQ 8(SP)(R13*8), SI
	LEAQ lit_shell<>(SB), DI
	CALL streq<>(SB)
	TESTQ AX, AX
	JNE  rt0
	MOVQ 8(SP)(R13*8), SI
	LEAQ lit_shelleq<>(SB), DI
	CALL prefix<>(SB)
	TESTQ AX, AX
	JNE  rt0
	INCQ R13
	JMP  next

full: // readlink(/proc/self/exe) into 4096 bytes below the stack
	SUBQ $4096, SP
	LEAQ lit_procexe<>(SB), DI
	MOVQ SP, SI
	MOVQ $4080, DX // room for "ccrun-full" after the last '/'
	MOVQ $89, AX   // SYS_readlink
	SYSCALL
	CMPQ AX, $1
	JLT  restore
	CMPQ AX, $4080
	JGE  restore
	MOVQ AX, CX
back: // the last '/'
	DECQ CX
	JLT  restore
	MOVB (SP)(CX*1), BX
	CMPB BX, $0x2f
	JNE  back
	INCQ CX
	LEAQ lit_full<>(SB), SI
	LEAQ (SP)(CX*1), DI
copy: // "ccrun-full" and its NUL after it
	MOVB (SI), BX
	MOVB BX, (DI)
	INCQ SI
	INCQ DI
	TESTB BX, BX
	JNE  copy
	MOVQ 4104(SP), R14 // argv[0], kept
	MOVQ SP, 4104(SP)  // argv[0] = the path
	MOVQ SP, DI
	LEAQ 4104(SP), SI
	LEAQ 4112(SP)(R12*8), DX // envp
	MOVQ $59, AX             // SYS_execve: returns only when it failed
	SYSCALL
	MOVQ R14, 4104(SP)

restore:
	ADDQ $4096, SP

rt0:
	JMP _rt0_amd64_linux(SB)

// streq: AX = 1 when the NUL-terminated strings at SI and DI are equal.
TEXT streq<>(SB), NOSPLIT|NOFRAME, $0
	XORQ AX, AX
eqloop:
	MOVB (SI), BX
	MOVB (DI), CX
	CMPB BX, CX
	JNE  eqdone
	INCQ SI
	INCQ DI
	TESTB BX, BX
	JNE  eqloop
	MOVQ $1, AX
eqdone:
	RET

// prefix: AX = 1 when the NUL-terminated string at DI starts the one at SI.
TEXT prefix<>(SB), NOSPLIT|NOFRAME, $0
	XORQ AX, AX
preloop:
	MOVB (DI), CX
	TESTB CX, CX
	JEQ  preyes
	MOVB (SI), BX
	CMPB BX, CX
	JNE  predone
	INCQ SI
	INCQ DI
	JMP  preloop
preyes:
	MOVQ $1, AX
predone:
	RET

// "version"
DATA lit_version<>+0(SB)/8, $0x006e6f6973726576
GLOBL lit_version<>(SB), RODATA|NOPTR, $8

// "key"
DATA lit_key<>+0(SB)/8, $0x000000000079656b
GLOBL lit_key<>(SB), RODATA|NOPTR, $8

// "exec"
DATA lit_exec<>+0(SB)/8, $0x0000000063657865
GLOBL lit_exec<>(SB), RODATA|NOPTR, $8

// "check"
DATA lit_check<>+0(SB)/8, $0x0000006b63656863
GLOBL lit_check<>(SB), RODATA|NOPTR, $8

// "--"
DATA lit_dashdash<>+0(SB)/8, $0x0000000000002d2d
GLOBL lit_dashdash<>(SB), RODATA|NOPTR, $8

// "--shell"
DATA lit_shell<>+0(SB)/8, $0x006c6c6568732d2d
GLOBL lit_shell<>(SB), RODATA|NOPTR, $8

// "--shell="
DATA lit_shelleq<>+0(SB)/8, $0x3d6c6c6568732d2d
DATA lit_shelleq<>+8(SB)/8, $0x0000000000000000
GLOBL lit_shelleq<>(SB), RODATA|NOPTR, $16

// "/proc/self/exe"
DATA lit_procexe<>+0(SB)/8, $0x65732f636f72702f
DATA lit_procexe<>+8(SB)/8, $0x00006578652f666c
GLOBL lit_procexe<>(SB), RODATA|NOPTR, $16

// "ccrun-full"
DATA lit_full<>+0(SB)/8, $0x75662d6e75726363
DATA lit_full<>+8(SB)/8, $0x0000000000006c6c
GLOBL lit_full<>(SB), RODATA|NOPTR, $16
