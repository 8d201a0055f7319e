/*
 * The system calls once.c makes, for x86-64 and AArch64 (the entry and
 * syscall6 are internal/cbuild/syscall.h's). Each returns the kernel's
 * result: a negative errno on failure. AArch64 has no poll,
 * fork, pipe or dup2: ppoll, clone, pipe2 and dup3 do their work on both.
 */
#ifndef CCRUN_ONCE_SYS_H
#define CCRUN_ONCE_SYS_H

#include "../../cbuild/syscall.h"

#if defined(__x86_64__)

#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_mmap 9
#define NR_dup3 292
#define NR_pipe2 293
#define NR_ppoll 271
#define NR_clone 56
#define NR_execve 59
#define NR_wait4 61
#define NR_kill 62
#define NR_exit_group 231

#elif defined(__aarch64__)

#define NR_read 63
#define NR_write 64
#define NR_close 57
#define NR_mmap 222
#define NR_dup3 24
#define NR_pipe2 59
#define NR_ppoll 73
#define NR_clone 220
#define NR_execve 221
#define NR_wait4 260
#define NR_kill 129
#define NR_exit_group 94

#endif

#define SIGCHLD 17
#define SIGKILL 9
#define O_CLOEXEC 02000000
#define POLLIN 1
#define PROT_READ 1
#define PROT_WRITE 2
#define MAP_PRIVATE 2
#define MAP_ANONYMOUS 0x20

struct pollfd {
	int fd;
	short events, revents;
};

struct timespec {
	long sec, nsec;
};

static inline long sys_read(int fd, void *buf, long n) { return syscall6(NR_read, fd, (long)buf, n, 0, 0, 0); }
static inline long sys_write(int fd, const void *buf, long n) { return syscall6(NR_write, fd, (long)buf, n, 0, 0, 0); }
static inline long sys_close(int fd) { return syscall6(NR_close, fd, 0, 0, 0, 0, 0); }
static inline long sys_mmap(long size)
{
	return syscall6(NR_mmap, 0, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}
static inline long sys_dup3(int from, int to) { return syscall6(NR_dup3, from, to, 0, 0, 0, 0); }
static inline long sys_pipe2(int fds[2], int flags) { return syscall6(NR_pipe2, (long)fds, flags, 0, 0, 0, 0); }
/* poll(2) of fd for input, ms milliseconds at most. */
static inline long sys_pollin(int fd, long ms)
{
	struct pollfd p = {fd, POLLIN, 0};
	struct timespec t = {ms / 1000, ms % 1000 * 1000000};
	return syscall6(NR_ppoll, (long)&p, 1, (long)&t, 0, 0, 0);
}
/* fork(2): a child with a copy of the address space, SIGCHLD at its end. */
static inline long sys_fork(void) { return syscall6(NR_clone, SIGCHLD, 0, 0, 0, 0, 0); }
static inline long sys_execve(const char *path, char **argv, char **envp)
{
	return syscall6(NR_execve, (long)path, (long)argv, (long)envp, 0, 0, 0);
}
static inline long sys_wait4(long pid, int *status) { return syscall6(NR_wait4, pid, (long)status, 0, 0, 0, 0); }
static inline long sys_kill(long pid, int sig) { return syscall6(NR_kill, pid, sig, 0, 0, 0, 0); }
static inline void __attribute__((noreturn)) sys_exit_group(int code)
{
	for (;;)
		syscall6(NR_exit_group, code, 0, 0, 0, 0, 0);
}

#endif
