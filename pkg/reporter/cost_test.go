package reporter

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

// BenchmarkHeartbeatCost counts what one node's heartbeats cost a real
// kube-apiserver (envtest) per hour: requests by verb, the bytes of the
// request and response bodies, and the bytes of the objects the writes
// stored, in two modes:
//
//   - lease: the reporter with its defaults, as the kubelet since KEP-589
//     (node leases). The Lease is renewed every 0.25 x 40s; the status is
//     computed every 10s, against the Node as the reporter's watch of it
//     shows it, but written only when it changed meaningfully or 5m after
//     the last write.
//   - status-every-10s: the kubelet before KEP-589. No Lease and no watch;
//     the Node is read and its status written at every sync, every 10s, so
//     that the conditions' lastHeartbeatTime is the heartbeat.
//
// and for two Nodes:
//
//   - small-node: the status of the default setters, 1.7 KB of JSON as
//     kubectl shows it (1.4 KB stored, in protobuf).
//   - kubelet-node: the same with the 50 container images a kubelet lists
//     in status.images (50 is its nodeStatusMaxImages default): 11.4 KB of
//     JSON (9.8 KB stored), as Nodes of real clusters are. The images do
//     not change, so they are no reason to write.
//
// Each iteration registers a new Node, then steps a fake clock through the
// hour that follows and calls the lease renewal and the status sync at the
// times the reporter's loops would; every request is real. Jitter is
// ignored: the loops lengthen each interval by up to 4%, so the un-jittered
// schedule is an upper bound. Registration (the Node's creation and, with a
// Lease, the start of the watch and the first renewal, which creates the
// Lease) is reported apart, per node. The watch, opened at registration,
// lasts the fake hour, which takes seconds; in real time it is opened again
// every 30 to 60 minutes (TestHeartbeatCostAgainstKubelet counts it so).
// Bytes are those of HTTP bodies, in protobuf as the heartbeat client sends
// and accepts them, watch events included, without headers or TLS framing.
//
// object-bytes-persisted/node-hour adds up the response bodies of the
// successful writes: the apiserver answers a POST, PUT or PATCH with the
// object as it stored it, managed fields included. It stands for the
// server's side of a heartbeat, which the size of the request hides: the
// object written to etcd, and sent again to every watcher of Nodes or
// Leases (the node lifecycle controller, the scheduler, every other
// informer), once per watcher. Encodings differ a little (etcd's envelope,
// a JSON watcher's longer text), so it is a proxy for those bytes, not a
// count of them. node-bytes is the size of the Node in the same encoding.
//
// It needs KUBEBUILDER_ASSETS, as `make bench` sets it.
func BenchmarkHeartbeatCost(b *testing.B) {
	cfg := costStartEnv(b)
	modes := []costMode{
		{name: "lease", lease: true},
		{
			// Run always renews the Lease, so the Config cannot express a
			// kubelet without one; the benchmark drives the reporter's
			// methods itself and simply never renews. A report frequency
			// no longer than the update frequency makes every sync write,
			// and every write stamps the lastHeartbeatTime of the
			// reporter's conditions (stampConditions).
			name: "status-every-10s",
			cfg:  Config{NodeStatusReportFrequency: DefaultNodeStatusUpdateFrequency},
		},
	}
	nodes := []costNode{
		{name: "small-node", minJSON: 1000, maxJSON: 2000},
		{name: "kubelet-node", images: costImages(), minJSON: 10 << 10, maxJSON: 12 << 10},
	}
	// Nodes are numbered across the sub-benchmarks, which share the
	// apiserver. Their names have the same length, so that they weigh the
	// same in every mode.
	var seq int
	for _, mode := range modes {
		b.Run(mode.name, func(b *testing.B) {
			for _, node := range nodes {
				b.Run(node.name, func(b *testing.B) {
					costRun(b, cfg, mode, node, &seq)
				})
			}
		})
	}
}

// costMode is one way of sending heartbeats.
type costMode struct {
	// name names the sub-benchmark.
	name string
	// lease says whether the Lease is renewed and the Node watched, as Run
	// does.
	lease bool
	// cfg is the reporter's Config, but for the node name and setters.
	cfg Config
}

