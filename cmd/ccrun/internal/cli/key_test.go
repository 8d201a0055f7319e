package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// TestKeyAndVersionOptions: key's and version's command lines become
// their options, and nothing else is done with them.
func TestKeyAndVersionOptions(t *testing.T) {
	t.Parallel()
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
	var k *keyOptions
	c := a.keyCommand(func(_ context.Context, o *keyOptions) error { k = o; return nil })
	c.SetArgs([]string{"--json", "git push origin"})
	if err := c.Execute(); err != nil || *k != (keyOptions{command: "git push origin", json: true}) {
		t.Errorf("key: %+v, %v", k, err)
	}
	var v *versionOptions
	c = a.versionCommand(func(_ context.Context, o *versionOptions) error { v = o; return nil })
	c.SetArgs([]string{"--json"})
	if err := c.Execute(); err != nil || !v.json {
		t.Errorf("version: %+v, %v", v, err)
	}
}

// TestRunKeyAndVersion calls key's and version's run functions without
// cobra.
func TestRunKeyAndVersion(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, io.Discard}}
	if err := a.runKey(context.Background(), &keyOptions{command: "make", json: true}); err != nil {
		t.Fatal(err)
	}
	var r keyReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || r.Key != "run_command:make" || r.Rule != `"run_command:make:\"\""` {
		t.Errorf("key make: %+v, %v", r, err)
	}
	out.Reset()
	if err := a.runKey(context.Background(), &keyOptions{command: "git status && git push"}); err != nil ||
		!strings.HasPrefix(out.String(), `key:      run_command:"git status && git push"`) {
		t.Errorf("key compound: %q, %v", out.String(), err)
	}
	out.Reset()
	if err := a.runVersion(context.Background(), &versionOptions{}); err != nil || !strings.HasPrefix(out.String(), "ccrun ") {
		t.Errorf("version: %q, %v", out.String(), err)
	}
}

// TestRunDoctorAndDemo calls doctor's and demo's run functions without
// cobra, and their commands' parsing with a runF.
func TestRunDoctorAndDemo(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+t.TempDir()+"/no-docker.sock")
	a := &app{eng: testEngines, io: stdio{strings.NewReader(""), io.Discard, io.Discard}}
	var d *doctorOptions
	c := a.doctorCommand(func(_ context.Context, o *doctorOptions) error { d = o; return nil })
	c.SetArgs([]string{"--json", "--engine", "docker"})
	if err := c.Execute(); err != nil || *d != (doctorOptions{json: true, engine: "docker"}) {
		t.Errorf("doctor: %+v, %v", d, err)
	}
	var out bytes.Buffer
	a = &app{eng: testEngines, io: stdio{strings.NewReader(""), &out, io.Discard}}
	if err := a.runDoctor(context.Background(), &doctorOptions{json: true}); err != nil || !json.Valid(out.Bytes()) || !strings.Contains(out.String(), `"landlock"`) {
		t.Errorf("doctor --json: %v %q", err, out.String())
	}
	out.Reset()
	if err := a.runDemo(context.Background(), &demoOptions{}); err != nil || !strings.Contains(out.String(), "ccrun.json now holds the grant") {
		t.Errorf("demo: %v %q", err, out.String())
	}
}
