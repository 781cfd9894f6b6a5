package harness

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

func TestKubeletFleetSpreadsOverZonesAndFreezes(t *testing.T) {
	c, kubeconfig := startControlPlane(t)
	ctx := t.Context()
	f, err := StartKubeletFleet(ctx, HollowKubeletConfig{Binary: kubemark(t), Kubeconfig: kubeconfig, Dir: t.TempDir()}, "fleet-", "region", 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)

	for _, check := range []struct {
		what      string
		got, want []string
	}{
		{"Nodes()", f.Nodes(), []string{"fleet-0000", "fleet-0001", "fleet-0002"}},
		{"Zones()", f.Zones(), []string{"region-a", "region-b"}},
		{"InZone(region-a)", f.InZone("region-a"), []string{"fleet-0000", "fleet-0002"}},
		{"InZone(region-b)", f.InZone("region-b"), []string{"fleet-0001"}},
	} {
		if !slices.Equal(check.got, check.want) {
			t.Errorf("%s = %v, want %v", check.what, check.got, check.want)
		}
	}
	for _, name := range f.Nodes() {
		node := nodeReady(ctx, t, c, name)
		if node.Labels[LabelZone] != f.Zone(name) || node.Labels[LabelRegion] != "region" {
			t.Errorf("node %s has labels %v, want zone %s in region region", name, node.Labels, f.Zone(name))
		}
	}

	victim := f.InZone("region-b")[0]
	leaseRenewed(ctx, t, c, victim, time.Time{}, time.Minute)
	if err := f.Stop(victim); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	leases := c.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	last, err := leases.Get(ctx, victim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A renewal past one renew interval would be a kubelet that did not
	// stop.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, KubeletLeaseRenewInterval+3*time.Second, false, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, victim, metav1.GetOptions{})
		return err == nil && !l.Spec.RenewTime.Equal(last.Spec.RenewTime), nil
	}); err == nil {
		t.Fatalf("the Lease of %s was renewed while its kubelet was stopped", victim)
	}
	if err := f.Resume(victim); err != nil {
		t.Fatal(err)
	}
	leaseRenewed(ctx, t, c, victim, frozen, 5*time.Second)
}
