package reporter

import (
	"context"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	hollow "github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

var (
	kubeletWindow = flag.Duration("kubelet.window", 0, "measure hollow kubelets and reporters side by side over this long (TestHeartbeatCostAgainstKubelet); 0 skips it")
	kubeletSettle = flag.Duration("kubelet.settle", 8*time.Minute, "how long TestHeartbeatCostAgainstKubelet lets the nodes run, once all are Ready, before it measures")
	kubeletNodes  = flag.Int("kubelet.nodes", 5, "how many hollow kubelets, and as many reporters, TestHeartbeatCostAgainstKubelet runs")
)

// TestHeartbeatCostAgainstKubelet runs -kubelet.nodes hollow kubelets
// (kubemark, the kubelet's own code) and as many reporters with the same
// timings (the Lease lasts 40s and is renewed every 10s, the status is
// computed every 10s and reported on a change or every 5m) against one
// envtest apiserver, each party through a counting proxy of its own, and
// reports their requests by verb and resource and the bytes of request and
// response bodies (watch streams included) per node-hour, in all and on
// Nodes and Leases alone, the heartbeats. It fails unless the reporter costs
// no more than the kubelet in requests, bytes written and bytes read, or
// sends anything but heartbeats.
//
// Both run in real time, with their jitter, so the node-hour is
// extrapolated: the counts over -kubelet.window, started -kubelet.settle
// after every Node is Ready, times an hour over the window, over the
// nodes. The default settling covers the start-up: the registration, the
// status changes of the first seconds, and the report that follows them at
// a random point up to 7.5 minutes later, after which each node reports
// every 5 minutes. heartbeat-cost.md quotes it.
func TestHeartbeatCostAgainstKubelet(t *testing.T) {
	if *kubeletWindow <= 0 {
		t.Skip("set -kubelet.window, e.g. 10m, to measure hollow kubelets beside reporters")
	}
	kubemark, err := hollow.KubemarkBinary(filepath.Join("..", "..", "bin", "kubemark"))
	if err != nil {
		t.Fatal(err)
	}
	// As in the harness: no controller manager creates service accounts.
	env, adminCfg, admin := startControlPlane(t, func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().Set("disable-admission-plugins", "ServiceAccount")
	})
	kubelets := startCountingProxy(t, env, "hollow-kubelet")
	reporters := startCountingProxy(t, env, "node-reporter")
	ctx := klog.NewContext(t.Context(), logr.Discard())

	n := *kubeletNodes
	kubeletNames, reporterNames := make([]string, n), make([]string, n)
	for i := range n {
		// Names of the same length, so that the Nodes and Leases weigh
		// alike.
		kubeletNames[i], reporterNames[i] = fmt.Sprintf("hollow-%03d", i), fmt.Sprintf("report-%03d", i)
	}
	runReporters(ctx, t, reporters.config(), reporterNames)
	started, err := hollow.StartHollowKubelets(ctx, hollow.HollowKubeletConfig{
		Binary: kubemark, Kubeconfig: kubelets.kubeconfig(t), Dir: t.TempDir(),
	}, kubeletNames...)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range started {
		t.Cleanup(k.Close)
	}
	for _, name := range append(slices.Clone(kubeletNames), reporterNames...) {
		waitReady(ctx, t, admin, name)
	}

	if !sleepCtx(ctx, *kubeletSettle) {
		t.Fatal(ctx.Err())
	}
	kubelets.counter.take()
	reporters.counter.take()
	if !sleepCtx(ctx, *kubeletWindow) {
		t.Fatal(ctx.Err())
	}
	kubeletTraffic, reporterTraffic := kubelets.counter.take(), reporters.counter.take()

	perNodeHour := float64(time.Hour) / float64(*kubeletWindow) / float64(n)
	t.Logf("%d hollow kubelets and %d reporters, over %v after %v settling; per node-hour:", n, n, *kubeletWindow, *kubeletSettle)
	logTraffic(t, "hollow kubelet", kubeletTraffic, perNodeHour)
	logTraffic(t, "reporter", reporterTraffic, perNodeHour)
	logNodeSizes(ctx, t, adminCfg, kubeletNames[0], reporterNames[0])

	kubelet, mine := kubeletTraffic.total(), reporterTraffic.total()
	if mine.requests > kubelet.requests || mine.written > kubelet.written || mine.read > kubelet.read {
		t.Errorf("the reporter costs more than the kubelet: %d requests, %d bytes written and %d read in the window, against %d, %d and %d",
			mine.requests, mine.written, mine.read, kubelet.requests, kubelet.written, kubelet.read)
	}
	if other := mine.requests - reporterTraffic.heartbeats().requests; other != 0 {
		t.Errorf("the reporter sent %d requests of neither Nodes nor Leases", other)
	}
}

