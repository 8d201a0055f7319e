package cli

import (
	"fmt"
	"io"
	"strings"
)

// printEngine says where a @docker call runs (Engines.EngineInfo).
func printEngine(w io.Writer, r EngineReport) {
	fmt.Fprintf(w, "@docker engine:   %s (%s)\n", r.Engine, r.From)
	if r.Engine != "kubernetes" {
		return
	}
	if c := r.Cluster; c != nil {
		fmt.Fprintf(w, "  cluster:        %s, context %q, namespace %s\n", c.Server, c.Context, c.Namespace)
		if len(c.PullSecrets) > 0 {
			fmt.Fprintf(w, "  pull secrets:   %s\n", strings.Join(c.PullSecrets, ", "))
		}
	}
	if !r.Answers {
		fmt.Fprintf(w, "  answers:        no: %s\n", r.Error)
		return
	}
	fmt.Fprintf(w, "  answers:        yes, %s, %d of %d nodes ready\n", r.Cluster.Version, r.Cluster.ReadyNodes, r.Cluster.Nodes)
	fmt.Fprintf(w, "  network none:   %s\n", r.NetworkPolicy)
}
