package shadow

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var recordKey = types.NamespacedName{Namespace: "kube-system", Name: "rec"}

// recordMap is the record ConfigMap holding the episodes.
func recordMap(t *testing.T, episodes ...Episode) *corev1.ConfigMap {
	t.Helper()
	data, err := json.Marshal(episodes)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: recordKey.Namespace, Name: recordKey.Name},
		Data: map[string]string{EpisodesKey: string(data), UpdatedKey: t0.Format(time.RFC3339)}}
}

// startStore runs the store until the test ends, and returns what Start
// returned once it has.
func startStore(t *testing.T, st *Store) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		done <- st.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-finished
	})
	return done
}

// awaitWaiter returns once something waits on the clock.
func awaitWaiter(clk *clocktesting.FakeClock) {
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
}

// A restarted dry run reads no Node before its record is restored, and then
// sees, on a node still in a fault, its own NoExecute taint, not the other
// controller's: here it had held the taint back.
func TestStoreRestoresBeforeNodesAreRead(t *testing.T) {
	node := kubeletNode("n1", "uid-n1", t0)
	node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute,
		TimeAdded: &metav1.Time{Time: t0}}}
	held := Episode{Node: "n1", Ours: Side{Marked: at(0)},
		Upstream: Side{Marked: at(0), NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(0)}, NoExecuteHeld: "partition freeze"}
	cluster := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(node, recordMap(t, held)).Build()
	s := New(NewRecord(), clocktesting.NewFakeClock(t0), nil)
	st := s.Store(cluster, cluster, recordKey, clocktesting.NewFakeClock(t0), time.Second)
	dry := s.Client(cluster)

	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := dry.Get(gone, client.ObjectKeyFromObject(node), &corev1.Node{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a read before the restore: err = %v, want it to wait", err)
	}
	if err := dry.Get(gone, recordKey, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("a ConfigMap read waits for nothing: %v", err)
	}

	startStore(t, st)
	got := &corev1.Node{}
	if err := dry.Get(context.Background(), client.ObjectKeyFromObject(node), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Taints) != 0 {
		t.Fatalf("taints = %v, want the other controller's hidden: the dry run held it", got.Spec.Taints)
	}
	es, _ := s.Record.Episodes(false)
	if len(es) != 1 || es[0].NoExecuteHeld != "partition freeze" || es[0].Ended != nil {
		t.Fatalf("episodes = %+v, want the open episode restored", es)
	}
}

// A node the earlier run had tainted shows that run's taint, at its time,
// whatever the other controller did since.
func TestStoreSeedsTheDryRunsOwnTaint(t *testing.T) {
	node := kubeletNode("n1", "uid-n1", t0)
	ours := Episode{Node: "n1", Ours: Side{Marked: at(0), NoExecute: corev1.TaintNodeNotReady, NoExecuteAdded: at(time.Second)}}
	ended := Episode{Node: "n2", Ours: Side{NoExecute: corev1.TaintNodeUnreachable, NoExecuteAdded: at(0)}, Ended: at(time.Minute)}
	other := kubeletNode("n2", "uid-n2", t0)
	cluster := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(node, other, recordMap(t, ours, ended)).Build()
	s := New(NewRecord(), clocktesting.NewFakeClock(t0), nil)
	startStore(t, s.Store(cluster, cluster, recordKey, clocktesting.NewFakeClock(t0), time.Second))

	nodes := &corev1.NodeList{}
	if err := s.Client(cluster).List(context.Background(), nodes); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		switch n.Name {
		case "n1":
			if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != corev1.TaintNodeNotReady || !n.Spec.Taints[0].TimeAdded.Time.Equal(t0.Add(time.Second)) {
				t.Errorf("n1 taints = %v, want the dry run's own not-ready taint", n.Spec.Taints)
			}
		case "n2":
			if len(n.Spec.Taints) != 0 {
				t.Errorf("n2 taints = %v, want none: its episode had ended", n.Spec.Taints)
			}
		}
	}
}

// An apiserver that fails to answer is asked again every period; a record
// that cannot be decoded stops the store with an error saying so.
func TestStoreLoad(t *testing.T) {
	t.Run("retried", func(t *testing.T) {
		failures := 1
		cluster := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(recordMap(t, Episode{Node: "n1", Ours: Side{Marked: at(0)}})).
			WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*corev1.ConfigMap); ok && failures > 0 {
					failures--
					return apierrors.NewServiceUnavailable("etcd is away")
				}
				return c.Get(ctx, key, obj, opts...)
			}}).Build()
		clk := clocktesting.NewFakeClock(t0)
		s := New(NewRecord(), clk, nil)
		startStore(t, s.Store(cluster, cluster, recordKey, clk, time.Second))
		awaitWaiter(clk) // the store waits out its period before asking again
		clk.Step(time.Second)
		if err := s.awaitRestore(context.Background()); err != nil {
			t.Fatal(err)
		}
		if es, _ := s.Record.Episodes(false); len(es) != 1 {
			t.Fatalf("episodes = %+v, want the one kept", es)
		}
	})
	t.Run("undecodable", func(t *testing.T) {
		bad := recordMap(t)
		bad.Data[EpisodesKey] = "{not json"
		cluster := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(bad).Build()
		s := New(NewRecord(), clocktesting.NewFakeClock(t0), nil)
		err := <-startStore(t, s.Store(cluster, cluster, recordKey, clocktesting.NewFakeClock(t0), time.Second))
		if !errors.Is(err, errUndecodable) {
			t.Fatalf("Start = %v, want it to say the record cannot be decoded", err)
		}
	})
}

// What the dry run records is written every period it changed, and once
// more when the store stops.
func TestStoreWrites(t *testing.T) {
	cluster := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	clk := clocktesting.NewFakeClock(t0)
	s := New(NewRecord(), clk, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	st := s.Store(cluster, cluster, recordKey, clk, time.Second)
	go func() { done <- st.Start(ctx) }()
	if err := s.awaitRestore(ctx); err != nil {
		t.Fatal(err)
	}
	s.Record.Marked("n1", true, t0)
	awaitWaiter(clk) // the store's ticker is set
	clk.Step(time.Second)
	waitStored := func(n int) Stored {
		t.Helper()
		for {
			stored, err := Load(context.Background(), cluster, recordKey)
			if err != nil {
				t.Fatal(err)
			}
			if len(stored.Episodes) == n {
				return stored
			}
		}
	}
	if stored := waitStored(1); stored.Episodes[0].Node != "n1" {
		t.Fatalf("stored = %+v, want n1's episode", stored)
	}
	s.Record.Marked("n2", true, t0)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitStored(2)
}
