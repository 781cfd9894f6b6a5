package controllers

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestMergeCacheOptionsKeepsTheCallersSettings(t *testing.T) {
	secret := &corev1.Secret{}
	caller := cache.Options{
		DefaultNamespaces: map[string]cache.Config{"team-a": {}},
		ByObject: map[client.Object]cache.ByObject{
			secret:                  {Label: labels.SelectorFromSet(labels.Set{"app": "x"})},
			&coordinationv1.Lease{}: {Namespaces: map[string]cache.Config{"team-a": {}}},
		},
	}
	got := MergeCacheOptions(caller)
	if got.DefaultTransform == nil {
		t.Error("managed fields are not dropped")
	}
	if _, ok := got.DefaultNamespaces["team-a"]; !ok || len(got.DefaultNamespaces) != 1 {
		t.Errorf("default namespaces = %v, want the caller's", got.DefaultNamespaces)
	}
	if by, ok := got.ByObject[secret]; !ok || by.Label.String() != "app=x" {
		t.Errorf("the caller's Secret settings were lost: %+v", got.ByObject)
	}
	_, lease := find(got.ByObject, &coordinationv1.Lease{})
	if _, ok := lease.Namespaces[corev1.NamespaceNodeLease]; !ok {
		t.Errorf("Lease namespaces = %v, want kube-node-lease added", lease.Namespaces)
	}
	if _, ok := lease.Namespaces["team-a"]; !ok {
		t.Errorf("Lease namespaces = %v, want the caller's kept", lease.Namespaces)
	}
	if _, ok := caller.ByObject[secret]; !ok || len(caller.ByObject) != 2 {
		t.Error("the caller's map was changed")
	}
	// The caller narrowed every namespaced object to one namespace: the
	// controllers still need every pod.
	_, pods := find(got.ByObject, &corev1.Pod{})
	if _, ok := pods.Namespaces[cache.AllNamespaces]; !ok {
		t.Errorf("Pod namespaces = %v, want all", pods.Namespaces)
	}
	if err := checkCache(got); err != nil {
		t.Errorf("merged settings refused: %v", err)
	}
}

func TestMergeCacheOptionsKeepsTheCallersTransform(t *testing.T) {
	mine := func(o any) (any, error) { return o, nil }
	got := MergeCacheOptions(cache.Options{DefaultTransform: mine})
	if got.DefaultTransform == nil {
		t.Fatal("transform lost")
	}
	if _, by := find(got.ByObject, &coordinationv1.Lease{}); len(by.Namespaces) != 1 {
		t.Errorf("Lease namespaces = %v, want kube-node-lease only", by.Namespaces)
	}
}

// TestPagesAreStrippedUnlessTheCallerTransforms: the informers strip each
// listed page as it comes with the controllers' own transform, and leave
// it whole when the caller transforms anything itself, by default, by
// object or by namespace, since the caller's transform may read what
// StripUnread drops.
func TestPagesAreStrippedUnlessTheCallerTransforms(t *testing.T) {
	mine := func(o any) (any, error) { return o, nil }
	for _, c := range []struct {
		name  string
		opts  cache.Options
		strip bool
	}{
		{"none", cache.Options{}, true},
		{"by default", cache.Options{DefaultTransform: mine}, false},
		{"by object", cache.Options{ByObject: map[client.Object]cache.ByObject{&corev1.Node{}: {Transform: mine}}}, false},
		{"by namespace", cache.Options{DefaultNamespaces: map[string]cache.Config{"team-a": {Transform: mine}}}, false},
		{"by object and namespace", cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{"team-a": {Transform: mine}}}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			page := &corev1.NodeList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.Node{{
				ObjectMeta: metav1.ObjectMeta{Name: "n1"},
				Status:     corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"registry.example/app:v1"}}}},
			}}}
			lw := &toolscache.ListWatch{
				ListWithContextFunc:  func(context.Context, metav1.ListOptions) (runtime.Object, error) { return page, nil },
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return watch.NewFake(), nil },
			}
			inf := MergeCacheOptions(c.opts).NewInformer(lw, &corev1.Node{}, 0, toolscache.Indexers{})
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			go inf.RunWithContext(ctx)
			if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("the informer did not sync")
			}
			if stripped := page.Items[0].Status.Images == nil; stripped != c.strip {
				t.Errorf("page stripped: %v, want %v", stripped, c.strip)
			}
		})
	}
}

