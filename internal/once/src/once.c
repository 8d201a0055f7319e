/*
 * once: the program of a pod of runtime/kube and of a pooled container of
 * runtime/docker (internal/once, once.go, is the other side).
 *
 * It serves exactly one call, read from stdin (the container's, kept open
 * across attach sessions):
 *
 *   u32 n                  little endian, 21 <= n <= 1 MiB
 *   n bytes                a 16-byte nonce, u32 argc >= 1, then argc strings
 *                          (argv) and the environment's (NAME=value), each
 *                          NUL-terminated
 *   one byte               go: sent once ccrun has read the ack
 *   frames of stdin        u32 len, len bytes; len 0 ends the call's stdin
 *
 * Once it has the request it writes an ack, the nonce and 0xffffffff, on
 * stdout and on stderr, again every 100 ms until the go byte comes (30 s
 * at most): ccrun sends the go byte only when an ack came back on each,
 * so that its sessions are known to receive all the program writes (the
 * runtime may add an attach session's output after it passes on its
 * input, and an ack before that is lost).
 *
 * It forks the program (stdin a pipe, stdout and stderr the container's;
 * its environment once's own with the request's strings added, each
 * replacing once's of the same name, as an exec into a container has it;
 * an argv[0] without a '/' looked for in that environment's PATH, or
 * docker's default PATH, as execvp does) and a copier (the frames into
 * that pipe), waits for the program, writes the nonce and the u32 wait
 * status to stdout and to stderr (the trailer ccrun looks for: in each
 * stream after all the program wrote to it), kills the copier, and reads
 * stdin until the done token comes, 0xff and the nonce: ccrun sends it
 * once both trailers came (10 s at most between reads, or the end of
 * stdin, and it goes on without it). Then it exits as the program did
 * (128+signal when it was killed): its exit ends the container, and with
 * it every process the program left. Only then: the runtime tears the
 * streams down as the container ends, and what was still on its way to
 * ccrun would be lost.
 *
 * A bad request exits 126. A program that cannot be executed exits 127,
 * and its trailer's status is then 0x7f | errno<<8 (the errno of execve,
 * sent back on a close-on-exec pipe): a wait status with 0x7f low,
 * "stopped", is one wait4 without WUNTRACED never gives.
 *
 * It is freestanding (no libc, no file opened, nothing but system calls:
 * it runs in an image that holds no program at all): sys.h has the few it
 * makes. Build it with `make once`; the embedded binaries are generated
 * from this file, and a test rebuilds them and compares.
 */
#include "sys.h"

#define ENOENT 2
#define EACCES 13
#define ENOTDIR 20

#define MAX_REQUEST 0x100000 /* the largest n: once.Max */
#define NONCE 16
#define MARK (NONCE + 4) /* the nonce, then a u32 status: the ack and the trailer */
#define ACK_STATUS 0xffffffffu
#define ACKS 300 /* 100 ms apart: 30 s */
#define BUFSIZE 0x10000 /* the copier's reads, a path being tried */
#define PATH_MAX_TRIED 0x8000 /* a PATH directory longer than this is passed by */
#define TOKEN_READ 0x8000 /* the reads of stdin while waiting for the done token */

