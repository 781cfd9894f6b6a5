package reporter

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// leaseOnly keeps the status loop out of the way of lease tests.
var leaseOnly = Config{NodeStatusUpdateFrequency: time.Hour}

func wantLease(t *testing.T, got *coordinationv1.Lease, renewed time.Time, ownerUID string) {
	t.Helper()
	if h := ptr.Deref(got.Spec.HolderIdentity, ""); h != testNode {
		t.Errorf("holderIdentity = %q, want %q", h, testNode)
	}
	if d := ptr.Deref(got.Spec.LeaseDurationSeconds, 0); d != 40 {
		t.Errorf("leaseDurationSeconds = %d, want 40", d)
	}
	if got.Spec.RenewTime == nil || !got.Spec.RenewTime.Time.Equal(renewed) {
		t.Errorf("renewTime = %v, want %v", got.Spec.RenewTime, renewed)
	}
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: testNode, UID: types.UID(ownerUID)}}
	if !slices.Equal(got.OwnerReferences, want) {
		t.Errorf("ownerReferences = %+v, want %+v", got.OwnerReferences, want)
	}
}

func TestLeaseCreatedWithNodeOwner(t *testing.T) {
	h := newHarness(t, leaseOnly)
	h.start()
	h.settle(2)

	want := []call{
		{verb: "create", resource: "nodes"},
		{verb: "get", resource: "leases"},
		{verb: "get", resource: "nodes"},
		{verb: "create", resource: "leases"},
	}
	if got := h.calls(); !slices.Equal(got, want) {
		t.Fatalf("calls = %+v, want %+v", got, want)
	}
	wantLease(t, h.lease(), t0, "uid-1")
}

func TestLeaseRenewedFromLastWriteWithoutGet(t *testing.T) {
	h := newHarness(t, leaseOnly)
	h.start()
	h.settle(2)
	h.calls()

	for i := 1; i <= 3; i++ {
		h.step(9*time.Second, 2)
		if got := h.calls(); len(got) != 0 {
			t.Fatalf("renewal %d: calls before the interval = %+v, want none", i, got)
		}
		h.step(time.Second, 2)
		if got, want := h.calls(), []call{{verb: "update", resource: "leases"}}; !slices.Equal(got, want) {
			t.Fatalf("renewal %d: calls = %+v, want %+v", i, got, want)
		}
		wantLease(t, h.lease(), h.clk.Now(), "uid-1")
	}
}

func TestLeaseConflictReadsAgainAndRetries(t *testing.T) {
	h := newHarness(t, leaseOnly)
	h.start()
	h.settle(2)
	h.calls()
	h.failN("update", "leases", 1, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, testNode, errors.New("modified")))

	h.step(10*time.Second, 2)

	want := []call{
		{verb: "update", resource: "leases"},
		{verb: "get", resource: "leases"},
		{verb: "update", resource: "leases"},
	}
	if got := h.calls(); !slices.Equal(got, want) {
		t.Fatalf("calls = %+v, want %+v", got, want)
	}
	wantLease(t, h.lease(), t0.Add(10*time.Second), "uid-1")
	if n := h.failures.Load(); n != 0 {
		t.Errorf("OnRepeatedFailure called %d times for a conflict, want 0", n)
	}
}

func TestLeaseUpdateFailuresBackOff(t *testing.T) {
	lost := errors.New("http2: client connection lost")
	timeout := apierrors.NewServerTimeout(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "update", 1)
	tests := []struct {
		name         string
		fails        int
		err          error
		wantBackoffs []time.Duration
		wantHook     int32
	}{
		{name: "one failure is retried at once", fails: 1, err: lost},
		{name: "second failure calls the hook", fails: 2, err: timeout, wantHook: 1},
		{name: "failed round backs off 200ms", fails: 5, err: lost, wantBackoffs: []time.Duration{200 * time.Millisecond}, wantHook: 4},
		{
			name: "backoff doubles", fails: 11, err: timeout,
			wantBackoffs: []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, wantHook: 8,
		},
		{
			name: "backoff is capped at 7s", fails: 35, err: lost,
			wantBackoffs: []time.Duration{
				200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond,
				3200 * time.Millisecond, 6400 * time.Millisecond, 7 * time.Second,
			},
			wantHook: 28,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, leaseOnly)
			h.start()
			h.settle(2)
			h.calls()
			h.failN("update", "leases", tc.fails, tc.err)

			h.step(10*time.Second, 2)
			updates := count(h.calls(), "update", "leases")
			for i, b := range tc.wantBackoffs {
				h.step(b-time.Millisecond, 2)
				if got := h.calls(); len(got) != 0 {
					t.Fatalf("backoff %d: calls before %v = %+v, want none", i, b, got)
				}
				h.step(time.Millisecond, 2)
				got := h.calls()
				if count(got, "update", "leases") == 0 {
					t.Fatalf("backoff %d: no update after %v; calls = %+v", i, b, got)
				}
				updates += len(got)
			}
			if updates != tc.fails+1 {
				t.Errorf("updates = %d, want %d", updates, tc.fails+1)
			}
			if n := h.failures.Load(); n != tc.wantHook {
				t.Errorf("OnRepeatedFailure called %d times, want %d", n, tc.wantHook)
			}
			wantLease(t, h.lease(), h.clk.Now(), "uid-1")

			// Back on the normal schedule.
			h.step(10*time.Second, 2)
			if got, want := h.calls(), []call{{verb: "update", resource: "leases"}}; !slices.Equal(got, want) {
				t.Errorf("next renewal calls = %+v, want %+v", got, want)
			}
		})
	}
}

