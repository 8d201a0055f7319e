package ccrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ccrun/ccrun"
	"github.com/ccrun/ccrun/permission"
	"github.com/ccrun/ccrun/permission/keys"
)

// A Go program registers a tool of its own: write_file, keyed
// write_file:<path>, of class write. It goes through the same gate as any
// call: in accept-edits mode a write runs without asking, and a write to a
// dangerous path (.git/hooks) is asked, Once only — here with nobody to
// ask, so it is denied and nothing is written. `ccrun mcp` serves such
// tools when ccrun is embedded (mcpserver.New).
func ExampleWithTool() {
	dir, err := os.MkdirTemp("", "ccrun-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	type args struct{ Path, Content string }
	parse := func(in json.RawMessage) args {
		var a args
		_ = json.Unmarshal(in, &a)
		return a
	}
	writeFile := ccrun.Tool{
		Name:        "write_file",
		Description: "Write a file of the project.",
		InputSchema: json.RawMessage(`{"type":"object","required":["path","content"],"additionalProperties":false,
			"properties":{"path":{"type":"string"},"content":{"type":"string"}}}`),
		Class: permission.ClassWrite,
		Permission: func(in json.RawMessage) (permission.Permission, error) {
			k := keys.Key{Tool: "write_file", Action: filepath.ToSlash(parse(in).Path)}
			if !k.Valid() {
				k.Exact = true
			}
			return permission.Ask(k), nil
		},
		Paths: func(in json.RawMessage) []string { return []string{parse(in).Path} },
		Execute: func(_ context.Context, in json.RawMessage, stdout, _ io.Writer) error {
			a := parse(in)
			path := filepath.Join(dir, filepath.FromSlash(a.Path))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, []byte(a.Content), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "wrote %d bytes", len(a.Content))
			return nil
		},
	}
	mode, err := permission.FlagSettings("accept-edits", nil, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, err := ccrun.New(ccrun.WithProjectDir(dir), ccrun.WithTool(writeFile), ccrun.WithSettings(mode),
		ccrun.WithAuditLog(""), ccrun.WithTrustDir(""))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	for _, path := range []string{"notes/todo.txt", ".git/hooks/pre-commit"} {
		in, _ := json.Marshal(map[string]string{"path": path, "content": "hello"})
		call, err := rt.CallFromTool("write_file", in)
		if err != nil {
			fmt.Println(err)
			return
		}
		out, err := rt.Exec(context.Background(), call)
		d := out.Decision
		switch {
		case err != nil:
			fmt.Printf("%s: %s (%s, only %s offered)\n", d.Key, d.Verdict, d.Layer, d.Offer)
		default:
			fmt.Printf("%s: %s (%s): %s\n", d.Key, d.Verdict, d.Layer, out.Result.Stdout)
		}
	}
	_, err = os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit"))
	fmt.Println("hook written:", err == nil)
	// Output:
	// write_file:notes/todo.txt: allow (mode): wrote 5 bytes
	// write_file:.git/hooks/pre-commit: deny (approver, only Once offered)
	// hook written: false
}
