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
 *           (argv[0] ending in -log -- ccrun-confine-log, -net-log,
 *           -join-log: the same, and Landlock logs the command's denials
 *           to the audit subsystem: ABI 7's
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
 * Started as "ccrun-confine-net" (argv[0]), it runs a program of a run
 * whose network is limited to named hosts, forked from ccrun's thread in
 * the run's network namespace: after the mounts, it drops every
 * capability but KEEP_CAPS from the bounding set, and from the effective,
 * permitted, inheritable and ambient sets, so that a program run as root
 * keeps the ones a build needs (owners, modes, permissions, setuid to
 * another user, signals, low ports) and none that leaves or widens the
 * namespace: CAP_SYS_ADMIN (setns, unshare, mount), CAP_NET_ADMIN,
 * CAP_NET_RAW, CAP_SYS_PTRACE, CAP_SYS_CHROOT, CAP_DAC_READ_SEARCH
 * (open_by_handle_at), CAP_MKNOD, CAP_SETPCAP, CAP_SETFCAP, modules,
 * raw I/O, BPF, the rest. Execve as root gives the bounding set, so that
 * set is what holds.
 *
 * Started as "ccrun-confine-join", it first enters the user namespace
 * open as fd 7 and then the network namespace open as fd 8 (a run's,
 * made by the holder below for ccrun run as an ordinary user), and goes on
 * as "ccrun-confine-net".
 *
 * Started as "ccrun-netns" with a unix socket as fd 3, in a new user and
 * network namespace whose owner is ccrun's user and with CAP_NET_ADMIN
 * (ambient), it is the holder of a run's namespace: it brings loopback
 * up, opens a TCP listener on 127.0.0.1, a port the kernel picks, and its
 * user and network namespaces, and sends them (SCM_RIGHTS, in that order)
 * with 8 bytes of status (0, 0) on fd 3; then waits until fd 3 ends. On a
 * failure the status is the step and the errno, with no descriptor.
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
#define FD_USERNS 7
#define FD_NETNS 8
#define FD_HOLDER 3

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
#define CLONE_NEWNET 0x40000000
#define PR_CAPBSET_READ 23
#define PR_CAPBSET_DROP 24
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#define CAP_VERSION_3 0x20080522
#define AF_UNIX 1
#define AF_INET 2
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define SOCK_CLOEXEC 02000000
#define SIOCSIFFLAGS 0x8914
#define IFF_UP 0x1
#define IFF_RUNNING 0x40
#define SOL_SOCKET 1
#define SCM_RIGHTS 1
#define EINVAL 22

/* The capabilities a program in a run's network namespace keeps (as
 * root): CAP_CHOWN 0, CAP_DAC_OVERRIDE 1, CAP_FOWNER 3, CAP_FSETID 4,
 * CAP_KILL 5, CAP_SETGID 6, CAP_SETUID 7, CAP_NET_BIND_SERVICE 10. */
#define KEEP_CAPS ((1ULL << 0) | (1ULL << 1) | (1ULL << 3) | (1ULL << 4) | (1ULL << 5) | (1ULL << 6) | (1ULL << 7) | (1ULL << 10))

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
	STEP_CAPS = 13,     /* dropping the capabilities */
	STEP_SETNS = 14,    /* entering the run's user and network namespaces */
	STEP_LOOPBACK = 15, /* the holder: loopback up */
	STEP_LISTEN = 16,   /* the holder: the listener */
	STEP_NSFD = 17,     /* the holder: opening its namespaces */
	STEP_SEND = 18,     /* the holder: sending them */
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

struct cap_header {
	unsigned int version;
	int pid;
};

struct cap_data {
	unsigned int effective, permitted, inheritable;
};

struct ifreq {
	char name[16];
	union {
		short flags;
		char pad[24];
	} u;
};

struct sockaddr_in {
	unsigned short family;
	unsigned short port; /* network byte order */
	unsigned int addr;   /* network byte order */
	char zero[8];
};

struct iovec {
	void *base;
	unsigned long len;
};

struct msghdr {
	void *name;
	unsigned int namelen;
	struct iovec *iov;
	unsigned long iovlen;
	void *control;
	unsigned long controllen;
	int flags;
};

struct cmsg3 {
	unsigned long len;
	int level, type;
	int fds[3];
	int pad; /* CMSG_SPACE: to 8 bytes */
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

/* startsWith: whether s begins with p. */
static int startsWith(const char *s, const char *p)
{
	while (*p && *s == *p)
		s++, p++;
	return *p == 0;
}

/* endsWith: whether s ends with p. */
static int endsWith(const char *s, const char *p)
{
	const char *e = s, *q = p;
	while (*e)
		e++;
	while (*q)
		q++;
	while (q > p && e > s && *(e - 1) == *(q - 1))
		e--, q--;
	return q == p;
}

/* dropCaps keeps KEEP_CAPS at most, in every set. */
static void dropCaps(void)
{
	long r;
	for (long c = 0; c < 64; c++) {
		if (KEEP_CAPS & (1ULL << c))
			continue;
		if ((r = sys_prctl(PR_CAPBSET_READ, c, 0, 0, 0)) == -EINVAL)
			break; /* past the kernel's last capability */
		if (r < 0)
			fail(STEP_CAPS, r);
		if (r == 1 && (r = sys_prctl(PR_CAPBSET_DROP, c, 0, 0, 0)) < 0)
			fail(STEP_CAPS, r);
	}
	if ((r = sys_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)) < 0)
		fail(STEP_CAPS, r);
	struct cap_header hdr = {CAP_VERSION_3, 0};
	struct cap_data data[2];
	if ((r = sys_capget(&hdr, data)) < 0)
		fail(STEP_CAPS, r);
	for (int i = 0; i < 2; i++) {
		unsigned int keep = (unsigned int)(KEEP_CAPS >> (32 * i));
		data[i].effective &= keep;
		data[i].permitted &= keep;
		data[i].inheritable = 0;
	}
	if ((r = sys_capset(&hdr, data)) < 0)
		fail(STEP_CAPS, r);
}

/* holdFail reports a failure of the holder on fd 3 and exits. */
static void __attribute__((noreturn)) holdFail(unsigned int step, long err)
{
	unsigned int msg[2] = {step, (unsigned int)-err};
	sys_write(FD_HOLDER, msg, sizeof msg);
	sys_exit_group(127);
}

/* hold is the holder of a run's user and network namespace. */
static void __attribute__((noreturn)) hold(void)
{
	long r, s = sys_socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		holdFail(STEP_LOOPBACK, s);
	struct ifreq ifr = {"lo", {0}};
	ifr.u.flags = IFF_UP | IFF_RUNNING;
	if ((r = sys_ioctl((int)s, SIOCSIFFLAGS, &ifr)) < 0)
		holdFail(STEP_LOOPBACK, r);
	sys_close((int)s);
	long l = sys_socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		holdFail(STEP_LISTEN, l);
	struct sockaddr_in sin = {AF_INET, 0, 0x0100007f /* 127.0.0.1 */, {0}};
	if ((r = sys_bind((int)l, &sin, sizeof sin)) < 0 || (r = sys_listen((int)l, 4096)) < 0)
		holdFail(STEP_LISTEN, r);
	long u = sys_openat(AT_FDCWD, "/proc/self/ns/user", O_CLOEXEC, 0);
	if (u < 0)
		holdFail(STEP_NSFD, u);
	long n = sys_openat(AT_FDCWD, "/proc/self/ns/net", O_CLOEXEC, 0);
	if (n < 0)
		holdFail(STEP_NSFD, n);
	unsigned int ok[2] = {0, 0};
	struct iovec iov = {ok, sizeof ok};
	struct cmsg3 c = {sizeof c - sizeof c.pad, SOL_SOCKET, SCM_RIGHTS, {(int)l, (int)u, (int)n}, 0};
	struct msghdr msg = {0, 0, &iov, 1, &c, sizeof c, 0};
	if ((r = sys_sendmsg(FD_HOLDER, &msg, 0)) < 0)
		holdFail(STEP_SEND, r);
	char b;
	while (sys_read(FD_HOLDER, &b, 1) > 0)
		;
	sys_exit_group(0);
}

void cstart(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	long r;

	if (argc >= 1 && streq(argv[0], "ccrun-netns"))
		hold();
	/* argv[0] is the mode: ccrun-confine[-net|-join][-log] */
	int join = argc >= 1 && startsWith(argv[0], "ccrun-confine-join");
	int net = join || (argc >= 1 && startsWith(argv[0], "ccrun-confine-net"));
	if (argc < 3)
		fail(STEP_USAGE, -22 /* EINVAL */);
	if (join) {
		if ((r = sys_setns(FD_USERNS, CLONE_NEWUSER)) < 0 || (r = sys_setns(FD_NETNS, CLONE_NEWNET)) < 0)
			fail(STEP_SETNS, r);
		sys_close(FD_USERNS);
		sys_close(FD_NETNS);
	}
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
	if (net)
		dropCaps();
	if ((r = sys_prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) < 0)
		fail(STEP_NO_NEW_PRIVS, r);
	int llflags = 0;
	if (endsWith(argv[0], "-log"))
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
