package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/ccrun/ccrun/internal/ctr"
	"github.com/google/go-containerregistry/pkg/authn"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// WithPullSecrets names the image pull secrets of the namespace (Secrets
// of type kubernetes.io/dockerconfigjson, as kubectl create secret
// docker-registry makes them, or the older kubernetes.io/dockercfg). Every
// pod ccrun creates, cold or warm, lists them as its imagePullSecrets, so
// that its node may pull from a private registry; and the registry reads
// ccrun makes itself, once a call is allowed (Resolve's lookup of a tag,
// ImageCommand's configuration), use their credentials first, then the
// user's Docker configuration: ccrun asks the registry as the nodes will.
// Reading them needs get on those secrets (RBAC resourceNames); a secret
// that is missing, unreadable or of another type fails the registry read
// (fail closed), saying which. Default: none.
func WithPullSecrets(names ...string) Option {
	return func(e *Executor) error {
		seen := map[string]bool{}
		for _, n := range names {
			if errs := validation.IsDNS1123Subdomain(n); len(errs) > 0 {
				return newError(ErrInvalidArgument, nil, "kube: pull secret %q: not a secret's name (%s)", n, strings.Join(errs, "; "))
			}
			if !seen[n] {
				seen[n] = true
				e.pullSecrets = append(e.pullSecrets, n)
			}
		}
		return nil
	}
}

// PullSecrets are the pull secrets of e's pods (WithPullSecrets).
func (e *Executor) PullSecrets() []string { return append([]string(nil), e.pullSecrets...) }

// pullSecretRefs are the pods' imagePullSecrets.
func (e *Executor) pullSecretRefs() []corev1.LocalObjectReference {
	var refs []corev1.LocalObjectReference
	for _, n := range e.pullSecrets {
		refs = append(refs, corev1.LocalObjectReference{Name: n})
	}
	return refs
}

// keychain is the credentials of ccrun's own registry reads: the pull
// secrets' (read now, from the API server), then the user's Docker
// configuration's (authn.DefaultKeychain).
func (e *Executor) keychain(ctx context.Context) (authn.Keychain, error) {
	if len(e.pullSecrets) == 0 {
		return authn.DefaultKeychain, nil
	}
	var kc secretKeychain
	for _, n := range e.pullSecrets {
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		sec, err := e.api.Secrets(e.namespace).Get(rctx, n, metav1.GetOptions{})
		cancel()
		switch {
		case apierrors.IsNotFound(err):
			return nil, newError(ErrNotFound, err, "kube: pull secret %s/%s does not exist: create it (kubectl create secret docker-registry %s -n %s …) or name another in the settings' pull_secrets", e.namespace, n, n, e.namespace)
		case apierrors.IsForbidden(err):
			return nil, newError(ctr.ErrRefused, err, "kube: pull secret %s/%s: forbidden (RBAC: ccrun reads the registry's credentials of the pull secrets it names, and needs get on secrets, resourceNames %s)", e.namespace, n, strings.Join(e.pullSecrets, ", "))
		case err != nil:
			return nil, classify(e.server, "get pull secret "+n, err)
		}
		auths, err := dockerAuths(sec)
		if err != nil {
			return nil, newError(ErrInvalidArgument, err, "kube: pull secret %s/%s", e.namespace, n)
		}
		kc = append(kc, auths...)
	}
	return authn.NewMultiKeychain(kc, authn.DefaultKeychain), nil
}

// registryAuth is one entry of a docker configuration's auths: where it
// applies (a registry host[:port], "*." allowed for one label, and an
// optional path prefix of the repository), and the credentials.
type registryAuth struct {
	host, path string
	cfg        authn.AuthConfig
}

