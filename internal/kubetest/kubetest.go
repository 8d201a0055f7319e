// Package kubetest is what the tests of the Kubernetes engine and of its
// front ends (runtime/kube, internal/housekeep, cmd/ccrun) share, so that
// a test of the CLI, which may not import a backend, need not copy it:
// the fake kubeconfig. The registry the cluster's nodes pull from, and its
// images, are internal/registrytest's.
package kubetest

import (
	"os"
	"path/filepath"
	"testing"
)

// Kubeconfig writes a kubeconfig whose one context, c (cluster c, user u
// with a token), is the API server at server, and returns its path.
func Kubeconfig(t testing.TB, server string) string {
	t.Helper()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+server+`"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc
}
