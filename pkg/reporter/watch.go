package reporter

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// watchNode keeps r.node holding the Node as the apiserver stores it, from a
// watch of that one Node, until ctx ends; the status syncs read it there, as
// the kubelet reads its Node from its informer. The watch sends the Node
// only when someone writes it, a few times an hour, where a GET at every
// sync would send it 360 times; and unlike the Node a status write returns,
// it shows the next sync what another writer changed, such as the node
// lifecycle controller's Ready=Unknown, not the next report, up to 7.5
// minutes later.
//
// It runs paused or not: it only reads, and a resumed reporter then reports
// at once against the Node as it is.
func (r *Reporter) watchNode(ctx context.Context) {
	nodes := r.client.CoreV1().Nodes()
	byName := fields.OneTermEqualSelector(metav1.ObjectNameField, r.cfg.NodeName).String()
	lw := cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (k8sruntime.Object, error) {
			opts.FieldSelector = byName
			return nodes.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = byName
			return nodes.Watch(ctx, opts)
		},
	}, r.client)
	cache.NewReflectorWithOptions(lw, &corev1.Node{}, r.node, cache.ReflectorOptions{Clock: r.clock}).RunWithContext(ctx)
}

// watchedNode returns the Node as the watch last saw it, or nil before its
// first answer or once the Node is deleted. It is the watch's: read only.
func (r *Reporter) watchedNode() *corev1.Node {
	obj, ok, _ := r.node.GetByKey(r.cfg.NodeName)
	if !ok {
		return nil
	}
	return obj.(*corev1.Node)
}
