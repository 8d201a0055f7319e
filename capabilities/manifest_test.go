package capabilities

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/runtime/job"
)

func TestParseValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		json string
		want Manifest
	}{
		{"wasm minimal", wasmManifest, Manifest{
			Name: "fmt-json", Description: "Pretty-print JSON", Environment: ceiling.Wasm,
			Entry: Entry{Module: "fmt-json.wasm", Args: []string{"--indent", "2"}},
		}},
		{"wasm full", `{
			"$schema": "https://github.com/ccrun/ccrun/capabilities/capability.schema.json",
			"name": "w", "description": "d", "environment": "@wasm",
			"entry": {"module": "bin/w.wasm"},
			"parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
			"mounts": [{"host": "data", "guest": "/data"}, {"host": "out", "guest": "/out", "rw": true}],
			"limits": {"timeout": "1m30s", "memory": "64MiB", "output": 1048576},
			"env": {"LANG": "C"}
		}`, Manifest{
			Schema: SchemaID, Name: "w", Description: "d", Environment: ceiling.Wasm,
			Entry:      Entry{Module: "bin/w.wasm"},
			Parameters: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`),
			Mounts:     []job.Mount{{Host: "data", Guest: "/data"}, {Host: "out", Guest: "/out", Writable: true}},
			Limits:     Limits{Timeout: Duration(90 * time.Second), Memory: 64 << 20, Output: 1 << 20},
			Env:        map[string]string{"LANG": "C"},
		}},
		{"shell", `{"name": "s", "description": "d", "environment": "@shell",
			"entry": {"command": "./run.sh \"$1\"", "workdir": "sub"}, "limits": {"timeout": "5s", "output": "512k"}}`,
			Manifest{Name: "s", Description: "d", Environment: ceiling.Shell,
				Entry:  Entry{Command: `./run.sh "$1"`, Workdir: "sub"},
				Limits: Limits{Timeout: Duration(5 * time.Second), Output: 512 << 10}}},
		{"docker", `{"name": "d0-x", "description": "d", "environment": "@docker",
			"entry": {"image": "ccrun-test:busybox", "command": ["/bin/busybox", "echo", "hi"], "workdir": "/work"},
			"mounts": [{"host": ".", "guest": "/src"}],
			"limits": {"memory": "1GiB", "pids": 64, "cpus": 1.5},
			"network": "bridge", "pool": true}`,
			Manifest{Name: "d0-x", Description: "d", Environment: ceiling.Docker,
				Entry:   Entry{Image: "ccrun-test:busybox", Argv: []string{"/bin/busybox", "echo", "hi"}, Workdir: "/work"},
				Mounts:  []job.Mount{{Host: ".", Guest: "/src"}},
				Limits:  Limits{Memory: 1 << 30, Pids: 64, CPUs: 1.5},
				Network: NetworkBridge, Pool: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse("capability.json", []byte(tt.json))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(&tt.want, got, cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) })); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			// What Marshal writes, Parse reads back the same.
			out, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Parse("again.json", out)
			if err != nil {
				t.Fatalf("Parse(Marshal(m)): %v\n%s", err, out)
			}
			if diff := cmp.Diff(got, again, cmp.Comparer(func(a, b json.RawMessage) bool {
				if len(a) == 0 || len(b) == 0 {
					return len(a) == len(b)
				}
				var x, y any
				return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && cmp.Equal(x, y)
			})); diff != "" {
				t.Errorf("round trip (-first +second):\n%s", diff)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	const ok = `"name": "x", "description": "d"`
	tests := []struct {
		name string
		json string
		want []string // pointers, sorted
	}{
		{"environment not a name", `{` + ok + `, "environment": "@Python", "entry": {"command": "x"}}`, []string{"/environment"}},
		{"environment without @", `{` + ok + `, "environment": "wasm", "entry": {"module": "x"}}`, []string{"/environment"}},
		{"missing environment and entry", `{` + ok + `}`, []string{"/entry", "/environment"}},
		{"missing name", `{"description": "d", "environment": "@shell", "entry": {"command": "x"}}`, []string{"/name"}},
		{"unknown top-level field", `{` + ok + `, "environment": "@shell", "entry": {"command": "x"}, "timeout": "5s"}`, []string{"/timeout"}},
		{"typo in entry", `{` + ok + `, "environment": "@shell", "entry": {"comand": "x"}}`, []string{"/entry/comand", "/entry/command"}},
		{"typo in limits", `{` + ok + `, "environment": "@shell", "entry": {"command": "x"}, "limits": {"memroy": "1MiB"}}`, []string{"/limits/memroy"}},
		{"bad name", `{"name": "Fmt_JSON", "description": "d", "environment": "@shell", "entry": {"command": "x"}}`, []string{"/name"}},
		{"name starting with dash", `{"name": "-x", "description": "d", "environment": "@shell", "entry": {"command": "x"}}`, []string{"/name"}},
		{"name too long", `{"name": "` + strings.Repeat("a", 64) + `", "description": "d", "environment": "@shell", "entry": {"command": "x"}}`, []string{"/name"}},
		{"empty description", `{"name": "x", "description": "", "environment": "@shell", "entry": {"command": "x"}}`, []string{"/description"}},
		{"wasm without module", `{` + ok + `, "environment": "@wasm", "entry": {}}`, []string{"/entry/module"}},
		{"wasm with command", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m.wasm", "command": "x"}}`, []string{"/entry/command"}},
		{"wasm with network", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m.wasm"}, "network": "none"}`, []string{"/network"}},
		{"shell with mounts", `{` + ok + `, "environment": "@shell", "entry": {"command": "x"}, "mounts": [{"host": "a", "guest": "/a"}]}`, []string{"/mounts"}},
		{"shell with memory limit", `{` + ok + `, "environment": "@shell", "entry": {"command": "x"}, "limits": {"memory": "1GiB"}}`, []string{"/limits/memory"}},
		{"wasm with pids", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "limits": {"pids": 5, "cpus": 1}}`, []string{"/limits/cpus", "/limits/pids"}},
		{"shell with pool", `{` + ok + `, "environment": "@shell", "entry": {"command": "x"}, "pool": true}`, []string{"/pool"}},
		{"shell with array command", `{` + ok + `, "environment": "@shell", "entry": {"command": ["x"]}}`, []string{"/entry/command"}},
		{"shell blank command", `{` + ok + `, "environment": "@shell", "entry": {"command": "   "}}`, []string{"/entry/command"}},
		{"docker with string command", `{` + ok + `, "environment": "@docker", "entry": {"image": "i", "command": "echo hi"}}`, []string{"/entry/command"}},
		{"docker without image", `{` + ok + `, "environment": "@docker", "entry": {"command": ["x"]}}`, []string{"/entry/image"}},
		{"docker empty program", `{` + ok + `, "environment": "@docker", "entry": {"image": "i", "command": [""]}}`, []string{"/entry/command/0"}},
		{"docker relative workdir", `{` + ok + `, "environment": "@docker", "entry": {"image": "i", "workdir": "w"}}`, []string{"/entry/workdir"}},
		{"docker bad network", `{` + ok + `, "environment": "@docker", "entry": {"image": "i"}, "network": "container:x"}`, []string{"/network"}},
		{"docker mount on root", `{` + ok + `, "environment": "@docker", "entry": {"image": "i"}, "mounts": [{"host": "a", "guest": "/"}]}`, []string{"/mounts/0/guest"}},
		{"docker memory too small", `{` + ok + `, "environment": "@docker", "entry": {"image": "i"}, "limits": {"memory": "1MiB"}}`, []string{"/limits/memory"}},
		{"module with ..", `{` + ok + `, "environment": "@wasm", "entry": {"module": "../x.wasm"}}`, []string{"/entry/module"}},
		{"module with inner ..", `{` + ok + `, "environment": "@wasm", "entry": {"module": "a/../x.wasm"}}`, []string{"/entry/module"}},
		{"module absolute", `{` + ok + `, "environment": "@wasm", "entry": {"module": "/etc/passwd"}}`, []string{"/entry/module"}},
		{"module backslash", `{` + ok + `, "environment": "@wasm", "entry": {"module": "..\\x.wasm"}}`, []string{"/entry/module"}},
		{"module is the directory", `{` + ok + `, "environment": "@wasm", "entry": {"module": "./"}}`, []string{"/entry/module"}},
		{"mount host escapes", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "mounts": [{"host": "../..", "guest": "/a"}]}`, []string{"/mounts/0/host"}},
		{"mount host absolute", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "mounts": [{"host": "/etc", "guest": "/a"}]}`, []string{"/mounts/0/host"}},
		{"mount host NUL", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "mounts": [{"host": "a\u0000b", "guest": "/a"}]}`, []string{"/mounts/0/host"}},
		{"mount guest relative", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "mounts": [{"host": "a", "guest": "a"}]}`, []string{"/mounts/0/guest"}},
		{"mount guest with ..", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "mounts": [{"host": "a", "guest": "/a/../etc"}]}`, []string{"/mounts/0/guest"}},
		{"mount guest twice", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "mounts": [{"host": "a", "guest": "/a"}, {"host": "b", "guest": "/a"}]}`, []string{"/mounts/1/guest"}},
		{"mount without guest", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "mounts": [{"host": "a"}]}`, []string{"/mounts/0/guest"}},
		{"mount rw not bool", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "mounts": [{"host": "a", "guest": "/a", "rw": "yes"}]}`, []string{"/mounts/0/rw"}},
		{"bad size unit", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "limits": {"memory": "64XB"}}`, []string{"/limits/memory"}},
		{"negative size", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "limits": {"output": -1}}`, []string{"/limits/output"}},
		{"zero size", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "limits": {"output": "0"}}`, []string{"/limits/output"}},
		{"size overflow", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "limits": {"memory": "99999999999TiB"}}`, []string{"/limits/memory"}},
		{"bad duration", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "limits": {"timeout": "5 s"}}`, []string{"/limits/timeout"}},
		{"duration as number", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "limits": {"timeout": 30}}`, []string{"/limits/timeout"}},
		{"zero timeout", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "limits": {"timeout": "0s"}}`, []string{"/limits/timeout"}},
		{"zero pids", `{` + ok + `, "environment": "@docker", "entry": {"image": "i"}, "limits": {"pids": 0}}`, []string{"/limits/pids"}},
		{"zero cpus", `{` + ok + `, "environment": "@docker", "entry": {"image": "i"}, "limits": {"cpus": 0}}`, []string{"/limits/cpus"}},
		{"huge cpus", `{` + ok + `, "environment": "@docker", "entry": {"image": "i"}, "limits": {"cpus": 1e9}}`, []string{"/limits/cpus"}},
		{"bad env name", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "env": {"1A": "x"}}`, []string{"/env/1A"}},
		{"env value not string", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "env": {"A": 1}}`, []string{"/env/A"}},
		{"parameters not a schema", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "parameters": {"type": "strng"}}`, []string{"/parameters"}},
		{"parameters not an object schema", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "parameters": {"type": "string"}}`, []string{"/parameters"}},
		{"parameters with a file ref", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "parameters": {"type": "object", "$ref": "file:///etc/passwd"}}`, []string{"/parameters"}},
		{"parameters with a remote ref", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "parameters": {"type": "object", "properties": {"a": {"$ref": "http://127.0.0.1:1/x.json"}}}}`, []string{"/parameters"}},
		{"parameters a boolean", `{` + ok + `, "environment": "@wasm", "entry": {"module": "m"}, "parameters": true}`, []string{"/parameters"}},
		{"several at once", `{"name": "X", "description": "d", "environment": "@wasm", "entry": {"module": "m"}, "limits": {"pids": 0, "timeout": "x"}, "extra": 1}`,
			[]string{"/extra", "/limits/pids", "/limits/timeout", "/name"}},
		{"not an object", `[1, 2]`, []string{""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parseInvalid(t, "dir/capability.json", tt.json, tt.want)
		})
	}
}

