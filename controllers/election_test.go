package controllers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/leadergate"
)

// echoServer is an apiserver that answers every request with a Lease or
// a Node, whichever its path names, and remembers what it got.
type echoServer struct {
	*httptest.Server
	mu  sync.Mutex
	got []string
}

func newEchoServer(t *testing.T) *echoServer {
	s := &echoServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got = append(s.got, r.Method+" "+r.URL.Path)
		s.mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		body := `{"kind":"Node","apiVersion":"v1","metadata":{"name":"n1"}}`
		if strings.Contains(r.URL.Path, "/leases") {
			body = `{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"namespace":"default","name":"nlc"}}`
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *echoServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

func TestGateWritesLetsOnlyTheElectionWriteBeforeTheLeaseIsTaken(t *testing.T) {
	server := newEchoServer(t)
	cfg := &rest.Config{Host: server.URL}
	mgrOpts := ctrl.Options{
		LeaderElection:          true,
		LeaderElectionID:        "nlc",
		LeaderElectionNamespace: "default",
		RenewDeadline:           ptr.To(2 * time.Second),
	}
	lockEvents, _, err := gateWrites(cfg, &mgrOpts, clock.RealClock{})
	if err != nil {
		t.Fatal(err)
	}
	lock := mgrOpts.LeaderElectionResourceLockInterface
	if lock == nil {
		t.Fatal("no lock set for the manager")
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	patch := func() error {
		_, err := cs.CoreV1().Nodes().Patch(context.Background(), "n1", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
		return err
	}

	if err := patch(); !errors.Is(err, leadergate.ErrNotLeader) {
		t.Fatalf("patch before the Lease was taken = %v, want ErrNotLeader", err)
	}
	if _, err := cs.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{}); err != nil {
		t.Errorf("read before the Lease was taken: %v", err)
	}
	now := metav1.NewTime(time.Now())
	if err := lock.Create(context.Background(), resourcelock.LeaderElectionRecord{
		HolderIdentity: lock.Identity(), LeaseDurationSeconds: 3, AcquireTime: now, RenewTime: now,
	}); err != nil {
		t.Fatalf("the election's own write was not sent: %v", err)
	}
	if err := patch(); err != nil {
		t.Errorf("patch once the Lease was taken: %v", err)
	}
	want := []string{
		"GET /api/v1/nodes/n1",
		"POST /apis/coordination.k8s.io/v1/namespaces/default/leases",
		"PATCH /api/v1/nodes/n1",
	}
	if got := server.requests(); !slices.Equal(got, want) {
		t.Errorf("apiserver got %v, want %v", got, want)
	}

	legacy, current := record.NewFakeRecorder(1), events.NewFakeRecorder(1)
	lockEvents.setManager(fakeProvider{legacy: legacy, current: current})
	lock.RecordEvent("became leader")
	select {
	case e := <-legacy.Events:
		if !strings.Contains(e, "became leader") {
			t.Errorf("event %q, want the lock's", e)
		}
	default:
		t.Error("the lock's event did not reach the manager's recorder")
	}
}

func TestGateWritesWrapsTheCallersLock(t *testing.T) {
	server := newEchoServer(t)
	cfg := &rest.Config{Host: server.URL}
	mine := &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "mine"}}
	mgrOpts := ctrl.Options{LeaderElection: true, LeaderElectionResourceLockInterface: mine}
	if _, _, err := gateWrites(cfg, &mgrOpts, clock.RealClock{}); err != nil {
		t.Fatal(err)
	}
	if got := mgrOpts.LeaderElectionResourceLockInterface; got == nil || got == resourcelock.Interface(mine) || got.Identity() != "mine" {
		t.Errorf("lock = %v, want the caller's, wrapped", got)
	}
	if *mgrOpts.RenewDeadline != defaultRenewDeadline {
		t.Errorf("renew deadline = %v, want controller-runtime's default", *mgrOpts.RenewDeadline)
	}
	_, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Nodes().Patch(context.Background(), "n1", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
	if !errors.Is(err, leadergate.ErrNotLeader) {
		t.Errorf("patch before the caller's lock took the Lease = %v, want ErrNotLeader", err)
	}
}

type fakeProvider struct {
	legacy  *record.FakeRecorder
	current *events.FakeRecorder
}

func (p fakeProvider) GetEventRecorderFor(string) record.EventRecorder { return p.legacy }

func (p fakeProvider) GetEventRecorder(string) recorder.EventRecorder { return p.current }
