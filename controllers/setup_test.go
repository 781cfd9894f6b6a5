package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestEnsureLeaseNamespaceCreatesItOnce(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).Build()
	for range 2 {
		if err := EnsureLeaseNamespace(ctx, c, c); err != nil {
			t.Fatal(err)
		}
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns); err != nil {
		t.Fatalf("namespace not created: %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	if err := DefaultOptions().validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	bad := []func(*Options){
		func(o *Options) { o.NodeMonitorGracePeriod = 0 },
		func(o *Options) { o.PodEvictionTimeout = -1 },
		func(o *Options) { o.NodeEvictionRate = -1 },
		func(o *Options) { o.UnhealthyZoneThreshold = 0 },
		func(o *Options) { o.PartitionFreezeThreshold = 2 },
	}
	for i, mutate := range bad {
		o := DefaultOptions()
		mutate(&o)
		if o.validate() == nil {
			t.Errorf("case %d: want an error", i)
		}
	}
}
