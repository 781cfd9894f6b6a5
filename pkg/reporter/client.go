package reporter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// NewHeartbeatClient returns a client for heartbeats built from a copy of
// cfg: protobuf on the wire, uncompressed, no client-side throttling (a
// heartbeat held back by a rate limiter is a heartbeat missed), and every
// request but a watch bounded by timeout, which should not exceed the lease
// duration so that a hung request cannot outlive the Lease it renews.
// Without a UserAgent in cfg, requests identify themselves as
// node-lifecycle-reporter/<version> (<os>/<arch>), the version being that of
// this module. The returned func closes the idle connections of the client's
// transport; pass it as Config.OnRepeatedFailure so that a connection that
// died silently is not reused forever.
//
// One client can serve a whole fleet of reporters.
func NewHeartbeatClient(cfg *rest.Config, timeout time.Duration) (kubernetes.Interface, func(), error) {
	if cfg == nil {
		return nil, nil, errors.New("heartbeat client: nil rest config")
	}
	if timeout <= 0 {
		return nil, nil, fmt.Errorf("heartbeat client: timeout must be positive, got %v", timeout)
	}
	c := rest.CopyConfig(cfg)
	c.ContentType = k8sruntime.ContentTypeProtobuf
	c.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	c.QPS = -1
	c.RateLimiter = nil
	// Not c.Timeout: it would end the reporter's watch of its Node too,
	// which then starts again every timeout.
	c.Timeout = 0
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &boundedTransport{next: rt, timeout: timeout} })
	// Heartbeats are too small for the apiserver to compress, but it
	// compresses watches, and each gzip reader keeps a 32 KiB window: a
	// fleet of reporters would hold one for every node's watch.
	c.DisableCompression = true
	if c.UserAgent == "" {
		// The typed clients would default it too, but only after the HTTP
		// client is built, which then sends Go's default User-Agent.
		c.UserAgent = defaultUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, nil, fmt.Errorf("heartbeat client: build HTTP client: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, nil, fmt.Errorf("heartbeat client: %w", err)
	}
	closeIdle := func() { utilnet.CloseIdleConnectionsFor(httpClient.Transport) }
	return client, closeIdle, nil
}

// The identity of a node's credential, which the Node authorizer and the
// NodeRestriction admission plugin recognize (they read the node's name
// from the user name). Spelled out rather than imported from
// k8s.io/apiserver, which a node agent should not need.
const (
	nodeUserPrefix = "system:node:"
	nodesGroup     = "system:nodes"
)

// ImpersonateNode returns a copy of cfg whose requests act as the node
// nodeName: user system:node:<nodeName> in group system:nodes, the identity
// of a kubelet's own credential. It is for a node agent that holds a
// credential of its own rather than its node's, in a cluster that runs the
// Node authorizer and the NodeRestriction admission plugin: the reporter's
// writes are then held to what a kubelet may write, its own Node and its
// own Lease in kube-node-lease, and the apiserver records them as the
// node's. The credential of cfg must be allowed to impersonate that user
// and group (the RBAC verb impersonate on users and groups, best limited by
// resourceNames to the node's user name and system:nodes); it needs no
// other right on Nodes or Leases.
//
// Build the heartbeat client from the copy (NewHeartbeatClient), one for
// each node: the identity belongs to the client, so a fleet's reporters,
// which share one, cannot use it. nodeName should be the Config.NodeName of
// the reporter the client serves; NodeRestriction refuses the writes of
// any other. A cfg that already impersonates someone is an error: requests
// carry one identity.
func ImpersonateNode(cfg *rest.Config, nodeName string) (*rest.Config, error) {
	if cfg == nil {
		return nil, fmt.Errorf("impersonate node %q: nil rest config", nodeName)
	}
	if msgs := validation.IsDNS1123Subdomain(nodeName); len(msgs) > 0 {
		return nil, fmt.Errorf("impersonate node %q: invalid node name: %s", nodeName, strings.Join(msgs, "; "))
	}
	if imp := cfg.Impersonate; imp.UserName != "" || imp.UID != "" || len(imp.Groups) > 0 || len(imp.Extra) > 0 {
		return nil, fmt.Errorf("impersonate node %q: rest config already impersonates user %q", nodeName, imp.UserName)
	}
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{
		UserName: nodeUserPrefix + nodeName,
		Groups:   []string{nodesGroup},
	}
	return c, nil
}

// defaultUserAgent is the User-Agent of a heartbeat client whose config sets
// none, in the form of the kubelet's: name/version (os/arch).
func defaultUserAgent() string {
	info, _ := debug.ReadBuildInfo() // nil without build info
	// The module is found from this package's path rather than named, so
	// that a renamed or vendored module still reports its version.
	pkg := reflect.TypeFor[Reporter]().PkgPath()
	return fmt.Sprintf("%s/%s (%s/%s)", userAgentName, moduleVersion(info, pkg), runtime.GOOS, runtime.GOARCH)
}

// userAgentName names the reporter in the User-Agent of its requests.
const userAgentName = "node-lifecycle-reporter"

// moduleVersion returns the version of the module that holds the package
// pkg in the build described by info, or "dev" when the build does not
// say: a binary built from a checkout rather than from a tagged module.
func moduleVersion(info *debug.BuildInfo, pkg string) string {
	const unknown = "dev"
	if info == nil {
		return unknown
	}
	var mod *debug.Module
	for _, m := range append([]*debug.Module{&info.Main}, info.Deps...) {
		if m.Path != "" && (pkg == m.Path || strings.HasPrefix(pkg, m.Path+"/")) &&
			(mod == nil || len(m.Path) > len(mod.Path)) {
			mod = m
		}
	}
	if mod == nil {
		return unknown
	}
	if mod.Replace != nil {
		mod = mod.Replace
	}
	if mod.Version == "" || mod.Version == "(devel)" {
		return unknown
	}
	return mod.Version
}

// boundedTransport ends every request but a watch after timeout, the
// reading of its response included, as http.Client's Timeout does. A watch
// is meant to last; the apiserver ends it when the timeout it asks for has
// passed.
type boundedTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

// RoundTrip sends req, bounded by the timeout unless it is a watch.
func (t *boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Query().Get("watch") == "true" {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// WrappedRoundTripper lets client-go reach the transport underneath, to
// close its idle connections.
func (t *boundedTransport) WrappedRoundTripper() http.RoundTripper {
	return t.next
}

// cancelOnClose ends the context of a request once its response is read.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

// Close closes the body and ends the request's context.
func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
