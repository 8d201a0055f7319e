// Package kapi is the part of the Kubernetes API that runtime/kube uses,
// over client-go's rest.RESTClient with a scheme of core/v1 and
// networking/v1 only: pods (create, get, list, watch, patch, delete),
// config maps, secrets, network policies, namespaces, nodes, the server's version,
// and the URLs of a pod's attach and exec sessions.
//
// It stands in for client-go's typed clientset (k8s.io/client-go/kubernetes),
// whose packages register every API group of Kubernetes at init and bring
// discovery, OpenAPI and server-side apply along: milliseconds of every
// ccrun process's start, for a command that never talks to a cluster. Here
// the scheme is built when the first Client is. The requests are the
// clientset's, byte for byte (protobuf preferred, the same paths and
// parameters), and so are the errors: an API status is an error of
// k8s.io/apimachinery/pkg/api/errors (IsNotFound, IsAlreadyExists, ...).
//
// A Client is safe for concurrent use.
package kapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// codecs are the scheme's serializers and its parameter codec, made once.
type codecs struct {
	serializer runtime.NegotiatedSerializer
	params     runtime.ParameterCodec
}

var schemeCodecs = sync.OnceValue(func() codecs {
	s := runtime.NewScheme()
	// The options and status kinds of meta/v1 in the core group, as
	// client-go's scheme has them; each group's AddToScheme adds them to
	// its own version.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(networkingv1.AddToScheme(s))
	return codecs{
		serializer: rest.CodecFactoryForGeneratedClient(s, serializer.NewCodecFactory(s)).WithoutConversion(),
		params:     runtime.NewParameterCodec(s),
	}
})

// Client talks to one API server. Make it with New.
type Client struct {
	core       *rest.RESTClient // /api/v1
	networking *rest.RESTClient // /apis/networking.k8s.io/v1
	params     runtime.ParameterCodec
}

// New makes a Client of cfg as client-go's kubernetes.NewForConfig makes
// a clientset: one HTTP client and one rate limiter (cfg.QPS and
// cfg.Burst, unless cfg.RateLimiter is set) shared by its groups, and
// client-go's user agent where cfg names none.
func New(cfg *rest.Config) (*Client, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	hc, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("kapi: burst %d: want more than 0 with QPS %g", c.Burst, c.QPS)
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	cd := schemeCodecs()
	c.NegotiatedSerializer = cd.serializer
	group := func(gv schema.GroupVersion, path string) (*rest.RESTClient, error) {
		gc := c
		gc.GroupVersion, gc.APIPath = &gv, path
		return rest.RESTClientForConfigAndClient(&gc, hc)
	}
	core, err := group(corev1.SchemeGroupVersion, "/api")
	if err != nil {
		return nil, err
	}
	networking, err := group(networkingv1.SchemeGroupVersion, "/apis")
	if err != nil {
		return nil, err
	}
	return &Client{core: core, networking: networking, params: cd.params}, nil
}

// Resource is one resource of the API, in one namespace ("": cluster
// scoped, or every namespace), whose objects are T and lists L.
type Resource[T, L runtime.Object] struct {
	rc        *rest.RESTClient
	params    runtime.ParameterCodec
	namespace string
	resource  string
	newObject func() T
	newList   func() L
}

// resource is the resource name of rc's group, its objects an O and its
// lists an LO.
func resource[O, LO any, T interface {
	*O
	runtime.Object
}, L interface {
	*LO
	runtime.Object
}](c *Client, rc *rest.RESTClient, namespace, name string) Resource[T, L] {
	return Resource[T, L]{rc: rc, params: c.params, namespace: namespace, resource: name,
		newObject: func() T { return new(O) }, newList: func() L { return new(LO) }}
}

// Pods of a namespace.
func (c *Client) Pods(namespace string) Resource[*corev1.Pod, *corev1.PodList] {
	return resource[corev1.Pod, corev1.PodList](c, c.core, namespace, "pods")
}

// ConfigMaps of a namespace.
func (c *Client) ConfigMaps(namespace string) Resource[*corev1.ConfigMap, *corev1.ConfigMapList] {
	return resource[corev1.ConfigMap, corev1.ConfigMapList](c, c.core, namespace, "configmaps")
}

// Secrets of a namespace (the pull secrets runtime/kube reads, by name).
func (c *Client) Secrets(namespace string) Resource[*corev1.Secret, *corev1.SecretList] {
	return resource[corev1.Secret, corev1.SecretList](c, c.core, namespace, "secrets")
}

// NetworkPolicies of a namespace.
func (c *Client) NetworkPolicies(namespace string) Resource[*networkingv1.NetworkPolicy, *networkingv1.NetworkPolicyList] {
	return resource[networkingv1.NetworkPolicy, networkingv1.NetworkPolicyList](c, c.networking, namespace, "networkpolicies")
}

// Namespaces of the cluster.
func (c *Client) Namespaces() Resource[*corev1.Namespace, *corev1.NamespaceList] {
	return resource[corev1.Namespace, corev1.NamespaceList](c, c.core, "", "namespaces")
}

// Nodes of the cluster.
func (c *Client) Nodes() Resource[*corev1.Node, *corev1.NodeList] {
	return resource[corev1.Node, corev1.NodeList](c, c.core, "", "nodes")
}

// on makes req a request for r, protobuf preferred, as the clientset's
// generated clients make it.
func (r Resource[T, L]) on(req *rest.Request) *rest.Request {
	return req.UseProtobufAsDefault().NamespaceIfScoped(r.namespace, r.namespace != "").Resource(r.resource)
}

// Get reads the object name.
func (r Resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObject()
	err := r.on(r.rc.Get()).Name(name).VersionedParams(&opts, r.params).Do(ctx).Into(out)
	return out, err
}

// List lists the objects that opts selects.
func (r Resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.on(r.rc.Get()).VersionedParams(&opts, r.params).Timeout(timeout(opts)).Do(ctx).Into(out)
	return out, err
}

// Watch watches the objects that opts selects.
func (r Resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.on(r.rc.Get()).VersionedParams(&opts, r.params).Timeout(timeout(opts)).Watch(ctx)
}

// Create creates obj and returns what the API server made of it.
func (r Resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObject()
	err := r.on(r.rc.Post()).VersionedParams(&opts, r.params).Body(obj).Do(ctx).Into(out)
	return out, err
}

// Patch applies a patch of type pt to the object name.
func (r Resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions) (T, error) {
	out := r.newObject()
	err := r.on(r.rc.Patch(pt)).Name(name).VersionedParams(&opts, r.params).Body(data).Do(ctx).Into(out)
	return out, err
}

// Delete deletes the object name.
func (r Resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.on(r.rc.Delete()).Name(name).Body(&opts).Do(ctx).Error()
}

func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// PodURL is the URL of a subresource of a pod that a session opens
// ("attach", "exec"), its options (a *corev1.PodAttachOptions or
// *corev1.PodExecOptions) in the query.
func (c *Client) PodURL(namespace, pod, subresource string, opts runtime.Object) *url.URL {
	return c.core.Post().Namespace(namespace).Resource("pods").Name(pod).SubResource(subresource).
		VersionedParams(opts, c.params).URL()
}

// ServerVersion asks the API server its version (GET /version), as the
// clientset's discovery client does.
func (c *Client) ServerVersion(ctx context.Context) (*version.Info, error) {
	body, err := c.core.Get().AbsPath("/version").Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	var info version.Info
	if err := json.Unmarshal(body, &info); err != nil {
		return nil, fmt.Errorf("kapi: the server's version: %w", err)
	}
	return &info, nil
}