func TestUnknownEnvironmentClass(t *testing.T) {
	t.Parallel()
	_, err := Parse("c.json", []byte(`{"name": "x", "description": "d", "environment": "python", "entry": {"command": "x"}}`))
	if !errors.Is(err, ceiling.ErrUnknownEnvironment) {
		t.Fatalf("err = %v; want class ceiling.ErrUnknownEnvironment", err)
	}
	if !strings.Contains(err.Error(), `"python"`) || !strings.Contains(err.Error(), "want @shell, @wasm, @docker, or the name of one a Go program adds") {
		t.Errorf("err = %v; want it to name the value and the choices", err)
	}
}

func TestTypoHint(t *testing.T) {
	t.Parallel()
	_, err := Parse("c.json", []byte(`{"name": "x", "descripton": "d", "environment": "@shell", "entry": {"command": "x"}}`))
	if err == nil || !strings.Contains(err.Error(), `/descripton: unknown field "descripton" (did you mean "description"?)`) {
		t.Fatalf("err = %v; want the unknown field named with a hint", err)
	}
}

func TestParseMalformed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		json      string
		line, col int
		ptr       string
	}{
		{"trailing comma", "{\n  \"name\": \"x\",\n  \"a\": [1, 2,]\n}", 3, 14, ""},
		{"unterminated", "{\n  \"name\": \"x\"", 2, 14, ""},
		{"empty", "", 1, 1, ""},
		{"bare word", "{\n  \"name\": nope\n}", 2, 12, ""},
		{"trailing text", "{\"name\": \"x\"}\n  x", 2, 3, ""},
		{"second value", "{} {}", 1, 4, ""},
		{"duplicate field", "{\n  \"name\": \"x\",\n  \"name\": \"y\"\n}", 3, 3, "/name"},
		{"duplicate nested", "{\"limits\": {\"memory\": 1,\n \"memory\": 2}}", 2, 2, "/limits/memory"},
		{"unicode before error", "{\n  \"description\": \"héllo wörld\", x}", 2, 33, ""},
		{"single quotes", "{'name': 'x'}", 1, 2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("c.json", []byte(tt.json))
			if !errors.Is(err, ErrInvalidManifest) {
				t.Fatalf("err = %v; want class ErrInvalidManifest", err)
			}
			errs := fieldErrors(t, err)
			if len(errs) != 1 {
				t.Fatalf("%d errors: %v; want 1", len(errs), err)
			}
			fe := errs[0]
			if fe.Line != tt.line || fe.Column != tt.col || fe.Pointer != tt.ptr {
				t.Errorf("error %q at %d:%d %q; want %d:%d %q", fe, fe.Line, fe.Column, fe.Pointer, tt.line, tt.col, tt.ptr)
			}
		})
	}
}