// costNode is a kind of Node whose heartbeats are counted.
type costNode struct {
	// name names the sub-benchmark.
	name string
	// images are the container images its status lists.
	images []corev1.ContainerImage
	// minJSON and maxJSON bound the size of the Node in JSON, as kubectl
	// shows it (without managed fields), so that the fixture stays what it
	// claims to be.
	minJSON, maxJSON int
}

// config returns the reporter's Config of the node named name, in mode.
func (n costNode) config(mode costMode, name string) Config {
	cfg := mode.cfg
	cfg.NodeName = name
	cfg.Images = n.images
	return cfg
}

// costStartEnv starts a control plane that lasts as long as b.
func costStartEnv(b *testing.B) *rest.Config {
	b.Helper()
	_, cfg, _ := startControlPlane(b, testenv.WithoutServiceAccounts)
	return cfg
}

// costRun runs the node-hours of mode through a counting heartbeat client
// and reports what they cost. seq numbers the nodes.
func costRun(b *testing.B, envCfg *rest.Config, mode costMode, kind costNode, seq *int) {
	counter := &costCounter{}
	cfg := rest.CopyConfig(envCfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &costTransport{next: rt, counter: counter}
	})
	client, _, err := NewHeartbeatClient(cfg, time.Duration(DefaultLeaseDurationSeconds)*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	// Reads what the reporter wrote, uncounted, in the encoding the
	// reporter's writes were answered in.
	checkCfg := rest.CopyConfig(envCfg)
	checkCfg.ContentType = k8sruntime.ContentTypeProtobuf
	checkCfg.AcceptContentTypes = k8sruntime.ContentTypeProtobuf
	check, err := kubernetes.NewForConfig(checkCfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := klog.NewContext(b.Context(), logr.Discard())

	var registration, hours costTally
	var nodeBytes, nodeJSON int
	// b.Loop times the loop alone, so starting the control plane and the
	// clients is left out.
	for b.Loop() {
		*seq++
		rc := kind.config(mode, fmt.Sprintf("cost-node-%04d", *seq))
		clk := clocktesting.NewFakeClock(t0)
		r, err := New(client, clk, rc)
		if err != nil {
			b.Fatal(err)
		}
		// The middle of the spread: the registration's status is reported
		// again exactly one report interval later, every hour alike.
		r.random = func() float64 { return 0.5 }

		counter.take()
		if _, err := r.register(ctx); err != nil {
			b.Fatal(err)
		}
		stopWatch := func() {}
		if mode.lease {
			// Run watches the Node and renews the Lease as soon as the Node
			// is registered.
			stopWatch = costWatch(ctx, r)
			if err := r.renewLease(ctx); err != nil {
				b.Fatal(err)
			}
			costWatched(ctx, b, r)
		}
		registration.add(counter.take())

		renewals, renewed, syncs := costHour(ctx, b, r, clk, mode.lease)
		if mode.lease {
			// The watch has sent the last write.
			costWatched(ctx, b, r)
		}
		hour := counter.take()
		stopWatch()
		name := rc.NodeName
		if hour.failed > 0 {
			b.Fatalf("node %s: %d requests failed in the hour", name, hour.failed)
		}
		if hour.foreignAgents > 0 {
			b.Fatalf("node %s: %d requests without the reporter's User-Agent", name, hour.foreignAgents)
		}
		// Without a Lease every sync reads the Node and writes its status.
		// With one, the syncs read the Node from the watch, and an unchanged
		// status is written every report interval, a whole number of syncs
		// here, counted from the registration.
		want := map[string]int64{http.MethodGet: int64(syncs), http.MethodPatch: int64(syncs)}
		if mode.lease {
			want = map[string]int64{
				http.MethodPut:   int64(renewals),
				http.MethodPatch: int64(time.Hour / r.cfg.NodeStatusReportFrequency),
			}
		}
		if !maps.Equal(hour.requests, want) {
			b.Fatalf("node %s: requests in the hour = %v, want %v", name, hour.requests, want)
		}
		stored := costCheck(ctx, b, check, r, renewed)
		costCheckPersisted(b, name, hour, stored)
		if n := len(stored.node.Status.Images); n != len(kind.images) {
			b.Fatalf("node %s: %d images stored, want %d", name, n, len(kind.images))
		}
		nodeBytes = stored.nodeBytes
		nodeJSON = costJSONSize(b, stored.node)
		if nodeJSON < kind.minJSON || nodeJSON > kind.maxJSON {
			b.Fatalf("node %s: %d bytes of JSON, want %d to %d", name, nodeJSON, kind.minJSON, kind.maxJSON)
		}
		hours.add(hour)
	}

	n := float64(b.N)
	b.ReportMetric(float64(hours.total())/n, "requests/node-hour")
	b.ReportMetric(float64(hours.writes())/n, "writes/node-hour")
	b.ReportMetric(float64(hours.written)/n, "bytes-written/node-hour")
	b.ReportMetric(float64(hours.read)/n, "bytes-read/node-hour")
	b.ReportMetric(float64(hours.persistedTotal())/n, "object-bytes-persisted/node-hour")
	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodPost} {
		b.ReportMetric(float64(hours.requests[method])/n, method+"/node-hour")
	}
	b.ReportMetric(float64(registration.total())/n, "registration-requests/node")
	b.ReportMetric(float64(registration.written+registration.read)/n, "registration-bytes/node")
	b.ReportMetric(float64(nodeBytes), "node-bytes")
	b.ReportMetric(float64(nodeJSON), "node-json-bytes")
}

