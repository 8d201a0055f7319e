/*
 * The system calls relay.c makes, for x86-64 and AArch64 (the entry and
 * syscall6 are internal/cbuild/syscall.h's). Each returns the kernel's
 * result: a negative errno on failure.
 */
#ifndef CCRUN_RELAY_SYS_H
#define CCRUN_RELAY_SYS_H

#include "../../../../../internal/cbuild/syscall.h"

#if defined(__x86_64__)

#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_rt_sigaction 13
#define NR_socket 41
#define NR_connect 42
#define NR_shutdown 48
#define NR_bind 49
#define NR_listen 50
#define NR_setsockopt 54
#define NR_clone 56
#define NR_wait4 61
#define NR_kill 62
#define NR_ppoll 271
#define NR_accept4 288
#define NR_exit_group 231

#elif defined(__aarch64__)

#define NR_read 63
#define NR_write 64
#define NR_close 57
#define NR_rt_sigaction 134
#define NR_socket 198
#define NR_bind 200
#define NR_listen 201
#define NR_connect 203
#define NR_setsockopt 208
#define NR_shutdown 210
#define NR_clone 220
#define NR_wait4 260
#define NR_kill 129
#define NR_accept4 242
#define NR_ppoll 73
#define NR_exit_group 94

#endif

#define EINTR 4
#define ECHILD 10
#define SIGKILL 9
#define SIGCHLD 17
#define SIG_IGN 1
#define AF_UNIX 1
#define AF_INET 2
#define SOCK_STREAM 1
#define SOCK_CLOEXEC 02000000
#define SOL_SOCKET 1
#define SO_REUSEADDR 2
#define SHUT_WR 1
#define POLLIN 1

struct pollfd {
	int fd;
	short events, revents;
};

struct sockaddr_in {
	unsigned short family, port; /* port in network order */
	unsigned int addr;
	char zero[8];
};

struct sockaddr_un {
	unsigned short family;
	char path[108];
};

struct ksigaction {
	long handler;
	unsigned long flags;
	long restorer;
	unsigned long mask;
};

static inline long sys_read(int fd, void *buf, long n) { return syscall6(NR_read, fd, (long)buf, n, 0, 0, 0); }
static inline long sys_write(int fd, const void *buf, long n) { return syscall6(NR_write, fd, (long)buf, n, 0, 0, 0); }
static inline long sys_close(int fd) { return syscall6(NR_close, fd, 0, 0, 0, 0, 0); }
static inline long sys_rt_sigaction(int sig, const struct ksigaction *a)
{
	return syscall6(NR_rt_sigaction, sig, (long)a, 0, sizeof(unsigned long), 0, 0);
}
static inline long sys_socket(int family, int type) { return syscall6(NR_socket, family, type, 0, 0, 0, 0); }
static inline long sys_connect(int fd, const void *a, long n) { return syscall6(NR_connect, fd, (long)a, n, 0, 0, 0); }
static inline long sys_bind(int fd, const void *a, long n) { return syscall6(NR_bind, fd, (long)a, n, 0, 0, 0); }
static inline long sys_listen(int fd, int backlog) { return syscall6(NR_listen, fd, backlog, 0, 0, 0, 0); }
static inline long sys_accept4(int fd, int flags) { return syscall6(NR_accept4, fd, 0, 0, flags, 0, 0); }
static inline long sys_shutdown(int fd, int how) { return syscall6(NR_shutdown, fd, how, 0, 0, 0, 0); }
static inline long sys_setsockopt(int fd, int level, int name, const void *v, long n)
{
	return syscall6(NR_setsockopt, fd, level, name, (long)v, n, 0);
}
/* ppoll(2) of n fds, no timeout. */
static inline long sys_ppoll(struct pollfd *p, long n) { return syscall6(NR_ppoll, (long)p, n, 0, 0, 0, 0); }
/* fork(2): a child with a copy of the address space, SIGCHLD at its end. */
static inline long sys_fork(void) { return syscall6(NR_clone, SIGCHLD, 0, 0, 0, 0, 0); }
/* kill(2); pid -1: every process of the PID namespace but the caller and init. */
static inline long sys_kill(long pid, int sig) { return syscall6(NR_kill, pid, sig, 0, 0, 0, 0); }
/* wait4(2) of any child, no status wanted. */
static inline long sys_wait_any(void) { return syscall6(NR_wait4, -1, 0, 0, 0, 0, 0); }
static inline void __attribute__((noreturn)) sys_exit_group(int code)
{
	for (;;)
		syscall6(NR_exit_group, code, 0, 0, 0, 0, 0);
}

#endif