// runReporters runs a reporter of each name with the default timings,
// writing through cfg, until the test ends.
func runReporters(ctx context.Context, t *testing.T, cfg *rest.Config, names []string) {
	t.Helper()
	client, _, err := NewHeartbeatClient(cfg, time.Duration(DefaultLeaseDurationSeconds)*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	for _, name := range names {
		r, err := New(client, clock.RealClock{}, Config{NodeName: name})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = r.Run(ctx) })
	}
}

// waitReady waits for the Node name to be registered and Ready.
func waitReady(ctx context.Context, t *testing.T, c kubernetes.Interface, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		node, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // not registered yet
		}
		return condition(node, corev1.NodeReady).Status == corev1.ConditionTrue, nil
	})
	if err != nil {
		t.Fatalf("node %s never Ready: %v", name, err)
	}
}

// sleepCtx waits d in real time, which is what is measured, and says
// whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// logNodeSizes logs the size of a hollow kubelet's Node and of a reporter's,
// in protobuf as both read and write them.
func logNodeSizes(ctx context.Context, t *testing.T, adminCfg *rest.Config, names ...string) {
	t.Helper()
	cfg := rest.CopyConfig(adminCfg)
	cfg.ContentType = k8sruntime.ContentTypeProtobuf
	cfg.AcceptContentTypes = k8sruntime.ContentTypeProtobuf
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		raw, err := c.CoreV1().RESTClient().Get().Resource("nodes").Name(name).Do(ctx).Raw()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("Node %s: %d bytes", name, len(raw))
	}
}

// logTraffic logs what one party sent and received, per node-hour, by verb
// and resource.
func logTraffic(t *testing.T, party string, traffic trafficTally, perNodeHour float64) {
	t.Helper()
	t.Logf("%-14s %-52s %9s %14s %14s", party, "verb resource (field selector)", "requests", "bytes written", "bytes read")
	for _, k := range slices.SortedFunc(maps.Keys(traffic), func(a, b trafficKey) int {
		return strings.Compare(a.resource+a.verb, b.resource+b.verb)
	}) {
		s := traffic[k]
		t.Logf("%-14s %-52s %9.1f %14.0f %14.0f", "", k, float64(s.requests)*perNodeHour, float64(s.written)*perNodeHour, float64(s.read)*perNodeHour)
	}
	for _, row := range []struct {
		name string
		s    trafficStat
	}{{"heartbeats (Nodes, Leases)", traffic.heartbeats()}, {"total", traffic.total()}} {
		t.Logf("%-14s %-52s %9.1f %14.0f %14.0f", "", row.name, float64(row.s.requests)*perNodeHour,
			float64(row.s.written)*perNodeHour, float64(row.s.read)*perNodeHour)
	}
}

// countingProxy is a TLS reverse proxy in front of the apiserver that
// counts what passes through it. It authenticates to the apiserver as a
// user of its own, a member of system:masters; its clients need no
// credential.
type countingProxy struct {
	url     string
	caPEM   []byte
	counter *trafficCounter
}

