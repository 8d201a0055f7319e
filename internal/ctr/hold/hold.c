/*
 * hold: the program that keeps a container started without running
 * anything of its image's (the copy container of a Kubernetes pod whose
 * mounts are copied, into which tar is exec'd; internal/ctr,
 * hold.go, embeds it). It blocks in ppoll(2), waiting on nothing for
 * ever, until a signal ends it: it handles none, so SIGTERM does. It
 * reads nothing, writes nothing, opens nothing and needs no library, so
 * it runs in any image (one that holds no program at all too).
 *
 * It is freestanding (no libc, one system call, no writable data). Build
 * it with `make once` (mk/once.mk); the embedded binaries are generated
 * from this file, and a test rebuilds them and compares.
 */
#if defined(__x86_64__)

#define NR_ppoll 271

static inline void ppoll_nothing(void)
{
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(NR_ppoll), "D"(0L), "S"(0L), "d"(0L), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	(void)ret;
}

#elif defined(__aarch64__)

#define NR_ppoll 73

static inline void ppoll_nothing(void)
{
	register long x8 __asm__("x8") = NR_ppoll;
	register long x0 __asm__("x0") = 0;
	register long x1 __asm__("x1") = 0;
	register long x2 __asm__("x2") = 0;
	register long x3 __asm__("x3") = 0;
	register long x4 __asm__("x4") = 0;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4)
			 : "memory", "cc");
}

#else
#error "hold: only x86-64 and AArch64"
#endif

void _start(void) __attribute__((noreturn));

/* No file descriptors, no timeout: ppoll returns only for a signal. */
void _start(void)
{
	for (;;)
		ppoll_nothing();
}
