package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// watchPods starts a watch of the pods of the named nodes (the fleet labels
// each pod with its node), waits for its first list, and records from then
// on when each pod is first seen not Ready. It counts each node's pods from
// that list: the nodes are about to stop, and no pod is bound to them
// after. The returned func ends the watch.
func (o *observer) watchPods(ctx context.Context, nodes []string) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	sel := fmt.Sprintf("%s in (%s)", fleet.PodLabel, strings.Join(nodes, ","))
	f := informers.NewSharedInformerFactoryWithOptions(o.client, 0,
		informers.WithTweakListOptions(func(opts *metav1.ListOptions) { opts.LabelSelector = sel }))
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    o.sawPod,
		UpdateFunc: func(_, obj any) { o.sawPod(obj) },
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("watch the stopped nodes' pods: %w", err)
	}
	f.Start(ctx.Done())
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			cancel()
			return nil, fmt.Errorf("watch %v: the first list did not complete", typ)
		}
	}
	return cancel, nil
}

// sawPod records a stopped node's pod, and when it is first seen not Ready.
func (o *observer) sawPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	node := pod.Labels[fleet.PodLabel]
	o.mu.Lock()
	defer o.mu.Unlock()
	r := o.rec
	if r == nil {
		return
	}
	pods := r.pods[node]
	if pods == nil {
		pods = map[string]time.Time{}
		r.pods[node] = pods
	}
	at, known := pods[pod.Name]
	switch {
	case !known:
		pods[pod.Name] = time.Time{}
	case !at.IsZero():
		return
	}
	if !podReady(pod) {
		pods[pod.Name] = now
	}
}

// podReady reports whether a pod's Ready condition is True.
func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// lastPodNotReady returns when the last of a node's pods was first seen not
// Ready, and whether every one of them has been.
func (r *recording) lastPodNotReady(node string) (time.Time, bool) {
	pods := r.pods[node]
	var last time.Time
	for _, at := range pods {
		if at.IsZero() {
			return time.Time{}, false
		}
		if at.After(last) {
			last = at
		}
	}
	return last, len(pods) > 0
}

// allPodsNotReady says whether every stopped node has been seen marked, and
// each of its pods not Ready.
func (o *observer) allPodsNotReady() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for name := range o.rec.stopped {
		if _, marked := o.rec.marked[name]; !marked {
			return false
		}
		if _, done := o.rec.lastPodNotReady(name); !done && len(o.rec.pods[name]) > 0 {
			return false
		}
	}
	return true
}
