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
 *           (argv[0] ccrun-confine-log: the same, and Landlock logs the
 *           command's denials to the audit subsystem: ABI 7's
 *           LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON, off by default)
 *   fd 3    the Landlock ruleset               landlock_restrict_self(3, flags), then closed
 *   fd 4    the seccomp program                struct sock_filter[], read at offset 0
 *                                              (the same file for every process); empty: none
 *   fd 5    the status pipe                    made close-on-exec: a successful execve
 *                                              closes it with nothing written
 *   fd 6    the mounts                         entries of a letter and an absolute path,
 *                                              each ended by a NUL, read at offset 0;
 *                                              empty: none
 *
 * With mounts it first enters a mount namespace of its own (and, unless
 * it is root, a user namespace mapping only its own uid and gid), makes
 * every mount private to it, and for each entry:
 *
 *   r PATH  binds PATH read-only over itself: a write into it, a rename
 *           over or away, an unlink or a hard link fail (EROFS, EBUSY,
 *           EXDEV), and so does a new name in a protected directory;
 *   p PATH  pins PATH: binds it over itself as it is (writable), so that
 *           it cannot be renamed away or removed (EBUSY): the directories
 *           a protected path lies in (.git);
 *   h PATH  hides PATH: binds an empty read-only file (/dev/null) over a
 *           file, or the empty directory of the last e entry over a
 *           directory;
 *   e PATH  names the empty directory that h binds over directories.
 *
 * Each PATH of r and h is opened with no symbolic link anywhere in it
 * (RESOLVE_NO_SYMLINKS): one that is, or lies under, a link fails the
 * start, since the link could be swapped. The binds are made before
 * landlock_restrict_self, after which no mount can change. The working
 * directory is then entered again by its path: the one it was started in
 * names the directory as it was before the binds, and at or beneath a
 * bound one (.git, .git/hooks) it would be the directory they cover,
 * writable. A working directory that has no path (removed) fails the
 * start.
 *
 * Started as "ccrun-confine '' ''" with mounts, it is the anchor of a run's
 * mount namespace: it makes the namespace as above, closes fd 5 (nothing
 * written: ready), and waits until its stdin ends, while ccrun opens
 * /proc/PID/root and /proc/PID/ns/mnt, through which the files a confined
 * script itself opens are reached in that namespace. It runs nothing.
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
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON 2

#define FD_RULESET 3
#define FD_FILTER 4
#define FD_STATUS 5
#define FD_MOUNTS 6

#define O_WRONLY 01
#define O_PATH 010000000
#define O_DIRECTORY 0200000
#define ENOTDIR 20
#define O_CLOEXEC 02000000
#define CLONE_NEWNS 0x00020000
#define CLONE_NEWUSER 0x10000000
#define MS_REC 16384
#define MS_PRIVATE (1 << 18)
#define AT_FDCWD -100
#define AT_EMPTY_PATH 0x1000
#define OPEN_TREE_CLONE 1
#define MOVE_MOUNT_F_EMPTY_PATH 0x4
#define MOVE_MOUNT_T_EMPTY_PATH 0x40
#define MOUNT_ATTR_RDONLY 0x1
#define MOUNT_ATTR_NOSUID 0x2
#define MOUNT_ATTR_NODEV 0x4
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04

enum {
	STEP_EXEC = 0,      /* execve failed: the errno is the command's (ENOENT, EACCES, ENOEXEC ...) */
	STEP_USAGE = 1,     /* too few arguments */
	STEP_NO_NEW_PRIVS = 2,
	STEP_LANDLOCK = 3,
	STEP_FILTER = 4,    /* reading the seccomp program, or a malformed one */
	STEP_SECCOMP = 5,
	STEP_STATUS = 6,    /* the status pipe could not be made close-on-exec */
	STEP_MOUNT_LIST = 7, /* reading the mounts, or a malformed list */
	STEP_UNSHARE = 8,   /* the mount (and user) namespace */
	STEP_IDMAP = 9,     /* the user namespace's uid and gid maps */
	STEP_PRIVATE = 10,  /* making the mounts private */
	STEP_PROTECT = 11,  /* an r or h path: opened with no link, bound read-only */
	STEP_CWD = 12,      /* the working directory, entered again by its path after the binds */
};

struct open_how {
	unsigned long long flags, mode, resolve;
};

