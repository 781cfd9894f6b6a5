package readback

import (
	"context"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testobj"
)

var key = client.ObjectKey{Name: "n1"}

// lagging is a cache that stays where it is told: a Get of a key it holds
// a version of answers with that version, whatever the apiserver (the fake
// client's tracker) holds since.
type lagging struct {
	client.WithWatch
	held map[client.ObjectKey]client.Object
}

// newLagging returns a client over the objects whose reads are held at the
// versions hold records.
func newLagging(t *testing.T, objs ...client.Object) *lagging {
	t.Helper()
	l := &lagging{held: map[client.ObjectKey]client.Object{}}
	l.WithWatch = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithStatusSubresource(&corev1.Node{}).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{Get: l.get}).Build()
	return l
}

func (l *lagging) get(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	held, ok := l.held[key]
	if !ok {
		return c.Get(ctx, key, obj, opts...)
	}
	if held == nil {
		return apierrors.NewNotFound(corev1.Resource("nodes"), key.Name)
	}
	n, isNode := obj.(*corev1.Node)
	if !isNode {
		return c.Get(ctx, key, obj, opts...)
	}
	*n = *held.(*corev1.Node).DeepCopy()
	return nil
}

// hold freezes the cache's view of the node at what the apiserver holds now.
func (l *lagging) hold(t *testing.T) *corev1.Node {
	t.Helper()
	delete(l.held, key)
	n := &corev1.Node{}
	if err := l.Get(context.Background(), key, n); err != nil {
		t.Fatalf("get node: %v", err)
	}
	l.held[key] = n.DeepCopy()
	return n
}

// markUnknown patches the node's Ready condition to Unknown through c,
// locked to the version given.
func markUnknown(t *testing.T, c client.Client, n *corev1.Node) *corev1.Node {
	t.Helper()
	base := n.DeepCopy()
	n = n.DeepCopy()
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}
	if err := c.Status().Patch(context.Background(), n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatalf("patch node status: %v", err)
	}
	return n
}

// taint patches a taint onto the node through c, locked to the version
// given.
func taint(t *testing.T, c client.Client, n *corev1.Node, key string) *corev1.Node {
	t.Helper()
	base := n.DeepCopy()
	n = n.DeepCopy()
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule})
	if err := c.Patch(context.Background(), n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatalf("patch node taints: %v", err)
	}
	return n
}

func get(t *testing.T, c client.Client) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	if err := c.Get(context.Background(), key, n); err != nil {
		t.Fatalf("get node: %v", err)
	}
	return n
}

