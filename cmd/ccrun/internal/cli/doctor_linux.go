package cli

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

func kernelRelease() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// cgroupVersion reads what is mounted at /sys/fs/cgroup.
func cgroupVersion() string {
	var st unix.Statfs_t
	if unix.Statfs("/sys/fs/cgroup", &st) != nil {
		return "none"
	}
	switch st.Type {
	case unix.CGROUP2_SUPER_MAGIC:
		return "2"
	case unix.TMPFS_MAGIC:
		if unix.Statfs("/sys/fs/cgroup/unified", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
			return "hybrid"
		}
		return "1"
	}
	return "none"
}

// userNamespaces reads the sysctls that allow or forbid them.
func userNamespaces() userNSReport {
	readInt := func(p string) (int, bool) {
		b, err := os.ReadFile(p)
		if err != nil {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		return n, err == nil
	}
	max, ok := readInt("/proc/sys/user/max_user_namespaces")
	if !ok {
		return userNSReport{Detail: "no /proc/sys/user/max_user_namespaces"}
	}
	if max == 0 {
		return userNSReport{Detail: "user.max_user_namespaces is 0"}
	}
	if v, ok := readInt("/proc/sys/kernel/unprivileged_userns_clone"); ok && v == 0 && os.Geteuid() != 0 {
		return userNSReport{Detail: "kernel.unprivileged_userns_clone is 0"}
	}
	if v, ok := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == 1 && os.Geteuid() != 0 {
		return userNSReport{Available: true, Detail: "restricted by AppArmor for unprivileged users"}
	}
	return userNSReport{Available: true, Detail: "at most " + strconv.Itoa(max)}
}
