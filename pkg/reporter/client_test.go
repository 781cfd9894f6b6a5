package reporter

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

func TestNewHeartbeatClient(t *testing.T) {
	var (
		mu      sync.Mutex
		headers http.Header
	)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Get("hang") != "" || req.Method == http.MethodGet {
			// A request that never gets an answer: the client's timeout
			// must end it.
			select {
			case <-req.Context().Done():
			case <-hang:
			}
			return
		}
		mu.Lock()
		headers = req.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(&coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: testNode, Namespace: corev1.NamespaceNodeLease},
		})
	}))
	defer srv.Close()
	defer close(hang)

	base := &rest.Config{Host: srv.URL, QPS: 5, Burst: 10, Timeout: time.Hour}
	client, onFailure, err := NewHeartbeatClient(base, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if base.QPS != 5 || base.Timeout != time.Hour || base.ContentType != "" || base.UserAgent != "" {
		t.Errorf("the caller's config was changed: %+v", base)
	}
	if rl := client.CoordinationV1().RESTClient().GetRateLimiter(); rl != nil {
		t.Errorf("rate limiter = %T, want none", rl)
	}

	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: testNode}}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create lease: %v", err)
	}
	mu.Lock()
	if got, want := headers.Get("User-Agent"), "node-lifecycle-reporter/"; !strings.HasPrefix(got, want) {
		t.Errorf("User-Agent = %q, want it to start with %q", got, want)
	}
	if got, want := headers.Get("Content-Type"), "application/vnd.kubernetes.protobuf"; got != want {
		t.Errorf("Content-Type = %q, want %q", got, want)
	}
	if got, want := headers.Get("Accept"), "application/vnd.kubernetes.protobuf,application/json"; got != want {
		t.Errorf("Accept = %q, want %q", got, want)
	}
	mu.Unlock()

	done := make(chan error, 1)
	go func() {
		_, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), testNode, metav1.GetOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a hanging request succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a hanging request outlived the client's timeout")
	}

	onFailure() // must not panic, with or without idle connections
	onFailure()
}

// TestHeartbeatClientLetsWatchesLast watches through a heartbeat client
// whose timeout is short: the watch must outlive it, as the reporter's
// watch of its Node does, though a GET does not (TestNewHeartbeatClient).
func TestHeartbeatClientLetsWatchesLast(t *testing.T) {
	const timeout = 100 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Query().Get("watch") == "true" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
		}
		<-req.Context().Done()
	}))
	defer srv.Close()
	client, _, err := NewHeartbeatClient(&rest.Config{Host: srv.URL}, timeout)
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.CoreV1().Nodes().Watch(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case ev, open := <-w.ResultChan():
		t.Fatalf("the watch ended within 10 timeouts: event %+v, open %v", ev, open)
	case <-time.After(10 * timeout):
	}
}

// TestHeartbeatClientAsksNoCompression sends a request over TLS, as to a
// real apiserver (over plain HTTP, client-go uses Go's default transport,
// which always asks for gzip): it must not ask for a compressed answer.
func TestHeartbeatClientAsksNoCompression(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case got <- req.Header.Get("Accept-Encoding"):
		default:
		}
		http.NotFound(w, req)
	}))
	defer srv.Close()
	client, _, err := NewHeartbeatClient(&rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = client.CoreV1().Nodes().Get(t.Context(), testNode, metav1.GetOptions{})
	if enc := <-got; enc != "" {
		t.Errorf("Accept-Encoding = %q, want none", enc)
	}
}

func TestNewHeartbeatClientRejectsBadArguments(t *testing.T) {
	if _, _, err := NewHeartbeatClient(nil, time.Second); err == nil {
		t.Error("nil config accepted")
	}
	if _, _, err := NewHeartbeatClient(&rest.Config{Host: "https://example.invalid"}, 0); err == nil {
		t.Error("zero timeout accepted")
	}
}

// leaseServer serves testNode's Lease to every request, and passes the
// headers of the first on got.
func leaseServer(t *testing.T) (srv *httptest.Server, got <-chan http.Header) {
	t.Helper()
	headers := make(chan http.Header, 1)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case headers <- req.Header.Clone():
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: testNode, Namespace: corev1.NamespaceNodeLease},
		})
	}))
	t.Cleanup(srv.Close)
	return srv, headers
}

