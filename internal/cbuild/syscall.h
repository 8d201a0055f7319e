/*
 * What ccrun's freestanding C programs share (internal/once/src/once.c,
 * internal/confine/helper/helper.c): the system call entry for x86-64
 * and AArch64 and the program's entry point, which calls
 * cstart(long *sp) with the stack pointer at argc. No libc: a call
 * returns the kernel's result, a negative errno on failure. Each
 * program's own sys.h includes this first, then names the system calls
 * it makes (their numbers differ by architecture).
 */
#ifndef CCRUN_CBUILD_SYSCALL_H
#define CCRUN_CBUILD_SYSCALL_H

void cstart(long *sp) __attribute__((noreturn, used));

#if defined(__x86_64__)

static inline long syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The stack pointer is argc's address: pass it, aligned for the call. */
__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call cstart\n"
	"	hlt\n");

#elif defined(__aarch64__)

static inline long syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
}

__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov x0, sp\n"
	"	bl cstart\n"
	"	brk #0\n");

#else
#error "ccrun's C programs: only x86-64 and AArch64"
#endif

#endif
