package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// errCrashed is what every write of a crashed controller returns.
var errCrashed = errors.New("the controller has crashed")

// crashPoint picks the write after which a controller dies: the write
// lands, and nothing after it does.
type crashPoint struct {
	what string
	// after tells whether a write that succeeded is the one.
	after func(verb string, obj client.Object) bool
}

var (
	crashAfterMark = crashPoint{"marking a node Unknown, before its taints", func(verb string, obj client.Object) bool {
		node, ok := obj.(*corev1.Node)
		if !ok || verb != "patch-status" {
			return false
		}
		c := condition(node, corev1.NodeReady)
		return c != nil && c.Status == corev1.ConditionUnknown
	}}
	crashAfterFirstNoExecute = crashPoint{"adding the first NoExecute taint of a rate-limited queue", func(verb string, obj client.Object) bool {
		node, ok := obj.(*corev1.Node)
		return ok && verb == "patch" && len(lifecycleNoExecute(node)) > 0
	}}
	crashAfterFirstEviction = crashPoint{"deleting the first pod of a node", func(verb string, obj client.Object) bool {
		_, ok := obj.(*corev1.Pod)
		return ok && verb == "delete"
	}}
)

// writeLog counts the writes of the controllers that landed, by verb and
// object, over every manager of a spec.
type writeLog struct {
	mu     sync.Mutex
	counts map[string]int
}

func (l *writeLog) add(verb string, obj client.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[verb+" "+obj.GetName()]++
}

func (l *writeLog) count(verb, name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[verb+" "+name]
}

// crashableClient builds the manager's client so that every write that lands
// is logged and, once crash says so, no further write leaves the process:
// the write that set it off lands, and the controller dies right after it.
// Writes already sent when it dies are let finish, and logged if they
// landed, before crashed is closed: the spec stops the manager then, and a
// write cut off on its way back would have landed unseen.
func crashableClient(log *writeLog, crash *crashPoint, crashed chan<- struct{}) func(*rest.Config, client.Options) (client.Client, error) {
	var (
		mu       sync.Mutex
		dead     bool
		inFlight sync.WaitGroup
	)
	// send reports whether a write may leave, and counts it in flight.
	send := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if dead {
			return false
		}
		inFlight.Add(1)
		return true
	}
	landed := func(verb string, obj client.Object, err error) error {
		defer inFlight.Done()
		if err != nil {
			return err
		}
		log.add(verb, obj)
		if crash == nil || !crash.after(verb, obj) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		if !dead {
			dead = true
			go func() {
				inFlight.Wait()
				close(crashed)
			}()
		}
		return errCrashed
	}
	return func(config *rest.Config, options client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(config, options)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				if !send() {
					return errCrashed
				}
				return landed("patch", obj, c.Patch(ctx, obj, patch, opts...))
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if !send() {
					return errCrashed
				}
				return landed("update", obj, c.Update(ctx, obj, opts...))
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if !send() {
					return errCrashed
				}
				return landed("delete", obj, c.Delete(ctx, obj, opts...))
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if !send() {
					return errCrashed
				}
				return landed("patch-"+sub, obj, c.SubResource(sub).Patch(ctx, obj, patch, opts...))
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if !send() {
					return errCrashed
				}
				return landed("update-"+sub, obj, c.SubResource(sub).Update(ctx, obj, opts...))
			},
		}), nil
	}
}

var _ = Describe("Controller crash", Label("faults"), func() {
	DescribeTable("killed right after a write lands, restarted, finishes the work exactly once",
		func(crash crashPoint) {
			const (
				rate       = 0.5 // NoExecute taints per second: a queue of seconds
				toleration = 3   // seconds the pods stay on a tainted node
				pods       = 3
			)
			tune := func(o *options.Options) {
				o.NodeEvictionRate = rate
				o.PartitionFreezeThreshold = 0
			}
			writes := &writeLog{counts: map[string]int{}}
			crashed := make(chan struct{})
			_, stop := runManager(func(o *ctrl.Options) { o.NewClient = crashableClient(writes, &crash, crashed) }, tune)

			region := "crash-" + rand.String(4)
			f := startFleet(6, 2, func(o *fleet.Options) {
				o.Region, o.NamePrefix, o.PodsPerNode = region, region+"-", pods
				o.PodTolerations = []corev1.Toleration{tolerateUnreachable(ptr.To[int64](toleration))}
			})
			down, healthy := f.InZone(f.Zones()[0]), f.InZone(f.Zones()[1])
			Eventually(nodesReadyAndUntainted(f.Nodes()...)).Should(Succeed())
			history := recordNodes(corev1.LabelTopologyRegion + "=" + region)

			By("a zone going silent, and the controller dying " + crash.what)
			f.Stop(down...)
			Eventually(crashed).WithTimeout(grace + 10*time.Second).Should(BeClosed())
			stop()

			By("a new controller finishing the work")
			runManager(func(o *ctrl.Options) { o.NewClient = crashableClient(writes, nil, nil) }, tune)
			Eventually(func(g Gomega) {
				for _, n := range down {
					g.Expect(readyStatus(n)(g)).To(Equal(markedUnknown))
					g.Expect(hasNoExecuteTaint(n)).To(BeTrue(), "node %s", n)
					for i := range pods {
						g.Expect(deleted(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{
							Namespace: metav1.NamespaceDefault, Name: fleetPodName(n, i)}})(g)).To(BeTrue())
					}
				}
			}).WithTimeout(grace + time.Duration(float64(len(down))/rate)*time.Second + toleration*time.Second + 10*time.Second).Should(Succeed())

			By("each write made once, across the crash")
			// Let anything that would be done twice be done.
			Consistently(func(g Gomega) {
				for _, n := range down {
					g.Expect(writes.count("patch-status", n)).To(Equal(1), "node %s marked more than once", n)
					for i := range pods {
						g.Expect(writes.count("delete", fleetPodName(n, i))).To(Equal(1), "pod %s", fleetPodName(n, i))
					}
				}
			}).WithTimeout(2 * monitorPeriod).Should(Succeed())
			for _, n := range down {
				taintedOnce(history, n)
				unknownOnce(history, n)
			}
			for _, n := range healthy {
				for _, v := range history.of(n) {
					Expect(v.node.Spec.Taints).To(BeEmpty(), "healthy node %s tainted at %v", n, v.at)
				}
			}
		},
		Entry(crashAfterMark.what, crashAfterMark),
		Entry(crashAfterFirstNoExecute.what, crashAfterFirstNoExecute),
		Entry(crashAfterFirstEviction.what, crashAfterFirstEviction),
	)
})

// fleetPodName names a fleet node's i-th pod.
func fleetPodName(node string, i int) string { return fmt.Sprintf("%s-pod-%d", node, i) }

// unknownOnce checks that the node's Ready condition went Unknown once and
// stayed so, with one transition time.
func unknownOnce(h *nodeHistory, name string) {
	var since *metav1.Time
	for _, v := range h.of(name) {
		c := condition(v.node, corev1.NodeReady)
		switch {
		case c == nil || c.Status != corev1.ConditionUnknown:
			Expect(since).To(BeNil(), "node %s went back from Unknown at %v", name, v.at)
		case since == nil:
			since = ptr.To(c.LastTransitionTime)
		default:
			Expect(c.LastTransitionTime).To(Equal(*since), "node %s marked Unknown again at %v", name, v.at)
		}
	}
	Expect(since).NotTo(BeNil(), "node %s never marked Unknown", name)
}