func TestParseTooLarge(t *testing.T) {
	t.Parallel()
	big := `{"name": "x", "description": "` + strings.Repeat("a", MaxManifestSize) + `"}`
	_, err := Parse("c.json", []byte(big))
	if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), "larger than 1MiB") {
		t.Fatalf("err = %v; want a clear size error of class ErrInvalidManifest", err)
	}
}

func TestParseSize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true},
		{"1048576", 1 << 20, true},
		{"512k", 512 << 10, true},
		{"512K", 512 << 10, true},
		{"512kb", 512 << 10, true},
		{"512KiB", 512 << 10, true},
		{"64MiB", 64 << 20, true},
		{"64m", 64 << 20, true},
		{"64MB", 64 << 20, true},
		{"1GiB", 1 << 30, true},
		{"1g", 1 << 30, true},
		{"2TiB", 2 << 40, true},
		{"1.5GiB", 3 << 29, true},
		{"0.5k", 512, true},
		{"1.0001k", 1024, true},
		{"10b", 10, true},
		{"8388607TiB", 8388607 << 40, true},
		{"8388608TiB", 0, false}, // 2^63 does not fit
		{"99999999999999999999", 0, false},
		{"", 0, false},
		{"k", 0, false},
		{"-1", 0, false},
		{"1.5.5k", 0, false},
		{".5k", 0, false},
		{"5.k", 0, false},
		{"64 MiB", 0, false},
		{"64XB", 0, false},
		{"64MiBs", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseSize(tt.in)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSize) {
				t.Errorf("ParseSize(%q) = %d, %v; want an error of class ErrInvalidSize", tt.in, got, err)
			}
		})
	}
}

