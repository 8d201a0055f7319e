package ctr

// Cluster is what the Kubernetes engine of @docker says of its cluster
// (kube.Executor.Info; kube.Cluster is this type): it is here, not in
// runtime/kube, so that the CLI's engine report (ccrun doctor, whose
// front does not link the Kubernetes engine) names the same fields.
type Cluster struct {
	Server     string `json:"server"`            // the API server's URL
	Context    string `json:"context,omitempty"` // the kubeconfig's context used
	Namespace  string `json:"namespace"`         // where the pods run
	Version    string `json:"version"`           // the API server's gitVersion
	Nodes      int    `json:"nodes"`             // nodes listed
	ReadyNodes int    `json:"ready_nodes"`       // nodes whose Ready condition is True
	// PullSecrets are the pods' imagePullSecrets (kube.WithPullSecrets,
	// from the settings' pull_secrets).
	PullSecrets []string `json:"pull_secrets,omitempty"`
}
