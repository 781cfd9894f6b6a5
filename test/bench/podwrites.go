package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"golang.org/x/sync/errgroup"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

// controllerPodWrites is how many pod status writes our controller has in
// flight at most when a zone dies: podWrites, shared by the nodes whose
// pods are marked at once (internal/controllers/nodehealth).
const controllerPodWrites = 128

// podWriteLimit is what the apiserver accepted of one client writing the
// dead zone's pod statuses as fast as it answered, in the run itself.
type podWriteLimit struct {
	// Pods is how many were written, InFlight how many at a time.
	Pods     int `json:"pods"`
	InFlight int `json:"inFlight"`
	// Failed counts the writes refused; they are not in PerSecond.
	Failed int `json:"failed"`
	// Seconds is how long the writes took, and PerSecond how many the
	// apiserver accepted a second.
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"perSecond"`
}

// measurePodWrites writes the status of every pod of the nodes once, as our
// controller marks a pod NotReady (a strategic merge patch of its Ready
// condition, bound to the pod's UID, with a new transition time), from one
// client of its own without a client-side rate limit, inFlight at a time,
// and returns how many writes a second the apiserver accepted. The nodes
// are stopped and their pods marked already: nothing else writes them.
func measurePodWrites(ctx context.Context, cfg *rest.Config, nodes []string, inFlight int) (podWriteLimit, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst, c.RateLimiter = -1, 0, nil
	c.UserAgent = "bench-pod-writes"
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return podWriteLimit{}, fmt.Errorf("pod write client: %w", err)
	}
	sel := fmt.Sprintf("%s in (%s)", fleet.PodLabel, strings.Join(nodes, ","))
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return podWriteLimit{}, fmt.Errorf("list the stopped nodes' pods: %w", err)
	}
	out := podWriteLimit{Pods: len(list.Items), InFlight: inFlight}
	if out.Pods == 0 {
		return out, nil
	}
	var failed atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(inFlight)
	start := time.Now()
	for i := range list.Items {
		pod := &list.Items[i]
		g.Go(func() error {
			_, err := client.CoreV1().Pods(pod.Namespace).Patch(gctx, pod.Name, types.StrategicMergePatchType,
				notReadyPatch(pod.UID, time.Now()), metav1.PatchOptions{}, "status")
			if err != nil {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				failed.Add(1)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return out, fmt.Errorf("write the stopped nodes' pods: %w", err)
	}
	took := time.Since(start)
	out.Failed = int(failed.Load())
	out.Seconds = took.Seconds()
	out.PerSecond = float64(out.Pods-out.Failed) / took.Seconds()
	return out, nil
}

// notReadyPatch is the status patch of a pod marked NotReady at the given
// time, bound to its UID.
func notReadyPatch(uid types.UID, at time.Time) []byte {
	return fmt.Appendf(nil, `{"metadata":{"uid":%q},"status":{"conditions":[{"type":%q,"status":%q,"lastTransitionTime":%q}]}}`,
		uid, corev1.PodReady, corev1.ConditionFalse, at.UTC().Format(time.RFC3339))
}

// zoneTimes returns, for the stopped nodes of a dead zone, how long from
// the first of their deadlines the last of their pods took to be seen
// NotReady, and how long a server writing rate pods a second would need at
// best, each node's pods from its deadline on: the latest, over the
// deadlines, of the time to that deadline plus that of writing the pods
// due from it on. ok is false when some node has no deadline or some pod
// was never seen NotReady.
func zoneTimes(nodes []stoppedNode, rate float64) (took, bound time.Duration, ok bool) {
	if len(nodes) == 0 || rate <= 0 {
		return 0, 0, false
	}
	byDeadline := slices.Clone(nodes)
	slices.SortFunc(byDeadline, func(a, b stoppedNode) int { return a.Deadline.Compare(b.Deadline) })
	first := byDeadline[0].Deadline
	pending := 0
	for _, n := range byDeadline {
		if n.Deadline.IsZero() || (n.Pods > 0 && n.PodsDelay == nil) {
			return 0, 0, false
		}
		pending += n.Pods
		if n.Pods > 0 {
			done := n.Deadline.Add(time.Duration(*n.PodsDelay * float64(time.Second)))
			took = max(took, done.Sub(first))
		}
	}
	for _, n := range byDeadline {
		bound = max(bound, n.Deadline.Sub(first)+time.Duration(float64(pending)/rate*float64(time.Second)))
		pending -= n.Pods
	}
	return took, bound, true
}