// costHour steps clk through the hour that follows registration, calling
// the lease renewal (when lease is set) and the status sync whenever the
// reporter's loops would without jitter. It returns how many times the
// Lease was renewed and when last, and how many times the status was
// synced. It calls renewLease and updateStatus, the work of the loops'
// renewLeaseUntilDone and syncStatus without their logging and their waits
// on the clock after a failure, which would block here: a failure ends the
// benchmark instead.
func costHour(ctx context.Context, b *testing.B, r *Reporter, clk *clocktesting.FakeClock, lease bool) (renewals int, renewed time.Time, syncs int) {
	b.Helper()
	start := clk.Now()
	end := start.Add(time.Hour)
	renewEvery, syncEvery := r.cfg.renewInterval(), r.cfg.NodeStatusUpdateFrequency
	nextRenew, nextSync := start.Add(renewEvery), start.Add(syncEvery)
	for {
		now := nextSync
		if lease && nextRenew.Before(now) {
			now = nextRenew
		}
		if now.After(end) {
			return renewals, renewed, syncs
		}
		clk.SetTime(now)
		if lease && !nextRenew.After(now) {
			if err := r.renewLease(ctx); err != nil {
				b.Fatalf("at %v: %v", now.Sub(start), err)
			}
			renewals++
			renewed, nextRenew = now, now.Add(renewEvery)
		}
		if !nextSync.After(now) {
			if err := r.updateStatus(ctx); err != nil {
				b.Fatalf("at %v: %v", now.Sub(start), err)
			}
			syncs++
			nextSync = now.Add(syncEvery)
		}
	}
}

// costWatch runs the reporter's watch of its Node until the returned func
// is called, which returns once the watch has ended.
func costWatch(ctx context.Context, r *Reporter) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.watchNode(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// costWatched waits until the reporter's watch shows it the Node as the
// reporter last wrote it (or registered it).
func costWatched(ctx context.Context, b *testing.B, r *Reporter) {
	b.Helper()
	err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		node := r.watchedNode()
		return node != nil && condition(node, corev1.NodeReady).LastHeartbeatTime.Time.Equal(r.lastReport), nil
	})
	if err != nil {
		b.Fatalf("node %s: the watch never showed the last status written: %v", r.NodeName(), err)
	}
}

// costStored is what the apiserver holds after an hour: the Node and its
// Lease (nil without one), with their sizes as it sends them.
type costStored struct {
	node       *corev1.Node
	nodeBytes  int
	lease      *coordinationv1.Lease
	leaseBytes int
}

