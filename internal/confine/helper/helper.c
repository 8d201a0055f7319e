/*
 * ccrun-confine: the first program of every confined process.
 *
 * ccrun starts this program, unconfined, in the new process that will run
 * a confined command. It confines itself -- no new privileges, the
 * Landlock ruleset, the seccomp filter -- and then becomes the command by
 * execve. So the command's Landlock domain holds nothing but the command
 * and what it starts: no thread of ccrun is in it, and no confined
 * program shares an address space with anything unconfined.
 *
 * Its protocol (internal/confine, helper_linux.go, is the other side):
 *
 *   argv    ccrun-confine PATH ARGV0 ARGS...   execve(PATH, [ARGV0, ARGS...], envp)
 *   fd 3    the Landlock ruleset               landlock_restrict_self(3, 0), then closed
 *   fd 4    the seccomp program                struct sock_filter[], read at offset 0
 *                                              (the same file for every process); empty: none
 *   fd 5    the status pipe                    made close-on-exec: a successful execve
 *                                              closes it with nothing written
 *
 * On any failure it writes 8 bytes to fd 5 -- the step (u32: STEP_* below)
 * and the errno (u32), in the machine's byte order -- and exits 127; it
 * never runs the command with less confinement than it was given.
 *
 * It is freestanding (no libc): sys.h has the few system calls it makes.
 * Build it with `make confine-helper`; the embedded binaries are
 * generated from this file, and a test rebuilds them and compares.
 */
#include "sys.h"

#define PR_SET_NO_NEW_PRIVS 38
#define PR_SET_SECCOMP 22
#define SECCOMP_MODE_FILTER 2
#define F_SETFD 2
#define FD_CLOEXEC 1

#define FD_RULESET 3
#define FD_FILTER 4
#define FD_STATUS 5

enum {
	STEP_EXEC = 0,      /* execve failed: the errno is the command's (ENOENT, EACCES, ENOEXEC ...) */
	STEP_USAGE = 1,     /* too few arguments */
	STEP_NO_NEW_PRIVS = 2,
	STEP_LANDLOCK = 3,
	STEP_FILTER = 4,    /* reading the seccomp program, or a malformed one */
	STEP_SECCOMP = 5,
	STEP_STATUS = 6,    /* the status pipe could not be made close-on-exec */
};

struct sock_filter {
	unsigned short code;
	unsigned char jt, jf;
	unsigned int k;
};

struct sock_fprog {
	unsigned short len;
	struct sock_filter *filter;
};

/* BPF_MAXINSNS: the most a seccomp program may hold. */
static struct sock_filter prog[4096];

static void __attribute__((noreturn)) fail(unsigned int step, long err)
{
	unsigned int msg[2] = {step, (unsigned int)-err};
	sys_write(FD_STATUS, msg, sizeof msg);
	sys_exit_group(127);
}

void cstart(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	long r;

	if (argc < 3)
		fail(STEP_USAGE, -22 /* EINVAL */);
	if ((r = sys_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) < 0)
		fail(STEP_NO_NEW_PRIVS, r);
	if ((r = sys_landlock_restrict_self(FD_RULESET, 0)) < 0)
		fail(STEP_LANDLOCK, r);
	sys_close(FD_RULESET);

	long n = 0;
	for (;;) {
		r = sys_pread(FD_FILTER, (char *)prog + n, sizeof prog - n, n);
		if (r < 0)
			fail(STEP_FILTER, r);
		if (r == 0)
			break;
		n += r;
		if (n == sizeof prog)
			break;
	}
	sys_close(FD_FILTER);
	if (n % sizeof prog[0] != 0)
		fail(STEP_FILTER, -22 /* EINVAL */);
	if (n > 0) {
		struct sock_fprog fprog = {(unsigned short)(n / sizeof prog[0]), prog};
		if ((r = sys_prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, (long)&fprog, 0, 0)) < 0)
			fail(STEP_SECCOMP, r);
	}

	if ((r = sys_fcntl(FD_STATUS, F_SETFD, FD_CLOEXEC)) < 0)
		fail(STEP_STATUS, r);
	r = sys_execve(argv[1], argv + 2, envp);
	fail(STEP_EXEC, r);
}
