package cli

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// refillOverdue is how long a detached docker refiller may live before
// `ccrun gc` ends it: its own bound (two minutes, runtime/docker) and a
// margin.
const refillOverdue = 3 * time.Minute

// orphan is a helper process of ccrun that outlived its reason to be.
type orphan struct {
	pid  int
	what string
}

// helperProc is what /proc says of one process.
type helperProc struct {
	uid, euid, ppid int
	env, argv       []string
	age             time.Duration // -1 when unknown
}

// readProc reads /proc/PID of a process; ok is false when it is gone or
// not readable (another user's environment is not).
func readProc(pid int) (p helperProc, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	st, err := os.ReadFile(dir + "status")
	if err != nil {
		return p, false
	}
	p.uid, p.euid, p.ppid = -1, -1, -1
	for _, l := range strings.Split(string(st), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) >= 3 && f[0] == "Uid:":
			p.uid, _ = strconv.Atoi(f[1])
			p.euid, _ = strconv.Atoi(f[2])
		case len(f) >= 2 && f[0] == "PPid:":
			p.ppid, _ = strconv.Atoi(f[1])
		}
	}
	env, err := os.ReadFile(dir + "environ")
	if err != nil {
		return p, false
	}
	p.env = strings.Split(string(bytes.TrimRight(env, "\x00")), "\x00")
	argv, _ := os.ReadFile(dir + "cmdline")
	p.argv = strings.Split(string(bytes.TrimRight(argv, "\x00")), "\x00")
	p.age = procAge(dir)
	return p, true
}

// procAge is how long the process has run: its start time (in the
// kernel's USER_HZ ticks, 100 on Linux) against the system's uptime.
func procAge(dir string) time.Duration {
	stat, err1 := os.ReadFile(dir + "stat")
	up, err2 := os.ReadFile("/proc/uptime")
	if err1 != nil || err2 != nil {
		return -1
	}
	// The name (field 2) may hold spaces and parentheses: fields count
	// from the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return -1
	}
	ticks, err := strconv.ParseInt(f[19], 10, 64) // field 22, starttime
	u, err2 := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	if err != nil || err2 != nil {
		return -1
	}
	return time.Duration(u*float64(time.Second)) - time.Duration(ticks)*(time.Second/100)
}

func envValue(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

// orphaned says whether p is a helper of ccrun, of user uid, that should
// no longer run: a @wasm worker whose parent is not the process that
// started it (which then died), or a docker refiller past its time. The
// warm @wasm server is not one: it outlives its clients by design, and
// ends itself (idle, replaced binary, run count).
func orphaned(p helperProc, uid int, h Helpers) (string, bool) {
	if p.uid != uid || p.euid != uid {
		return "", false
	}
	if v, _ := envValue(p.env, h.WorkerEnv); v == "1" {
		parent, ok := envValue(p.env, h.WorkerParentEnv)
		if !ok { // a worker of an older ccrun: orphaned once reparented to init
			return "wasm worker", p.ppid == 1
		}
		return "wasm worker", parent != strconv.Itoa(p.ppid)
	}
	if len(p.argv) > 1 && p.argv[1] == h.RefillArg && p.age > refillOverdue {
		return "docker refiller", true
	}
	return "", false
}

// findOrphans lists ccrun's orphaned helper processes of this user, as
// endOrphans would end them now: what ccrun gc --dry-run shows. It
// signals nothing.
func findOrphans(h Helpers) ([]orphan, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("gc: %w", err)
	}
	uid, self := os.Getuid(), os.Getpid()
	var found []orphan
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		if p, ok := readProc(pid); ok {
			if what, bad := orphaned(p, uid, h); bad {
				found = append(found, orphan{pid, what})
			}
		}
	}
	return found, nil
}
