//go:build !ccrunfront

package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/ccrun/ccrun/engines"
	"github.com/ccrun/ccrun/internal/housekeep"
)

// engineReport says where a @docker call would run: the engine, what
// chose it, and for Kubernetes the cluster and whether it answers.
type engineReport struct {
	Engine  string             `json:"engine"` // "docker" or "kubernetes"
	From    string             `json:"from"`   // "default", "flag" or the settings file
	Cluster *housekeep.Cluster `json:"cluster,omitempty"`
	Answers bool               `json:"answers"`
	Error   string             `json:"error,omitempty"`
	// NetworkPolicy is whether network "none" is enforced; ccrun cannot
	// tell from the API whether the network plugin enforces policies.
	NetworkPolicy string `json:"network_policy,omitempty"`
}

// engineInfo finds the @docker engine as a Runtime would (flag, managed
// then user settings) and, for Kubernetes, asks the cluster.
func engineInfo(ctx context.Context, flag string) engineReport {
	engine, from, opts, err := engines.DefaultDockerEngine()
	if flag != "" {
		engine, from, opts, err = flag, "flag", nil, nil
	}
	r := engineReport{Engine: engine, From: from}
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if engine != engines.EngineKubernetes {
		r.Answers = true // the docker engine's line says whether it does
		return r
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := housekeep.ClusterInfo(ctx, opts...)
	r.Cluster = &c
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Answers = true
	r.NetworkPolicy = "unknown: network none is a NetworkPolicy, enforced only if the cluster's network plugin enforces policies"
	return r
}

func printEngine(w io.Writer, r engineReport) {
	fmt.Fprintf(w, "@docker engine:   %s (%s)\n", r.Engine, r.From)
	if r.Engine != engines.EngineKubernetes {
		return
	}
	if c := r.Cluster; c != nil {
		fmt.Fprintf(w, "  cluster:        %s, context %q, namespace %s\n", c.Server, c.Context, c.Namespace)
	}
	if !r.Answers {
		fmt.Fprintf(w, "  answers:        no: %s\n", r.Error)
		return
	}
	fmt.Fprintf(w, "  answers:        yes, %s, %d of %d nodes ready\n", r.Cluster.Version, r.Cluster.ReadyNodes, r.Cluster.Nodes)
	fmt.Fprintf(w, "  network none:   %s\n", r.NetworkPolicy)
}