// startCountingProxy starts a counting proxy for the user name until the
// test ends.
func startCountingProxy(t *testing.T, env *envtest.Environment, user string) *countingProxy {
	t.Helper()
	u, err := env.AddUser(envtest.User{Name: user, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	upstream := u.Config()
	rt, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	counter := &trafficCounter{}
	srv := httptest.NewUnstartedServer(&httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport: &trafficTransport{next: rt, counter: counter},
		// Watch events pass at once.
		FlushInterval: -1,
		// A watch its client ends is reported as an error.
		ErrorLog: log.New(io.Discard, "", 0),
	})
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return &countingProxy{
		url:     srv.URL,
		caPEM:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
		counter: counter,
	}
}

// config is a rest config that reaches the apiserver through the proxy.
func (p *countingProxy) config() *rest.Config {
	return &rest.Config{Host: p.url, TLSClientConfig: rest.TLSClientConfig{CAData: p.caPEM}}
}

// kubeconfig writes a kubeconfig that reaches the apiserver through the
// proxy, and returns its path.
func (p *countingProxy) kubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{Server: p.url, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// trafficKey is a kind of request: its verb, as the apiserver's audit names
// it, and its resource, with the field of its field selector if it has one.
type trafficKey struct {
	verb, resource, selector string
}

func (k trafficKey) String() string {
	s := k.verb + " " + k.resource
	if k.selector != "" {
		s += " (" + k.selector + ")"
	}
	return s
}

// trafficStat is what requests of one kind cost: how many were sent, and the
// bytes of their request and response bodies.
type trafficStat struct {
	requests, written, read int64
}

func (s *trafficStat) add(o trafficStat) {
	s.requests += o.requests
	s.written += o.written
	s.read += o.read
}

// trafficTally is what a party's requests cost, by kind.
type trafficTally map[trafficKey]trafficStat

// total is the cost of every request.
func (t trafficTally) total() trafficStat {
	var s trafficStat
	for _, v := range t {
		s.add(v)
	}
	return s
}

// heartbeats is the cost of the requests on Nodes and Leases: a node's
// heartbeats, and the reads of its Node that it computes its status
// against.
func (t trafficTally) heartbeats() trafficStat {
	var s trafficStat
	for k, v := range t {
		if k.resource == "leases" || k.resource == "nodes" || strings.HasPrefix(k.resource, "nodes/") {
			s.add(v)
		}
	}
	return s
}

// trafficCounter tallies the requests of a trafficTransport. Bodies are
// read by the proxy's and the transport's goroutines, hence the lock.
type trafficCounter struct {
	mu sync.Mutex
	t  trafficTally
}

func (c *trafficCounter) add(k trafficKey, s trafficStat) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t == nil {
		c.t = trafficTally{}
	}
	v := c.t[k]
	v.add(s)
	c.t[k] = v
}

// take returns the tally so far and starts a new one.
func (c *trafficCounter) take() trafficTally {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = trafficTally{}
	return t
}

// trafficTransport counts the requests it carries, and the bytes of their
// bodies as they are read: a watch's as its events arrive.
type trafficTransport struct {
	next    http.RoundTripper
	counter *trafficCounter
}

func (t *trafficTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	k := requestKey(req)
	t.counter.add(k, trafficStat{requests: 1})
	if req.Body != nil && req.Body != http.NoBody {
		req = req.Clone(req.Context())
		req.Body = &costBody{ReadCloser: req.Body, count: func(n int) { t.counter.add(k, trafficStat{written: int64(n)}) }}
	}
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &costBody{ReadCloser: resp.Body, count: func(n int) { t.counter.add(k, trafficStat{read: int64(n)}) }}
	return resp, nil
}

// requestKey names the kind of an API request from its method and URL, as
// /api/v1/namespaces/<ns>/pods?watch=true&fieldSelector=spec.nodeName%3Dx.
func requestKey(req *http.Request) trafficKey {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return trafficKey{verb: strings.ToLower(req.Method), resource: req.URL.Path}
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	k := trafficKey{resource: strings.Join(slices.Delete(slices.Clone(parts), min(1, len(parts)), min(2, len(parts))), "/")}
	query := req.URL.Query()
	// The field alone: its value names the node.
	if selector := query.Get("fieldSelector"); selector != "" {
		k.selector = selector[:strings.IndexAny(selector, "!=")]
	}
	named := len(parts) >= 2
	switch req.Method {
	case http.MethodGet:
		switch {
		case query.Get("watch") == "true" || query.Get("watch") == "1":
			k.verb = "watch"
		case named:
			k.verb = "get"
		default:
			k.verb = "list"
		}
	case http.MethodPost:
		k.verb = "create"
	case http.MethodPut:
		k.verb = "update"
	default:
		k.verb = strings.ToLower(req.Method)
	}
	return k
}
