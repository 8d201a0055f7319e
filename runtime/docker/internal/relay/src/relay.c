/*
 * relay: the program of the container that stands, for @docker calls run
 * behind ccrun's egress proxy, for the proxy: the container has no network
 * but its loopback, and a call's container joins that network namespace.
 * It listens on TCP port argv[1] and hands every connection, byte for
 * byte, to the unix socket argv[2] (in a directory of the host bound into
 * the container read-only, where ccrun links the socket of the proxy of
 * the call the relay serves, and nothing between calls), one process a
 * connection. It decides nothing: the proxy checks every destination.
 *
 * "ready\n" on stdout says it listens. A byte on stdin resets it for the
 * next call: every connection process is killed and reaped, the listener
 * closed (which drops any connection not yet accepted) and made again,
 * then "ready\n" again. The end of stdin (ccrun closed it, or ended) ends
 * it. It must be PID 1 of its PID namespace (no init): kill(-1) then
 * reaches its children only. Freestanding (no libc):
 * internal/cbuild/syscall.h's entry.
 */
#include "sys.h"

/* The compiler may call these for a struct's copy or zeroing. */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) void *memcpy(void *d, const void *s, unsigned long n)
{
	char *dp = d;
	const char *sp = s;
	while (n--)
		*dp++ = *sp++;
	return d;
}

__attribute__((optimize("no-tree-loop-distribute-patterns"))) void *memset(void *d, int c, unsigned long n)
{
	char *dp = d;
	while (n--)
		*dp++ = (char)c;
	return d;
}

static long len(const char *s)
{
	long n = 0;
	while (s[n])
		n++;
	return n;
}

static int writeall(int fd, const char *p, long n)
{
	while (n > 0) {
		long w = sys_write(fd, p, n);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= w;
	}
	return 0;
}

static void __attribute__((noreturn)) fail(const char *what)
{
	writeall(2, "relay: ", 7);
	writeall(2, what, len(what));
	writeall(2, "\n", 1);
	sys_exit_group(1);
}

/* pump copies a to b and b to a until both ends said EOF. */
static void pump(int a, int b)
{
	char buf[32768]; /* on the stack: the program has no writable segment */
	struct pollfd p[2];
	int open = 3; /* bit 0: a to b, bit 1: b to a */
	while (open) {
		p[0].fd = (open & 1) ? a : -1;
		p[1].fd = (open & 2) ? b : -1;
		p[0].events = p[1].events = POLLIN;
		p[0].revents = p[1].revents = 0;
		long r = sys_ppoll(p, 2);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return;
		for (int i = 0; i < 2; i++) {
			if (!p[i].revents)
				continue;
			int from = i ? b : a, to = i ? a : b;
			long n = sys_read(from, buf, sizeof buf);
			if (n == -EINTR)
				continue;
			if (n <= 0) {
				sys_shutdown(to, SHUT_WR);
				open &= ~(1 << i);
				continue;
			}
			if (writeall(to, buf, n) < 0)
				return;
		}
	}
}

/* listener listens on port of every address the container has. */
static int listener(long port)
{
	int s = sys_socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC);
	if (s < 0)
		fail("socket");
	int one = 1;
	sys_setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in in = {AF_INET, (unsigned short)((port >> 8) | ((port & 0xff) << 8)), 0, {0}};
	if (sys_bind(s, &in, sizeof in) < 0)
		fail("bind");
	if (sys_listen(s, 128) < 0)
		fail("listen");
	return s;
}

void cstart(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	if (argc != 3)
		fail("usage: relay PORT SOCKET");
	long port = 0;
	for (const char *c = argv[1]; *c; c++) {
		if (*c < '0' || *c > '9' || (port = port * 10 + (*c - '0')) > 65535)
			fail("PORT: want 1-65535");
	}
	struct sockaddr_un un = {AF_UNIX, {0}};
	long pl = len(argv[2]);
	if (port == 0 || pl == 0 || pl >= (long)sizeof un.path)
		fail("SOCKET: want a path shorter than 108 bytes");
	for (long i = 0; i < pl; i++)
		un.path[i] = argv[2][i];

	struct ksigaction ign = {SIG_IGN, 0, 0, 0};
	sys_rt_sigaction(SIGCHLD, &ign); /* children reaped by the kernel */
	int s = listener(port);
	writeall(1, "ready\n", 6);
	for (;;) {
		struct pollfd p[2] = {{s, POLLIN, 0}, {0, POLLIN, 0}};
		long r = sys_ppoll(p, 2);
		if (r == -EINTR)
			continue;
		if (r < 0)
			fail("ppoll");
		if (p[1].revents) {
			char cmd[64];
			long n = sys_read(0, cmd, sizeof cmd);
			if (n == -EINTR)
				continue;
			if (n <= 0)
				sys_exit_group(0); /* ccrun is done with it */
			/* Reset: no process, no connection of the last call is
			 * left. With SIGCHLD ignored, wait4 returns ECHILD once
			 * every child has ended. */
			sys_kill(-1, SIGKILL);
			while (sys_wait_any() != -ECHILD)
				;
			sys_close(s);
			s = listener(port);
			writeall(1, "ready\n", 6);
			continue;
		}
		if (!p[0].revents)
			continue;
		long c = sys_accept4(s, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		long pid = sys_fork();
		if (pid == 0) {
			sys_close(s);
			int u = sys_socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC);
			if (u < 0 || sys_connect(u, &un, sizeof un) < 0)
				sys_exit_group(1);
			pump((int)c, u);
			sys_exit_group(0);
		}
		sys_close((int)c);
	}
}
