package kube

import (
	"context"
	"io"
	"net/http"
	neturl "net/url"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// attach attaches to container of pod: stdin (which ends by closing the
// container's stdin: it is StdinOnce), stdout and stderr.
func (e *Executor) attach(ctx context.Context, pod, container string, stdin io.Reader, stdout, stderr io.Writer) error {
	u := e.api.PodURL(e.namespace, pod, "attach", &corev1.PodAttachOptions{Container: container, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil})
	return e.session(ctx, u, stdin, stdout, stderr)
}

// execIn execs argv in container of pod.
func (e *Executor) execIn(ctx context.Context, pod, container string, argv []string, stdin io.Reader, stdout, stderr io.Writer) error {
	u := e.api.PodURL(e.namespace, pod, "exec", &corev1.PodExecOptions{Container: container, Command: argv, Stdin: stdin != nil, Stdout: stdout != nil, Stderr: stderr != nil})
	return e.session(ctx, u, stdin, stdout, stderr)
}

// session runs a remotecommand session (attach or exec): WebSocket first,
// SPDY where the API server does not upgrade to it. It returns when the
// session ends; an exec's non-zero exit is an error exitCode reads.
func (e *Executor) session(ctx context.Context, u *neturl.URL, stdin io.Reader, stdout, stderr io.Writer) error {
	e.sessions.Add(1)
	ws, err := remotecommand.NewWebSocketExecutor(e.cfg, http.MethodGet, u.String())
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