func TestLeaseDeletedIsRecreatedWithOwner(t *testing.T) {
	h := newHarness(t, leaseOnly)
	h.start()
	h.settle(2)
	h.calls()
	if err := h.cs.Tracker().Delete(leasesGVR, corev1.NamespaceNodeLease, testNode); err != nil {
		t.Fatal(err)
	}

	h.step(10*time.Second, 2)

	want := []call{
		{verb: "update", resource: "leases"},
		{verb: "get", resource: "leases"},
		{verb: "get", resource: "nodes"},
		{verb: "create", resource: "leases"},
	}
	if got := h.calls(); !slices.Equal(got, want) {
		t.Fatalf("calls = %+v, want %+v", got, want)
	}
	wantLease(t, h.lease(), t0.Add(10*time.Second), "uid-1")
	if n := h.failures.Load(); n != 0 {
		t.Errorf("OnRepeatedFailure called %d times for a deleted lease, want 0", n)
	}
}

func TestLeaseWithoutOwnerGetsOne(t *testing.T) {
	stranger := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: testNode, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(testNode), LeaseDurationSeconds: ptr.To[int32](10)},
	}
	h := newHarness(t, leaseOnly, existingNode(), stranger)
	h.start()
	h.settle(2)

	want := []call{
		{verb: "create", resource: "nodes"},
		{verb: "get", resource: "leases"},
		{verb: "update", resource: "leases"},
	}
	// The adopted node's status is reported at once, concurrently, and may
	// read the Node too: the owner wantLease finds shows the Lease's read.
	got := slices.DeleteFunc(h.calls(), func(c call) bool { return c.resource == "nodes" && c.verb != "create" })
	if !slices.Equal(got, want) {
		t.Fatalf("lease calls = %+v, want %+v", got, want)
	}
	wantLease(t, h.lease(), t0, "uid-existing")
}

func TestLeaseRenewalSendsNoManagedFields(t *testing.T) {
	h := newHarness(t, leaseOnly)
	var (
		mu   sync.Mutex
		sent []*coordinationv1.Lease
	)
	h.cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy())
		return false, nil, nil
	})
	h.start()
	h.settle(2)
	if len(h.lease().ManagedFields) == 0 {
		t.Fatal("the created lease has no managed fields; the test would prove nothing")
	}
	// A conflict drops the Lease kept from the last write; the one read
	// again has managed fields too, and they must not be sent either.
	h.failN("update", "leases", 1, apierrors.NewConflict(leasesGVR.GroupResource(), testNode, errors.New("modified")))

	h.step(10*time.Second, 2)
	h.step(10*time.Second, 2)

	mu.Lock()
	defer mu.Unlock()
	// The conflict ends in the failing reactor, before the one above: the
	// updates seen are the one from the Lease read again and the one from
	// the Lease kept from that write.
	if len(sent) != 2 {
		t.Fatalf("updates seen = %d, want 2", len(sent))
	}
	for i, l := range sent {
		if l.ManagedFields != nil {
			t.Errorf("update %d sent managed fields %+v, want none", i, l.ManagedFields)
		}
	}
	got := h.lease()
	if len(got.ManagedFields) == 0 {
		t.Error("the renewed lease lost its managed fields")
	}
	wantLease(t, got, t0.Add(20*time.Second), "uid-1")
}