// costCheck fails b unless the apiserver holds the last heartbeats the
// reporter wrote: the Ready condition's heartbeat of its last status write,
// and the Lease's renewal at renewed, if it is not zero, with the managed
// fields of the reporter, which its renewals do not send. It returns what
// it read.
func costCheck(ctx context.Context, b *testing.B, c kubernetes.Interface, r *Reporter, renewed time.Time) costStored {
	b.Helper()
	name := r.NodeName()
	var stored costStored
	stored.node = &corev1.Node{}
	stored.nodeBytes = costGet(ctx, b, c.CoreV1().RESTClient().Get().Resource("nodes").Name(name), stored.node)
	if got := condition(stored.node, corev1.NodeReady).LastHeartbeatTime; !got.Time.Equal(r.lastReport) {
		b.Fatalf("node %s: Ready heartbeat %v, want the last report %v", name, got, r.lastReport)
	}
	if renewed.IsZero() {
		return stored
	}
	stored.lease = &coordinationv1.Lease{}
	stored.leaseBytes = costGet(ctx, b, c.CoordinationV1().RESTClient().Get().
		Namespace(corev1.NamespaceNodeLease).Resource("leases").Name(name), stored.lease)
	if got := stored.lease.Spec.RenewTime; got == nil || !got.Time.Equal(renewed) {
		b.Fatalf("lease %s: renewed at %v, want %v", name, got, renewed)
	}
	// The apiserver names the field manager of a client that names none
	// after its User-Agent.
	i := slices.IndexFunc(stored.lease.ManagedFields, func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == userAgentName && e.Operation == metav1.ManagedFieldsOperationUpdate
	})
	if i < 0 || !strings.Contains(string(stored.lease.ManagedFields[i].FieldsV1.GetRawBytes()), `"f:renewTime"`) {
		b.Fatalf("lease %s: managed fields %+v, want %s's, with the renewTime", name, stored.lease.ManagedFields, userAgentName)
	}
	return stored
}

// costGet reads req into obj and returns the size of the response body.
func costGet(ctx context.Context, b *testing.B, req *rest.Request, obj k8sruntime.Object) int {
	b.Helper()
	res := req.Do(ctx)
	raw, err := res.Raw()
	if err != nil {
		b.Fatal(err)
	}
	if err := res.Into(obj); err != nil {
		b.Fatal(err)
	}
	return len(raw)
}

// costCheckPersisted fails b unless the object bytes persisted in the hour
// are those of the objects written: the Node at each status write and the
// Lease at each renewal, within a few percent of their sizes at the end of
// the hour (timestamps and versions vary a little), and nothing else.
func costCheckPersisted(b *testing.B, name string, hour costTally, stored costStored) {
	b.Helper()
	check := func(resource string, writes int64, size int) {
		got := hour.persisted[resource]
		if writes == 0 {
			if got != 0 {
				b.Fatalf("node %s: %d bytes of %s persisted without a write", name, got, resource)
			}
			return
		}
		perWrite := float64(got) / float64(writes)
		if perWrite < 0.95*float64(size) || perWrite > 1.05*float64(size) {
			b.Fatalf("node %s: %.0f bytes of %s persisted a write, want about the %d bytes of the object",
				name, perWrite, resource, size)
		}
	}
	check("nodes", hour.requests[http.MethodPatch], stored.nodeBytes)
	check("leases", hour.requests[http.MethodPut], stored.leaseBytes)
	if other := hour.persistedTotal() - hour.persisted["nodes"] - hour.persisted["leases"]; other != 0 {
		b.Fatalf("node %s: %d bytes persisted of neither nodes nor leases", name, other)
	}
}

// costJSONSize is the size of node in JSON as kubectl shows it, without
// managed fields, but for the indentation.
func costJSONSize(b *testing.B, node *corev1.Node) int {
	b.Helper()
	n := node.DeepCopy()
	n.APIVersion, n.Kind = "v1", "Node"
	n.ManagedFields = nil
	data, err := json.Marshal(n)
	if err != nil {
		b.Fatal(err)
	}
	return len(data)
}

// costTally is what requests cost.
type costTally struct {
	// requests counts requests by HTTP method.
	requests map[string]int64
	// failed counts requests without a 2xx response.
	failed int64
	// foreignAgents counts requests sent without the reporter's default
	// User-Agent.
	foreignAgents int64
	// written and read are the bytes of request and response bodies.
	written, read int64
	// persisted are the bytes of the response bodies of successful writes,
	// by resource: the objects the apiserver stored.
	persisted map[string]int64
}

func (t *costTally) add(o costTally) {
	if t.requests == nil {
		t.requests = map[string]int64{}
	}
	for method, n := range o.requests {
		t.requests[method] += n
	}
	if t.persisted == nil {
		t.persisted = map[string]int64{}
	}
	for resource, n := range o.persisted {
		t.persisted[resource] += n
	}
	t.failed += o.failed
	t.foreignAgents += o.foreignAgents
	t.written += o.written
	t.read += o.read
}

