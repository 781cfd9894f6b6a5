package nodehealth

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/parallel"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/patch"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
)

// podWorkers bounds how many pods of one node are written at once.
const podWorkers = 16

// markPodsNotReady sets Ready=False on the pods of a node the controller
// found silent, so that Services stop sending them traffic: each pod once in
// the silence (the model remembers which), those listed later (bound since,
// or listed late) at the turn the look their listing queues asks for.
func (r *Reconciler) markPodsNotReady(ctx context.Context, node *corev1.Node, now time.Time) error {
	pods, err := r.pods().On(ctx, node.Name)
	if errors.Is(err, podscope.ErrNotListed) {
		ctrl.LoggerFrom(ctx).V(2).Info("Pods not listed yet; marking them NotReady once they are")
		return nil
	}
	if err != nil {
		return err
	}
	todo := r.model().PodsToMark(node, pods)
	if len(todo) == 0 {
		return nil
	}
	// Read it live first, unless the mark just did: a node that came back
	// while the watch lagged must not lose its pods' traffic, nor fight
	// its kubelet.
	if !r.model().Fresh(node.Name, r.Clock.Now()) {
		live, lease, err := r.readLive(ctx, node.Name)
		if err != nil {
			return err
		}
		if !r.model().Silent(live, lease, r.settings(ctx, live).Grace.Monitor, r.Clock.Now()) {
			ctrl.LoggerFrom(ctx).V(1).Info("Node is back, read live; not marking its pods NotReady")
			return nil
		}
	}
	return parallel.ForEach(todo, podWorkers, func(pod *corev1.Pod) error {
		if err := r.markPodNotReady(ctx, pod, now); err != nil {
			return err
		}
		r.model().PodMarked(node, pod.UID)
		return nil
	})
}

func (r *Reconciler) markPodNotReady(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	base := pod.DeepCopy()
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == corev1.PodReady {
			c.Status = corev1.ConditionFalse
			c.LastTransitionTime = metav1.NewTime(now)
		}
	}
	// A strategic merge changes the Ready condition alone, and the UID keeps
	// the patch off a new pod that took the name since the cache saw this
	// one.
	if err := r.Client.Status().Patch(ctx, pod, patch.ForUID(client.StrategicMergeFrom(base))); err != nil {
		if patch.Replaced(err) {
			return nil
		}
		return fmt.Errorf("patch pod %s/%s status: %w", pod.Namespace, pod.Name, err)
	}
	r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonNodeNotReady, actionMarkNotReady, "Node is not ready")
	return nil
}

// pods returns where the node's pods are read: Pods, or the pods of the
// cache Client reads, indexed by node.
func (r *Reconciler) pods() podscope.Pods {
	if r.Pods != nil {
		return r.Pods
	}
	return podscope.Cluster{Reader: r.Client}
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