func TestNewHeartbeatClientKeepsUserAgent(t *testing.T) {
	srv, got := leaseServer(t)

	const want = "fleet-simulator/v1.2.3"
	client, _, err := NewHeartbeatClient(&rest.Config{Host: srv.URL, UserAgent: want}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(t.Context(), testNode, metav1.GetOptions{}); err != nil {
		t.Fatalf("get lease: %v", err)
	}
	if ua := (<-got).Get("User-Agent"); ua != want {
		t.Errorf("User-Agent = %q, want the config's %q", ua, want)
	}
}

func TestModuleVersion(t *testing.T) {
	const pkg = "example.com/agent/internal/reporter"
	tests := []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{name: "no build info", want: "dev"},
		{
			name: "main module built from a checkout",
			info: &debug.BuildInfo{Main: debug.Module{Path: "example.com/agent", Version: "(devel)"}},
			want: "dev",
		},
		{
			name: "main module with a version",
			info: &debug.BuildInfo{Main: debug.Module{Path: "example.com/agent", Version: "v0.4.0"}},
			want: "v0.4.0",
		},
		{
			name: "dependency of another module",
			info: &debug.BuildInfo{
				Main: debug.Module{Path: "example.com/fleet", Version: "v2.0.0"},
				Deps: []*debug.Module{
					{Path: "example.com/agen", Version: "v9.9.9"},
					{Path: "example.com/agent", Version: "v0.5.1"},
				},
			},
			want: "v0.5.1",
		},
		{
			name: "nested module wins",
			info: &debug.BuildInfo{
				Main: debug.Module{Path: "example.com/agent", Version: "v0.5.1"},
				Deps: []*debug.Module{{Path: "example.com/agent/internal", Version: "v0.0.7"}},
			},
			want: "v0.0.7",
		},
		{
			name: "replaced by a directory",
			info: &debug.BuildInfo{
				Main: debug.Module{Path: "example.com/fleet"},
				Deps: []*debug.Module{{Path: "example.com/agent", Version: "v0.5.1", Replace: &debug.Module{Path: "../agent"}}},
			},
			want: "dev",
		},
		{
			name: "replaced by a fork",
			info: &debug.BuildInfo{
				Main: debug.Module{Path: "example.com/fleet"},
				Deps: []*debug.Module{{Path: "example.com/agent", Version: "v0.5.1", Replace: &debug.Module{Path: "example.org/fork", Version: "v0.5.2"}}},
			},
			want: "v0.5.2",
		},
		{
			name: "not in the build",
			info: &debug.BuildInfo{Main: debug.Module{Path: "example.com/fleet", Version: "v2.0.0"}},
			want: "dev",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := moduleVersion(tc.info, pkg); got != tc.want {
				t.Errorf("moduleVersion = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestImpersonateNode(t *testing.T) {
	srv, got := leaseServer(t)

	base := &rest.Config{Host: srv.URL}
	cfg, err := ImpersonateNode(base, testNode)
	if err != nil {
		t.Fatal(err)
	}
	if base.Impersonate.UserName != "" || len(base.Impersonate.Groups) > 0 {
		t.Errorf("the caller's config was changed: %+v", base.Impersonate)
	}
	client, _, err := NewHeartbeatClient(cfg, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(t.Context(), testNode, metav1.GetOptions{}); err != nil {
		t.Fatalf("get lease: %v", err)
	}
	headers := <-got
	if user, want := headers.Get("Impersonate-User"), "system:node:"+testNode; user != want {
		t.Errorf("Impersonate-User = %q, want %q", user, want)
	}
	if groups, want := headers.Values("Impersonate-Group"), []string{"system:nodes"}; !slices.Equal(groups, want) {
		t.Errorf("Impersonate-Group = %q, want %q", groups, want)
	}
}

func TestImpersonateNodeRejectsBadArguments(t *testing.T) {
	tests := []struct {
		name     string
		cfg      *rest.Config
		nodeName string
		wantErr  string
	}{
		{name: "nil config", nodeName: testNode, wantErr: "nil rest config"},
		{name: "no node name", cfg: &rest.Config{}, wantErr: "invalid node name"},
		{name: "bad node name", cfg: &rest.Config{}, nodeName: "Node_A", wantErr: "invalid node name"},
		{
			name: "already impersonating", nodeName: testNode, wantErr: `already impersonates user "someone"`,
			cfg: &rest.Config{Impersonate: rest.ImpersonationConfig{UserName: "someone"}},
		},
		{
			name: "already impersonating groups", nodeName: testNode, wantErr: "already impersonates",
			cfg: &rest.Config{Impersonate: rest.ImpersonationConfig{Groups: []string{"system:masters"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ImpersonateNode(tc.cfg, tc.nodeName)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ImpersonateNode = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}