/* PATH when the environment has none (docker's). */
static const char stdpath[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

static void __attribute__((noreturn)) fail(void) { sys_exit_group(126); }

/* readfull reads n bytes of stdin into p: 0, or -1 at its end or an error. */
static int readfull(char *p, long n)
{
	while (n > 0) {
		long r = sys_read(0, p, n);
		if (r <= 0)
			return -1;
		p += r;
		n -= r;
	}
	return 0;
}

/* writemark writes the nonce and status (buf, MARK bytes) to stdout and stderr. */
static void writemark(const char *buf)
{
	sys_write(1, buf, MARK);
	sys_write(2, buf, MARK);
}

/* samename reports whether the environment entries a and b name the same variable. */
static int samename(const char *a, const char *b)
{
	for (; *a == *b; a++, b++) {
		if (*a == '=')
			return 1;
		if (*a == 0)
			return 0;
	}
	return 0;
}

/*
 * program becomes argv[0] (in the child): execve it, or each of the PATH
 * directories of env in turn, as execvp does. It returns only when that
 * failed, with the negative errno: EACCES when a candidate was found but
 * not executable and nothing else was, ENOENT when nothing was found.
 */
static long program(char **argv, char **env, char *buf)
{
	const char *name = argv[0], *p;
	for (p = name; *p; p++)
		if (*p == '/')
			return sys_execve(name, argv, env);
	const char *dirs = stdpath;
	for (char **e = env; *e; e++) {
		const char *s = *e;
		if (s[0] == 'P' && s[1] == 'A' && s[2] == 'T' && s[3] == 'H' && s[4] == '=') {
			dirs = s + 5;
			break;
		}
	}
	int eacces = 0;
	for (;;) {
		/* The directory, up to ':' or the end: an empty one is the working one. */
		char *d = buf;
		char c;
		int skip = 0;
		while ((c = *dirs) != 0) {
			dirs++;
			if (c == ':')
				break;
			if (d == buf + PATH_MAX_TRIED) {
				skip = 1; /* too long: the next directory */
				continue;
			}
			*d++ = c;
		}
		if (!skip) {
			if (d != buf)
				*d++ = '/';
			const char *n = name;
			do {
				*d++ = *n;
				if (d >= buf + BUFSIZE - 1) {
					skip = 1; /* too long to try */
					break;
				}
			} while (*n++);
		}
		if (!skip) {
			long r = sys_execve(buf, argv, env);
			if (r == -EACCES)
				eacces = 1; /* go on, and say so if nothing else is found */
			else if (r != -ENOENT && r != -ENOTDIR)
				return r;
		}
		if (c == 0)
			return eacces ? -EACCES : -ENOENT;
	}
}

/* copier passes the frames of stdin into the program's pipe w, to the end frame. */
static void __attribute__((noreturn)) copier(int w, char *buf)
{
	unsigned int left;
	while (readfull((char *)&left, 4) == 0 && left != 0) {
		while (left > 0) {
			long r = sys_read(0, buf, left < BUFSIZE ? left : BUFSIZE);
			if (r <= 0)
				sys_exit_group(0);
			left -= (unsigned int)r;
			/* A closed pipe: SIGPIPE ends the copier. */
			for (char *p = buf; r > 0;) {
				long k = sys_write(w, p, r);
				if (k <= 0)
					sys_exit_group(0);
				p += k;
				r -= k;
			}
		}
	}
	sys_exit_group(0);
}

/* awaittoken reads stdin until the done token: 0xff, then the nonce. */
static void awaittoken(const char *nonce, char *buf)
{
	int matched = 0; /* how much of the token matched */
	for (;;) {
		if (sys_pollin(0, 10000) <= 0)
			return; /* nothing came for 10 s, or poll failed: exit anyway */
		long r = sys_read(0, buf, TOKEN_READ);
		if (r <= 0)
			return; /* the end of stdin, or an error */
		/* The nonce is hex, with no 0xff in it: a plain match cannot miss the token. */
		for (long i = 0; i < r; i++) {
			unsigned char c = (unsigned char)buf[i];
			if (matched > 0 && c == (unsigned char)nonce[matched - 1]) {
				if (++matched == 1 + NONCE)
					return;
			} else
				matched = c == 0xff;
		}
	}
}

void cstart(long *sp)
{
	long argc = sp[0];
	char **envp = (char **)(sp + argc + 2);
	unsigned int n;

	if (readfull((char *)&n, 4) != 0 || n < MARK + 1 || n > MAX_REQUEST)
		fail();
	long own = 0; /* the strings of once's own environment */
	while (envp[own])
		own++;
	/*
	 * One mapping: the buffer (the marks, a copy of stdin, a path being
	 * tried), the request, a zero pad that ends its last string, and the
	 * pointers to its strings (n at most) and to once's own environment.
	 */
	long size = BUFSIZE + n + 24 + 8 * ((long)n + own + 4);
	long m = sys_mmap(size);
	if (m < 0 && m > -4096)
		fail();
	char *buf = (char *)m;
	char *req = buf + BUFSIZE;
	if (readfull(req, n) != 0)
		fail();
	char **argv = (char **)(((unsigned long)req + n + 23) & ~7ul);

	/* A pointer to each string: argc of argv, then the environment's. */
	unsigned int left = *(unsigned int *)(req + NONCE);
	if (left == 0)
		fail(); /* no program */
	char *p = req + NONCE + 4, *end = req + n;
	char **out = argv, **env = 0;
	while (p < end) {
		if (left == 0 && env == 0) {
			*out++ = 0; /* argv ends; the environment begins */
			env = out;
		}
		*out++ = p;
		if (left > 0)
			left--;
		while (p < end && *p++ != 0)
			;
	}
	if (left != 0)
		fail(); /* fewer strings than argc */
	if (env == 0) {
		*out++ = 0; /* the request has no environment */
		env = out;
	}
	/* Then once's own environment, but the names the request gives. */
	char **given = out;
	for (long i = 0; i < own; i++) {
		char **g;
		for (g = env; g < given; g++)
			if (samename(*g, envp[i]))
				break;
		if (g == given)
			*out++ = envp[i];
	}
	*out = 0;

	/* The ack: the nonce, then 0xffffffff, until the go byte comes. */
	for (int i = 0; i < NONCE; i++)
		buf[i] = req[i];
	unsigned int *status = (unsigned int *)(buf + NONCE);
	*status = ACK_STATUS;
	for (int acks = ACKS;; acks--) {
		if (acks == 0)
			fail();
		writemark(buf);
		/* 100 ms, then ack again: a session that was not yet receiving the output gets the next one. */
		long r = sys_pollin(0, 100);
		if (r < 0)
			fail();
		if (r > 0)
			break;
	}
	char go;
	if (readfull(&go, 1) != 0)
		fail();

	int in[2], ep[2]; /* the program's stdin; the errno pipe, which ends at its execve */
	if (sys_pipe2(in, 0) != 0 || sys_pipe2(ep, O_CLOEXEC) != 0)
		fail();
	long pid = sys_fork();
	if (pid < 0)
		fail();
	if (pid == 0) {
		sys_dup3(in[0], 0);
		sys_close(in[0]);
		sys_close(in[1]);
		int err = (int)-program(argv, env, buf);
		sys_write(ep[1], &err, 4); /* it failed: its errno to once */
		sys_exit_group(127);
	}
	sys_close(ep[1]); /* the errno pipe's write end is the program's alone */
	long cpid = sys_fork();
	if (cpid < 0)
		fail();
	if (cpid == 0) {
		sys_close(in[0]);
		copier(in[1], buf);
	}
	sys_close(in[0]);
	sys_close(in[1]);
	int err = 0;
	sys_read(ep[0], &err, 4); /* execve's errno, or the end of the pipe: it ran */
	if (sys_wait4(pid, (int *)status) < 0)
		fail();
	if (err != 0)
		*status = 0x7f | (unsigned int)err << 8; /* not executed */

	/* The trailer (the nonce still there, then the status), after all the program wrote. */
	writemark(buf);
	sys_kill(cpid, SIGKILL); /* the copier's frames are of no use now */
	sys_wait4(cpid, 0);
	awaittoken(buf, buf + 64);

	unsigned int ws = *status;
	if ((ws & 0xff) == 0x7f)
		sys_exit_group(127); /* not executed */
	if (ws & 0x7f)
		sys_exit_group(128 + (int)(ws & 0x7f)); /* the signal that killed it */
	sys_exit_group((int)(ws >> 8) & 0xff);
}
