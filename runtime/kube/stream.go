package kube

import (
	"context"
	"io"
	"net/http"
	neturl "net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// attach attaches to container of pod: stdin (which ends by closing the
// container's stdin: it is StdinOnce), stdout and stderr.
func (e *Executor) attach(ctx context.Context, pod, container string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := e.cs.CoreV1().RESTClient().Post().Namespace(e.namespace).Resource("pods").Name(pod).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: container, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil}, scheme.ParameterCodec)
	return e.session(ctx, req.URL().String(), stdin, stdout, stderr)
}

// execIn execs argv in container of pod.
func (e *Executor) execIn(ctx context.Context, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	req := e.cs.CoreV1().RESTClient().Post().Namespace(e.namespace).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: argv, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil}, scheme.ParameterCodec)
	return e.session(ctx, req.URL().String(), stdin, stdout, stderr)
}

// session runs a remotecommand session (attach or exec): WebSocket first,
// SPDY where the API server does not upgrade to it. It returns when the
// session ends; an exec's non-zero exit is an error exitCode reads.
func (e *Executor) session(ctx context.Context, url string, stdin io.Reader, stdout, stderr io.Writer) error {
	e.sessions.Add(1)
	u, err := neturl.Parse(url)
	if err != nil {
		return err
	}
	ws, err := remotecommand.NewWebSocketExecutor(e.cfg, http.MethodGet, url)
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.cfg, http.MethodPost, u)
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: stderr})
}