func (t *costTally) total() int64 {
	var n int64
	for _, c := range t.requests {
		n += c
	}
	return n
}

func (t *costTally) writes() int64 {
	return t.requests[http.MethodPost] + t.requests[http.MethodPut] +
		t.requests[http.MethodPatch] + t.requests[http.MethodDelete]
}

func (t *costTally) persistedTotal() int64 {
	var n int64
	for _, c := range t.persisted {
		n += c
	}
	return n
}

// costStores says whether a request of method stores an object, which the
// apiserver sends back. A DELETE answers with the object or a status, but
// stores nothing.
func costStores(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch
}

// costCounter tallies the requests of a costTransport. Request bodies are
// read by the HTTP transport's own goroutines, hence the lock.
type costCounter struct {
	mu sync.Mutex
	t  costTally
}

func (c *costCounter) request(method, userAgent string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.requests == nil {
		c.t.requests = map[string]int64{}
	}
	c.t.requests[method]++
	if !ok {
		c.t.failed++
	}
	if !strings.HasPrefix(userAgent, userAgentName+"/") {
		c.t.foreignAgents++
	}
}

func (c *costCounter) wrote(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.written += int64(n)
}

func (c *costCounter) readBytes(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.read += int64(n)
}

// persistedBytes counts n bytes read of the object a write of resource
// stored.
func (c *costCounter) persistedBytes(resource string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.read += int64(n)
	if c.t.persisted == nil {
		c.t.persisted = map[string]int64{}
	}
	c.t.persisted[resource] += int64(n)
}

// take returns the tally so far and starts a new one.
func (c *costCounter) take() costTally {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.t
	c.t = costTally{}
	return t
}

// costTransport counts the requests it carries and the body bytes they
// write and read.
type costTransport struct {
	next    http.RoundTripper
	counter *costCounter
}

func (t *costTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil && req.Body != http.NoBody {
		// A RoundTripper must not change the request it is given.
		req = req.Clone(req.Context())
		req.Body = &costBody{ReadCloser: req.Body, count: t.counter.wrote}
		if getBody := req.GetBody; getBody != nil {
			// A retry of the transport sends the body again.
			req.GetBody = func() (io.ReadCloser, error) {
				body, err := getBody()
				if err != nil {
					return nil, err
				}
				return &costBody{ReadCloser: body, count: t.counter.wrote}, nil
			}
		}
	}
	resp, err := t.next.RoundTrip(req)
	agent := req.Header.Get("User-Agent")
	if err != nil {
		t.counter.request(req.Method, agent, false)
		return nil, err
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	t.counter.request(req.Method, agent, ok)
	count := t.counter.readBytes
	if ok && costStores(req.Method) {
		// The apiserver answers a write with the object it stored.
		resource := costResource(req.URL.Path)
		count = func(n int) { t.counter.persistedBytes(resource, n) }
	}
	resp.Body = &costBody{ReadCloser: resp.Body, count: count}
	return resp, nil
}

// WrappedRoundTripper lets client-go reach the transport underneath, to
// close its idle connections.
func (t *costTransport) WrappedRoundTripper() http.RoundTripper {
	return t.next
}

// costResource returns the resource of an API path, as
// /api/v1/nodes/<name>/status or
// /apis/coordination.k8s.io/v1/namespaces/<ns>/leases/<name>.
func costResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	i := 2 // after api/v1
	if len(parts) > 0 && parts[0] == "apis" {
		i = 3 // after apis/<group>/<version>
	}
	if len(parts) > i+1 && parts[i] == "namespaces" {
		i += 2
	}
	if i < len(parts) {
		return parts[i]
	}
	return path
}

// costBody counts the bytes read from a body.
type costBody struct {
	io.ReadCloser
	count func(int)
}

func (b *costBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.count(n)
	return n, err
}