func TestFormatSize(t *testing.T) {
	t.Parallel()
	for _, n := range []int64{0, 1, 1000, 1024, 1536, 64 << 20, 1 << 30, 3 << 29, 5 << 40, 1<<63 - 1} {
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, s, got, err)
		}
	}
	if got := FormatSize(64 << 20); got != "64MiB" {
		t.Errorf("FormatSize(64<<20) = %q; want 64MiB", got)
	}
}

func TestLimitsJob(t *testing.T) {
	t.Parallel()
	l := Limits{Timeout: Duration(30 * time.Second), Memory: 64 << 20, Output: 1 << 20, Pids: 64, CPUs: 1.5}
	want := job.Limits{Timeout: 30 * time.Second, Memory: 64 << 20, Output: 1 << 20, Pids: 64, CPUs: 1.5}
	if got := l.Job(); got != want {
		t.Errorf("Job() = %+v; want %+v", got, want)
	}
	if got := (Limits{}).Job(); got != (job.Limits{}) {
		t.Errorf("zero Limits.Job() = %+v; want zero, so executors apply defaults", got)
	}
}

func TestLoosens(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		json string
		want []string
	}{
		{"nothing", wasmManifest, nil},
		{"docker default network", `{"name": "x", "description": "d", "environment": "@docker", "entry": {"image": "i"}, "network": "none"}`, nil},
		{"mounts and network", `{"name": "x", "description": "d", "environment": "@docker", "entry": {"image": "i"},
			"mounts": [{"host": "data", "guest": "/data"}, {"host": "out dir", "guest": "/out", "rw": true}], "network": "host"}`,
			[]string{
				"mount ro: data -> /data (the tool can read these files)",
				`mount rw: "out dir" -> /out (the tool can change these files)`,
				"network: host (the tool can reach the network)",
			}},
		{"limits above defaults", `{"name": "x", "description": "d", "environment": "@docker", "entry": {"image": "i"},
			"limits": {"timeout": "1h", "memory": "1GiB", "output": "64MiB", "pids": 1024, "cpus": 2}}`,
			[]string{
				"limits.timeout: 1h0m0s (default 10m0s)",
				"limits.memory: 1GiB (default 256MiB)",
				"limits.output: 64MiB (default 4MiB)",
				"limits.pids: 1024 (default 256)",
				"limits.cpus: 2 (default 1)",
			}},
		{"limits below defaults", `{"name": "x", "description": "d", "environment": "@docker", "entry": {"image": "i"},
			"limits": {"timeout": "1s", "memory": "64MiB", "pids": 8, "cpus": 0.5}}`, nil},
		{"shell env", `{"name": "x", "description": "d", "environment": "@shell", "entry": {"command": "x"},
			"env": {"LD_PRELOAD": "/tmp/evil.so", "LANG": "C", "BASH_ENV": "x\u001b[2J"}}`,
			[]string{
				`env BASH_ENV="x\x1b[2J" (changes what programs run)`,
				"env LD_PRELOAD=/tmp/evil.so (changes what programs run)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := Parse("c.json", []byte(tt.json))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, m.Loosens()); diff != "" {
				t.Errorf("Loosens (-want +got):\n%s", diff)
			}
		})
	}
}