// dockerAuths are the entries of a pull secret's docker configuration.
func dockerAuths(sec *corev1.Secret) ([]registryAuth, error) {
	var auths map[string]struct {
		Username      string `json:"username"`
		Password      string `json:"password"`
		Auth          string `json:"auth"`
		IdentityToken string `json:"identitytoken"`
		RegistryToken string `json:"registrytoken"`
	}
	switch sec.Type {
	case corev1.SecretTypeDockerConfigJson:
		var cfg struct {
			Auths json.RawMessage `json:"auths"`
		}
		if err := json.Unmarshal(sec.Data[corev1.DockerConfigJsonKey], &cfg); err != nil || cfg.Auths == nil {
			return nil, newError(ErrInvalidArgument, err, "its %s is not a docker configuration with auths", corev1.DockerConfigJsonKey)
		}
		if err := json.Unmarshal(cfg.Auths, &auths); err != nil {
			return nil, newError(ErrInvalidArgument, err, "its %s auths", corev1.DockerConfigJsonKey)
		}
	case corev1.SecretTypeDockercfg:
		if err := json.Unmarshal(sec.Data[corev1.DockerConfigKey], &auths); err != nil {
			return nil, newError(ErrInvalidArgument, err, "its %s is not a docker configuration", corev1.DockerConfigKey)
		}
	default:
		return nil, newError(ErrInvalidArgument, nil, "type %q: want %s (kubectl create secret docker-registry)", sec.Type, corev1.SecretTypeDockerConfigJson)
	}
	var out []registryAuth
	for _, key := range slices.Sorted(maps.Keys(auths)) { // in one order, call after call
		a := auths[key]
		c := authn.AuthConfig{Username: a.Username, Password: a.Password, IdentityToken: a.IdentityToken, RegistryToken: a.RegistryToken}
		if c.Username == "" && c.Password == "" && a.Auth != "" {
			b, err := base64.StdEncoding.DecodeString(a.Auth)
			user, pass, ok := strings.Cut(string(b), ":")
			if err != nil || !ok {
				return nil, newError(ErrInvalidArgument, err, "the auth of %q is not base64 of user:password", key)
			}
			c.Username, c.Password = user, pass
		}
		host, path := authKey(key)
		out = append(out, registryAuth{host: host, path: path, cfg: c})
	}
	return out, nil
}

// authKey is where an auths key applies: its host (Docker Hub's names as
// docker.io) and path, without a scheme.
func authKey(key string) (host, path string) {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, path, _ = strings.Cut(key, "/")
	host = hubHost(strings.ToLower(host))
	if host == "docker.io" && (path == "v1/" || path == "v1" || path == "v2/" || path == "v2") {
		path = "" // the Hub's index URL, https://index.docker.io/v1/
	}
	return host, strings.Trim(path, "/")
}

// hubHost spells Docker Hub's host names as one.
func hubHost(h string) string {
	switch h {
	case "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return "docker.io"
	}
	return h
}

// secretKeychain is the pull secrets' credentials, in their order.
type secretKeychain []registryAuth

// Resolve is the credentials of the most specific entry for r (the
// longest path prefix of its repository; of equal ones an exact host
// before a wildcard, then the first), else anonymous (the next
// keychain's turn).
func (kc secretKeychain) Resolve(r authn.Resource) (authn.Authenticator, error) {
	host := hubHost(strings.ToLower(r.RegistryStr()))
	repo := strings.TrimPrefix(r.String(), r.RegistryStr())
	repo = strings.Trim(repo, "/")
	best, bestLen, bestExact := -1, -1, false
	for i, a := range kc {
		if !hostMatch(a.host, host) {
			continue
		}
		if a.path != "" && repo != a.path && !strings.HasPrefix(repo, a.path+"/") {
			continue
		}
		exact := a.host == host
		if len(a.path) > bestLen || len(a.path) == bestLen && exact && !bestExact {
			best, bestLen, bestExact = i, len(a.path), exact
		}
	}
	if best < 0 {
		return authn.Anonymous, nil
	}
	return authn.FromConfig(kc[best].cfg), nil
}

// hostMatch says whether the pattern (a host[:port], each label "*" or
// "*.rest"-style globs of one label) names host; ports must be equal.
func hostMatch(pattern, host string) bool {
	if pattern == host {
		return true
	}
	ph, pp, _ := strings.Cut(pattern, ":")
	hh, hp, _ := strings.Cut(host, ":")
	if pp != hp {
		return false
	}
	pl, hl := strings.Split(ph, "."), strings.Split(hh, ".")
	if len(pl) != len(hl) {
		return false
	}
	for i := range pl {
		if pl[i] != "*" && pl[i] != hl[i] {
			return false
		}
	}
	return true
}