// costImages returns the 50 images of a busy kubelet's node, as the kubelet
// lists them: largest first, each named by its digest and then its tags.
// Several versions of some images are still held, as after upgrades.
func costImages() []corev1.ContainerImage {
	held := []struct {
		repo string
		mb   int64
		tags []string
	}{
		{"docker.io/library/postgres", 160, []string{"16.4", "16.6", "17.2"}},
		{"ghcr.io/open-telemetry/opentelemetry-collector-releases/opentelemetry-collector-contrib", 95, []string{"0.115.1", "0.118.0"}},
		{"quay.io/cilium/cilium", 190, []string{"v1.16.5", "v1.17.1"}},
		{"docker.io/grafana/promtail", 80, []string{"3.3.2"}},
		{"docker.io/fluent/fluent-bit", 45, []string{"3.2.4", "3.2.6"}},
		{"registry.k8s.io/ingress-nginx/controller", 105, []string{"v1.11.3", "v1.12.0"}},
		{"docker.io/library/nginx", 72, []string{"1.27.3", "1.27.4", "1.27.4-alpine"}},
		{"docker.io/library/redis", 45, []string{"7.4.1", "7.4.2"}},
		{"quay.io/prometheus/node-exporter", 12, []string{"v1.8.2", "v1.9.0"}},
		{"quay.io/prometheus-operator/prometheus-config-reloader", 6, []string{"v0.79.2"}},
		{"registry.k8s.io/kube-proxy", 30, []string{"v1.36.4", "v1.37.2"}},
		{"registry.k8s.io/coredns/coredns", 18, []string{"v1.12.0"}},
		{"registry.k8s.io/dns/k8s-dns-node-cache", 40, []string{"1.24.0", "1.25.0"}},
		{"registry.k8s.io/metrics-server/metrics-server", 20, []string{"v0.7.2"}},
		{"registry.k8s.io/kube-state-metrics/kube-state-metrics", 16, []string{"v2.14.0", "v2.15.0"}},
		{"registry.k8s.io/sig-storage/csi-node-driver-registrar", 11, []string{"v2.12.0", "v2.13.0"}},
		{"registry.k8s.io/sig-storage/livenessprobe", 10, []string{"v2.14.0", "v2.15.0"}},
		{"registry.k8s.io/sig-storage/csi-provisioner", 29, []string{"v5.1.0"}},
		{"registry.k8s.io/sig-storage/csi-attacher", 27, []string{"v4.7.0", "v4.8.0"}},
		{"registry.k8s.io/sig-storage/csi-resizer", 28, []string{"v1.12.0"}},
		{"registry.k8s.io/sig-storage/csi-snapshotter", 26, []string{"v8.2.0"}},
		{"public.ecr.aws/ebs-csi-driver/aws-ebs-csi-driver", 33, []string{"v1.38.1", "v1.39.0"}},
		{"quay.io/jetstack/cert-manager-controller", 22, []string{"v1.16.2", "v1.16.3"}},
		{"quay.io/jetstack/cert-manager-webhook", 18, []string{"v1.16.3"}},
		{"quay.io/jetstack/cert-manager-cainjector", 19, []string{"v1.16.3"}},
		{"docker.io/bitnami/kubectl", 90, []string{"1.32.1"}},
		{"gcr.io/distroless/static-debian12", 1, []string{"nonroot"}},
		{"docker.io/library/busybox", 2, []string{"1.37.0"}},
		{"registry.example.com/payments/checkout-api", 140, []string{"2025.01.14-3f9c2ab", "2025.02.03-9e1d07c"}},
		{"registry.example.com/payments/ledger-worker", 120, []string{"2025.02.03-9e1d07c"}},
		{"registry.k8s.io/pause", 0, []string{"3.10"}},
	}
	var images []corev1.ContainerImage
	for _, h := range held {
		for i, tag := range h.tags {
			digest := sha256.Sum256([]byte(h.repo + ":" + tag))
			images = append(images, corev1.ContainerImage{
				Names: []string{
					h.repo + "@sha256:" + hex.EncodeToString(digest[:]),
					h.repo + ":" + tag,
				},
				// Sizes of the same order as the real images', a little
				// apart from version to version.
				SizeBytes: h.mb<<20 + int64(i)<<18 + int64(digest[0])<<10 + 321_456,
			})
		}
	}
	slices.SortStableFunc(images, func(a, b corev1.ContainerImage) int {
		return cmp.Compare(b.SizeBytes, a.SizeBytes)
	})
	return images
}
