/*
 * The system calls helper.c makes, for x86-64 and AArch64 (the entry and
 * syscall6 are internal/cbuild/syscall.h's). Each returns the kernel's
 * result: a negative errno on failure.
 */
#ifndef CCRUN_CONFINE_SYS_H
#define CCRUN_CONFINE_SYS_H

#include "../../cbuild/syscall.h"

static inline long syscall5(long nr, long a, long b, long c, long d, long e) { return syscall6(nr, a, b, c, d, e, 0); }

#if defined(__x86_64__)

#define NR_pread 17
#define NR_read 0
#define NR_write 1
#define NR_close 3
#define NR_fcntl 72
#define NR_prctl 157
#define NR_execve 59
#define NR_exit_group 231
#define NR_landlock_restrict_self 446
#define NR_openat 257
#define NR_getuid 102
#define NR_getgid 104
#define NR_unshare 272
#define NR_mount 165
#define NR_getcwd 79
#define NR_chdir 80
#define NR_setns 308
#define NR_capget 125
#define NR_capset 126
#define NR_socket 41
#define NR_bind 49
#define NR_listen 50
#define NR_ioctl 16
#define NR_sendmsg 46

#elif defined(__aarch64__)

#define NR_pread 67
#define NR_read 63
#define NR_write 64
#define NR_close 57
#define NR_fcntl 25
#define NR_prctl 167
#define NR_execve 221
#define NR_exit_group 94
#define NR_landlock_restrict_self 446
#define NR_openat 56
#define NR_getuid 174
#define NR_getgid 176
#define NR_unshare 97
#define NR_mount 40
#define NR_getcwd 17
#define NR_chdir 49
#define NR_setns 268
#define NR_capget 90
#define NR_capset 91
#define NR_socket 198
#define NR_bind 200
#define NR_listen 201
#define NR_ioctl 29
#define NR_sendmsg 211

#endif

/* The same numbers on both: the system calls added since Linux 5.2. */
#define NR_open_tree 428
#define NR_move_mount 429
#define NR_openat2 437
#define NR_mount_setattr 442

static inline long sys_pread(int fd, void *buf, long n, long off) { return syscall5(NR_pread, fd, (long)buf, n, off, 0); }
static inline long sys_read(int fd, void *buf, long n) { return syscall5(NR_read, fd, (long)buf, n, 0, 0); }
static inline long sys_write(int fd, const void *buf, long n) { return syscall5(NR_write, fd, (long)buf, n, 0, 0); }
static inline long sys_close(int fd) { return syscall5(NR_close, fd, 0, 0, 0, 0); }
static inline long sys_fcntl(int fd, int cmd, long arg) { return syscall5(NR_fcntl, fd, cmd, arg, 0, 0); }
static inline long sys_prctl(int op, long a, long b, long c, long d) { return syscall5(NR_prctl, op, a, b, c, d); }
static inline long sys_execve(const char *path, char **argv, char **envp)
{
	return syscall5(NR_execve, (long)path, (long)argv, (long)envp, 0, 0);
}
static inline long sys_landlock_restrict_self(int fd, int flags) { return syscall5(NR_landlock_restrict_self, fd, flags, 0, 0, 0); }
static inline long sys_openat(int dfd, const char *path, int flags, int mode) { return syscall5(NR_openat, dfd, (long)path, flags, mode, 0); }
static inline long sys_openat2(int dfd, const char *path, void *how, long size) { return syscall5(NR_openat2, dfd, (long)path, (long)how, size, 0); }
static inline long sys_getuid(void) { return syscall5(NR_getuid, 0, 0, 0, 0, 0); }
static inline long sys_getgid(void) { return syscall5(NR_getgid, 0, 0, 0, 0, 0); }
static inline long sys_unshare(long flags) { return syscall5(NR_unshare, flags, 0, 0, 0, 0); }
static inline long sys_getcwd(char *buf, long size) { return syscall5(NR_getcwd, (long)buf, size, 0, 0, 0); }
static inline long sys_chdir(const char *path) { return syscall5(NR_chdir, (long)path, 0, 0, 0, 0); }
static inline long sys_mount(const char *src, const char *target, const char *type, long flags, const void *data)
{
	return syscall5(NR_mount, (long)src, (long)target, (long)type, flags, (long)data);
}
static inline long sys_open_tree(int dfd, const char *path, long flags) { return syscall5(NR_open_tree, dfd, (long)path, flags, 0, 0); }
static inline long sys_move_mount(int from, const char *fpath, int to, const char *tpath, long flags)
{
	return syscall5(NR_move_mount, from, (long)fpath, to, (long)tpath, flags);
}
static inline long sys_mount_setattr(int dfd, const char *path, long flags, void *attr, long size)
{
	return syscall5(NR_mount_setattr, dfd, (long)path, flags, (long)attr, size);
}
static inline long sys_setns(int fd, long type) { return syscall5(NR_setns, fd, type, 0, 0, 0); }
static inline long sys_capget(void *hdr, void *data) { return syscall5(NR_capget, (long)hdr, (long)data, 0, 0, 0); }
static inline long sys_capset(void *hdr, const void *data) { return syscall5(NR_capset, (long)hdr, (long)data, 0, 0, 0); }
static inline long sys_socket(int domain, int type, int proto) { return syscall5(NR_socket, domain, type, proto, 0, 0); }
static inline long sys_bind(int fd, const void *addr, long len) { return syscall5(NR_bind, fd, (long)addr, len, 0, 0); }
static inline long sys_listen(int fd, int backlog) { return syscall5(NR_listen, fd, backlog, 0, 0, 0); }
static inline long sys_ioctl(int fd, unsigned long req, void *arg) { return syscall5(NR_ioctl, fd, (long)req, (long)arg, 0, 0); }
static inline long sys_sendmsg(int fd, const void *msg, int flags) { return syscall5(NR_sendmsg, fd, (long)msg, flags, 0, 0); }
static inline void __attribute__((noreturn)) sys_exit_group(int code)
{
	for (;;)
		syscall5(NR_exit_group, code, 0, 0, 0, 0);
}

#endif
