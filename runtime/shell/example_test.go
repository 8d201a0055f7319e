package shell_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/ccrun/ccrun/runtime/job"
	"github.com/ccrun/ccrun/runtime/shell"
)

func ExampleExecutor_Run() {
	e, err := shell.New()
	if err != nil {
		log.Fatal(err)
	}
	// The gate parses the command once, keys it, and hands over the tree.
	script, err := syntax.NewParser().Parse(strings.NewReader(`echo "hello, $1"; exit 3`), "")
	if err != nil {
		log.Fatal(err)
	}
	res, err := e.Run(context.Background(), shell.Spec{
		Script:  script,
		Args:    []string{"world"},
		Dir:     os.TempDir(),
		Streams: job.Streams{Stdout: os.Stdout},
		Limits:  job.Limits{Timeout: time.Minute},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Reason, res.ExitCode)
	// Output:
	// hello, world
	// exit 3
}

func ExampleFilterEnv() {
	environ := []string{"PATH=/usr/bin", "GITHUB_TOKEN=ghp_x", "LD_PRELOAD=/tmp/x.so", "NPM_CONFIG_CACHE=/c", "LC_ALL=C"}
	fmt.Println(shell.FilterEnv(environ, nil))
	fmt.Println(shell.FilterEnv(environ, []string{"NPM_CONFIG_*"}))
	// Output:
	// [PATH=/usr/bin LC_ALL=C]
	// [PATH=/usr/bin NPM_CONFIG_CACHE=/c LC_ALL=C]
}