func ready(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

func TestServesOwnWritesWhileTheCacheLags(t *testing.T) {
	l := newLagging(t, testobj.Node(key.Name))
	c := New[corev1.Node](l)
	cached := l.hold(t)

	marked := markUnknown(t, c, cached)
	got := get(t, c)
	if ready(got) != corev1.ConditionUnknown || got.ResourceVersion != marked.ResourceVersion {
		t.Fatalf("read after the mark: Ready %q at %s, want Unknown at %s", ready(got), got.ResourceVersion, marked.ResourceVersion)
	}

	// A write locked to what was served lands, and is served in turn.
	tainted := taint(t, c, got, "a")
	got = get(t, c)
	if got.ResourceVersion != tainted.ResourceVersion || len(got.Spec.Taints) != 1 || ready(got) != corev1.ConditionUnknown {
		t.Fatalf("read after the taint: %s with taints %v, want %s with one taint and the mark",
			got.ResourceVersion, got.Spec.Taints, tainted.ResourceVersion)
	}

	// The watch brings the mark: the cache is still behind the taint.
	l.held[key] = marked.DeepCopy()
	if got = get(t, c); got.ResourceVersion != tainted.ResourceVersion {
		t.Fatalf("cache at the mark: read %s, want the taint's %s", got.ResourceVersion, tainted.ResourceVersion)
	}

	// The watch brings the taint: the cache is read, and nothing is kept.
	l.hold(t)
	if got = get(t, c); got.ResourceVersion != tainted.ResourceVersion {
		t.Fatalf("cache caught up: read %s, want %s", got.ResourceVersion, tainted.ResourceVersion)
	}
	if len(c.written) != 0 {
		t.Fatalf("kept %d objects after the cache caught up", len(c.written))
	}
}

func TestServedObjectIsACopy(t *testing.T) {
	l := newLagging(t, testobj.Node(key.Name))
	c := New[corev1.Node](l)
	markUnknown(t, c, l.hold(t))

	got := get(t, c)
	got.Status.Conditions[0].Status = corev1.ConditionTrue
	got.Labels = map[string]string{"changed": "by the reader"}
	if again := get(t, c); ready(again) != corev1.ConditionUnknown || again.Labels != nil {
		t.Fatalf("a reader's change reached the kept object: Ready %q, labels %v", ready(again), again.Labels)
	}
}

// The cache is never read as older than it is: whatever it shows that is
// not an earlier version of the written object wins, and drops it.
func TestCacheWinsWhenNotBehind(t *testing.T) {
	for name, tc := range map[string]struct {
		// cache moves the cache on after the write; it returns whether
		// the node still exists.
		cache func(t *testing.T, l *lagging, written *corev1.Node) bool
		want  func(t *testing.T, got *corev1.Node)
	}{
		"another writer after ours": {
			cache: func(t *testing.T, l *lagging, written *corev1.Node) bool {
				taint(t, l, written, "theirs")
				l.hold(t)
				return true
			},
			want: func(t *testing.T, got *corev1.Node) {
				if len(got.Spec.Taints) != 1 || got.Spec.Taints[0].Key != "theirs" {
					t.Fatalf("read taints %v, want the other writer's", got.Spec.Taints)
				}
			},
		},
		"node replaced under its name": {
			cache: func(_ *testing.T, l *lagging, _ *corev1.Node) bool {
				// Another node of the same name, at a version older than the
				// write: its UID tells it apart.
				n := testobj.Node(key.Name)
				n.UID = "uid-2"
				n.ResourceVersion = "1"
				l.held[key] = n
				return true
			},
			want: func(t *testing.T, got *corev1.Node) {
				if got.UID != "uid-2" || ready(got) != "" {
					t.Fatalf("read %s with Ready %q, want the new node unmarked", got.UID, ready(got))
				}
			},
		},
		"resourceVersion not an integer": {
			cache: func(_ *testing.T, l *lagging, _ *corev1.Node) bool {
				n := testobj.Node(key.Name)
				n.ResourceVersion = "opaque"
				l.held[key] = n
				return true
			},
			want: func(t *testing.T, got *corev1.Node) {
				if got.ResourceVersion != "opaque" {
					t.Fatalf("read %s, want the cache's", got.ResourceVersion)
				}
			},
		},
		"node deleted": {
			cache: func(_ *testing.T, l *lagging, _ *corev1.Node) bool {
				l.held[key] = nil
				return false
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLagging(t, testobj.Node(key.Name))
			c := New[corev1.Node](l)
			written := markUnknown(t, c, l.hold(t))
			exists := tc.cache(t, l, written)

			got := &corev1.Node{}
			err := c.Get(context.Background(), key, got)
			switch {
			case !exists && !apierrors.IsNotFound(err):
				t.Fatalf("get a deleted node: %v, want not found", err)
			case exists && err != nil:
				t.Fatalf("get node: %v", err)
			case exists:
				tc.want(t, got)
			}
			if len(c.written) != 0 {
				t.Fatalf("kept %d objects the cache made moot", len(c.written))
			}
		})
	}
}

func TestKeepsNothingThatWasNotWritten(t *testing.T) {
	label := func(t *testing.T, c client.Client, n *corev1.Node, opts ...client.PatchOption) {
		t.Helper()
		base := n.DeepCopy()
		n.Labels = map[string]string{"a": "b"}
		if err := c.Patch(context.Background(), n, client.MergeFrom(base), opts...); err != nil {
			t.Fatalf("patch: %v", err)
		}
	}
	for name, tc := range map[string]struct {
		// over is the client written through, over the lagging cache;
		// nil means the cache's own client.
		over  func(*lagging) client.Client
		write func(t *testing.T, c client.Client, n *corev1.Node)
	}{
		"dry run": {write: func(t *testing.T, c client.Client, n *corev1.Node) {
			label(t, c, n, client.DryRunAll)
		}},
		"client that writes nothing": {
			// As a dry run's client does (internal/shadow): obj comes back
			// as the caller made it.
			over:  func(l *lagging) client.Client { return writesNothing{l} },
			write: func(t *testing.T, c client.Client, n *corev1.Node) { label(t, c, n) },
		},
		"refused write": {write: func(t *testing.T, c client.Client, n *corev1.Node) {
			base := n.DeepCopy()
			base.ResourceVersion = "1"
			n.Labels = map[string]string{"a": "b"}
			err := c.Patch(context.Background(), n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
			if !apierrors.IsConflict(err) {
				t.Fatalf("patch locked to a stale version: %v, want a conflict", err)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLagging(t, testobj.Node(key.Name))
			var inner client.Client = l
			if tc.over != nil {
				inner = tc.over(l)
			}
			c := New[corev1.Node](inner)
			tc.write(t, c, l.hold(t))
			if len(c.written) != 0 {
				t.Fatalf("kept %d objects", len(c.written))
			}
		})
	}
}

// writesNothing takes every patch and stores none.
type writesNothing struct{ client.Client }

func (writesNothing) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return nil
}

func TestKeepsOnlyItsKind(t *testing.T) {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-node-lease", Name: "n1"}}
	l := newLagging(t, testobj.Node(key.Name), lease)
	c := New[corev1.Node](l)
	base := lease.DeepCopy()
	lease.Labels = map[string]string{"a": "b"}
	if err := c.Patch(context.Background(), lease, client.MergeFrom(base)); err != nil {
		t.Fatalf("patch lease: %v", err)
	}
	if len(c.written) != 0 {
		t.Fatalf("kept %d objects of another kind", len(c.written))
	}
}

func TestDeleteForgets(t *testing.T) {
	l := newLagging(t, testobj.Node(key.Name))
	c := New[corev1.Node](l)
	written := markUnknown(t, c, l.hold(t))
	if err := c.Delete(context.Background(), written); err != nil {
		t.Fatalf("delete node: %v", err)
	}
	if len(c.written) != 0 {
		t.Fatalf("kept %d objects after a delete", len(c.written))
	}
}