struct mount_attr {
	unsigned long long attr_set, attr_clr, propagation, userns_fd;
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

/* The mounts: at most this many bytes in all. */
static char mounts[65536];

/* The working directory's path (PATH_MAX). */
static char cwd[4096];

/* readall reads fd from offset 0 into buf (at most size bytes): the
 * length read, or fails at step. */
static long readall(int fd, char *buf, long size, unsigned int step)
{
	long n = 0, r;
	while (n < size && (r = sys_pread(fd, buf + n, size - n, n)) != 0) {
		if (r < 0)
			fail(step, r);
		n += r;
	}
	return n;
}

/* idmap writes "ID ID 1" to the map file at path: only this process's
 * own id is mapped into the user namespace. */
static long idmap(const char *path, long id)
{
	char line[32], digits[24];
	int n = 0, d = 0;
	do {
		digits[d++] = (char)('0' + id % 10);
		id /= 10;
	} while (id > 0);
	for (int twice = 0; twice < 2; twice++) {
		for (int i = d - 1; i >= 0; i--)
			line[n++] = digits[i];
		line[n++] = ' ';
	}
	line[n++] = '1';
	line[n++] = '\n';
	long fd = sys_openat(AT_FDCWD, path, O_WRONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	long r = sys_write((int)fd, line, n);
	sys_close((int)fd);
	return r < 0 ? r : 0;
}

/* bindOver binds the mount tree of what dfd/path names (read-only, or
 * not) over the file or directory open as target. */
static long bindOver(int dfd, const char *path, int target, int readonly)
{
	long tree = sys_open_tree(dfd, path, OPEN_TREE_CLONE | O_CLOEXEC | (path[0] ? 0 : AT_EMPTY_PATH));
	if (tree < 0)
		return tree;
	struct mount_attr attr = {MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (readonly ? MOUNT_ATTR_RDONLY : 0), 0, 0, 0};
	long r = sys_mount_setattr((int)tree, "", AT_EMPTY_PATH, &attr, sizeof attr);
	if (r == 0)
		r = sys_move_mount((int)tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	sys_close((int)tree);
	return r;
}

/* mountAll enters a mount namespace of its own and makes the n bytes of
 * entries in list. */
static void mountAll(char *list, long n)
{
	long uid = sys_getuid(), gid = sys_getgid(), r;
	/* "(unreachable)/..." for a directory outside the root: refused too */
	if ((r = sys_getcwd(cwd, sizeof cwd)) < 0 || cwd[0] != '/')
		fail(STEP_CWD, r < 0 ? r : -2 /* ENOENT */);
	if ((r = sys_unshare(uid == 0 ? CLONE_NEWNS : CLONE_NEWUSER | CLONE_NEWNS)) < 0)
		fail(STEP_UNSHARE, r);
	if (uid != 0) {
		static const char deny[] = "deny";
		long fd = sys_openat(AT_FDCWD, "/proc/self/setgroups", O_WRONLY | O_CLOEXEC, 0);
		if (fd < 0)
			fail(STEP_IDMAP, fd);
		r = sys_write((int)fd, deny, sizeof deny - 1);
		sys_close((int)fd);
		if (r < 0)
			fail(STEP_IDMAP, r);
		if ((r = idmap("/proc/self/uid_map", uid)) < 0 || (r = idmap("/proc/self/gid_map", gid)) < 0)
			fail(STEP_IDMAP, r);
	}
	if ((r = sys_mount("none", "/", 0, MS_REC | MS_PRIVATE, 0)) < 0)
		fail(STEP_PRIVATE, r);
	const char *empty = 0;
	for (long i = 0; i < n;) {
		char kind = list[i];
		char *path = list + i + 1;
		while (i < n && list[i] != 0)
			i++;
		i++; /* the NUL */
		if (kind == 'e') {
			empty = path;
			continue;
		}
		if (kind != 'r' && kind != 'p' && kind != 'h')
			fail(STEP_MOUNT_LIST, -22 /* EINVAL */);
		struct open_how how = {O_PATH | O_CLOEXEC, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		long fd = sys_openat2(AT_FDCWD, path, &how, sizeof how);
		if (fd < 0)
			fail(STEP_PROTECT, fd);
		if (kind != 'h') {
			r = bindOver((int)fd, "", (int)fd, kind == 'r');
		} else {
			struct open_how dir = {O_PATH | O_CLOEXEC | O_DIRECTORY, 0, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
			long d = sys_openat2(AT_FDCWD, path, &dir, sizeof dir);
			if (d >= 0) {
				sys_close((int)d);
				r = empty ? bindOver(AT_FDCWD, empty, (int)fd, 1) : -22;
			} else if (d == -ENOTDIR) {
				r = bindOver(AT_FDCWD, "/dev/null", (int)fd, 1);
			} else {
				r = d;
			}
		}
		if (r < 0)
			fail(STEP_PROTECT, r);
		sys_close((int)fd);
	}
	if ((r = sys_chdir(cwd)) < 0)
		fail(STEP_CWD, r);
}

static int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

void cstart(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	long r;

	if (argc < 3)
		fail(STEP_USAGE, -22 /* EINVAL */);
	long nm = readall(FD_MOUNTS, mounts, sizeof mounts, STEP_MOUNT_LIST);
	sys_close(FD_MOUNTS);
	if (nm == sizeof mounts || (nm > 0 && mounts[nm - 1] != 0))
		fail(STEP_MOUNT_LIST, -22 /* EINVAL */);
	if (nm > 0)
		mountAll(mounts, nm);
	if (argv[1][0] == 0) {
		/* the anchor: ready, then held until stdin ends */
		char c;
		if (nm == 0)
			fail(STEP_USAGE, -22 /* EINVAL */);
		sys_close(FD_STATUS);
		while (sys_read(0, &c, 1) > 0)
			;
		sys_exit_group(0);
	}
	if ((r = sys_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) < 0)
		fail(STEP_NO_NEW_PRIVS, r);
	int llflags = 0;
	if (streq(argv[0], "ccrun-confine-log"))
		llflags = LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON;
	if ((r = sys_landlock_restrict_self(FD_RULESET, llflags)) < 0)
		fail(STEP_LANDLOCK, r);
	sys_close(FD_RULESET);

	long n = readall(FD_FILTER, (char *)prog, sizeof prog, STEP_FILTER);
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