func TestCheckCacheRefusesWhatHidesNodesOrPods(t *testing.T) {
	for _, c := range []struct {
		name string
		opts cache.Options
		want string
	}{
		{"node selector", cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Node{}: {Label: labels.SelectorFromSet(labels.Set{"pool": "a"})}}}, "selector on Nodes"},
		{"pods in one namespace", cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}: {Namespaces: map[string]cache.Config{"team-a": {}}}}}, "Pods are cached in [team-a] only"},
		{"default selector", cache.Options{DefaultLabelSelector: labels.SelectorFromSet(labels.Set{"a": "b"})}, "default label or field selector"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkCache(MergeCacheOptions(c.opts))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestStripUnreadDropsImagesAndManagedFieldsOnly(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Images:     []corev1.ContainerImage{{Names: []string{"registry.example/app:v1"}, SizeBytes: 1 << 20}},
			Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
		},
	}
	want := node.DeepCopy()
	want.ManagedFields, want.Status.Images = nil, nil
	got, err := MergeCacheOptions(cache.Options{}).DefaultTransform(node)
	if err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("transformed Node = %+v, want %+v", got, want)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	if got, _ := StripUnread(lease); got.(*coordinationv1.Lease).ManagedFields != nil {
		t.Error("managed fields kept on a Lease")
	}

	// A node in trouble keeps who marked it, trimmed to that.
	marked := node.DeepCopy()
	marked.Status.Conditions[0].Status = corev1.ConditionUnknown
	marked.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kube-controller-manager", Subresource: "status", FieldsType: "FieldsV1",
		FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:message":{},"f:status":{}}},"f:images":{}}}`)}}
	got, _ = StripUnread(marked)
	kept := got.(*corev1.Node).ManagedFields
	if len(kept) != 1 || kept[0].Manager != "kube-controller-manager" || strings.Contains(kept[0].FieldsV1.GetRawString(), "images") {
		t.Errorf("a marked Node keeps %+v, want kube-controller-manager's entry trimmed to its mark", kept)
	}
	// A listed page is stripped, then stored and stripped again: the
	// second pass keeps what the first kept.
	once := got.(*corev1.Node).DeepCopy()
	if twice, _ := StripUnread(got); !equality.Semantic.DeepEqual(twice, once) {
		t.Errorf("stripped twice: %+v, want as once: %+v", twice, once)
	}
}

// TestTheManagersClientHasNoClientSideRateLimit: the client NewManager
// gives the controllers is built by the caller's constructor, from a copy
// of the config without a rate limit; the config itself keeps its limit.
func TestTheManagersClientHasNoClientSideRateLimit(t *testing.T) {
	cfg := &rest.Config{Host: "https://example.invalid", QPS: 20, Burst: 30}
	var built *rest.Config
	newClient := unthrottledClient(func(c *rest.Config, _ client.Options) (client.Client, error) {
		built = c
		return nil, nil
	})
	if _, err := newClient(cfg, client.Options{}); err != nil {
		t.Fatal(err)
	}
	if built == nil || built.QPS >= 0 || built.RateLimiter != nil {
		t.Fatalf("the client was built with %+v; want no rate limit", built)
	}
	if cfg.QPS != 20 || cfg.Burst != 30 {
		t.Fatalf("the config was changed to QPS %v, burst %d", cfg.QPS, cfg.Burst)
	}
}

// TestInformersListThenWatch: every informer of the manager's cache lists
// at the latest revision, in pages, then watches; none asks for its list
// streamed in the watch, which fails while the watch cache lags behind
// etcd, as it does in a storm of writes (a consistent list is served from
// etcd then).
func TestInformersListThenWatch(t *testing.T) {
	for _, obj := range []client.Object{&corev1.Node{}, &coordinationv1.Lease{}, &corev1.Pod{}} {
		var mu sync.Mutex
		var lists, watches []metav1.ListOptions
		lw := &toolscache.ListWatch{
			ListWithContextFunc: func(_ context.Context, o metav1.ListOptions) (runtime.Object, error) {
				mu.Lock()
				defer mu.Unlock()
				lists = append(lists, o)
				return &corev1.List{ListMeta: metav1.ListMeta{ResourceVersion: "7"}}, nil
			},
			WatchFuncWithContext: func(_ context.Context, o metav1.ListOptions) (watch.Interface, error) {
				mu.Lock()
				defer mu.Unlock()
				watches = append(watches, o)
				return watch.NewFake(), nil
			},
		}
		inf := newInformer(StripUnread)(lw, obj, 0, toolscache.Indexers{})
		// A streamed list never syncs here: the fake watch sends no
		// bookmark to end it. The bound only keeps the test from hanging.
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		go inf.RunWithContext(ctx)
		if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			cancel()
			t.Fatalf("%T: the informer did not sync", obj)
		}
		cancel()
		mu.Lock()
		if len(lists) == 0 || lists[0].ResourceVersion != "" || lists[0].Limit != 500 {
			t.Errorf("%T: lists = %+v, want the first at the latest revision, in pages of 500", obj, lists)
		}
		for _, o := range watches {
			if o.SendInitialEvents != nil {
				t.Errorf("%T: a watch asked for its list streamed: %+v", obj, o)
			}
		}
		mu.Unlock()
	}
}
