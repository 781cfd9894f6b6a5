package fleet

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// PodLabel marks the pods a fleet creates, with the node's name as value.
const PodLabel = "fleet.nodelifecycle.io/node"

const (
	// podContainer and podImage make up each pod's one container.
	podContainer = "app"
	podImage     = "registry.k8s.io/pause:3.10"

	// podCreators is how many pods are created at once. Each creation is a
	// create and a status update. On a 2-core machine, 30,000 pods took
	// about 2 minutes 16 at a time and 1½ at 32; 64 gained little more and
	// only made the heartbeats beside them wait longer.
	podCreators = 32

	// podRequestTimeout bounds every request of the pod client, so that a
	// hung write cannot hold a node's pods back for long.
	podRequestTimeout = 30 * time.Second
)

// podImageID is what a container runtime would report as the image's
// digest. It is made up, and the same for every container.
var podImageID = fmt.Sprintf("registry.k8s.io/pause@sha256:%x", sha256.Sum256([]byte(podImage)))

// newPodClient returns the client of the fleet's pods: protobuf on the wire,
// no client-side rate limit (creation is bounded by podCreators, status
// writes by their schedule), and a connection of its own. The heartbeats
// keep theirs: client-go shares one transport among clients with the same
// TLS settings, and pod traffic on the heartbeats' connection would delay
// them behind it and keep the connection from ever being idle, which is
// what the reporters' recovery from a dead connection relies on to close
// it. The returned func closes the client's idle connections.
func newPodClient(cfg *rest.Config) (kubernetes.Interface, func(), error) {
	c := rest.CopyConfig(cfg)
	c.ContentType = k8sruntime.ContentTypeProtobuf
	c.AcceptContentTypes = k8sruntime.ContentTypeProtobuf + "," + k8sruntime.ContentTypeJSON
	c.QPS = -1
	c.RateLimiter = nil
	c.Timeout = podRequestTimeout
	if c.Dial == nil && c.Transport == nil {
		// A dial function of a config's own gives it a transport that no
		// other client shares.
		c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, nil, fmt.Errorf("pod client: %w", err)
	}
	client, err := kubernetes.NewForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, nil, fmt.Errorf("pod client: %w", err)
	}
	return client, func() { utilnet.CloseIdleConnectionsFor(httpClient.Transport) }, nil
}

// createPods binds PodsPerNode running, Ready pods to every node, as a
// scheduler and the kubelets would, podCreators at a time. Pods that exist
// already are left as they are.
func (f *Fleet) createPods(ctx context.Context) error {
	if err := f.ensureServiceAccount(ctx); err != nil {
		return err
	}
	pods := f.pods.CoreV1().Pods(f.opts.PodNamespace)
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(podCreators)
	for _, node := range f.names {
		for i := range f.opts.PodsPerNode {
			g.Go(func() error {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{
						Name:   podName(node, i),
						Labels: map[string]string{PodLabel: node},
					},
					Spec: corev1.PodSpec{
						NodeName:    node,
						Containers:  []corev1.Container{{Name: podContainer, Image: podImage}},
						Tolerations: f.opts.PodTolerations,
					},
				}
				created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
				if apierrors.IsAlreadyExists(err) {
					return nil
				}
				if err != nil {
					return fmt.Errorf("fleet: create pod %s: %w", pod.Name, err)
				}
				now := f.opts.Clock.Now()
				created.Status = runningStatus(created.Name, now)
				if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					return fmt.Errorf("fleet: mark pod %s running: %w", pod.Name, err)
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// podName names the i-th pod of a node.
func podName(node string, i int) string { return fmt.Sprintf("%s-pod-%d", node, i) }

// runningStatus is the status of a pod whose container started at now and
// is ready.
func runningStatus(pod string, now time.Time) corev1.PodStatus {
	at := metav1.NewTime(now)
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
		},
		StartTime:         &at,
		ContainerStatuses: []corev1.ContainerStatus{containerStatus(pod, 0, now, nil)},
	}
}

// containerStatus is the status of a pod's container, running and ready
// since started after restarts restarts. last, if not nil, is the run that
// ended before it.
func containerStatus(pod string, restarts int32, started time.Time, last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
	ready := true
	cs := corev1.ContainerStatus{
		Name:         podContainer,
		State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}},
		Ready:        true,
		Started:      &ready,
		RestartCount: restarts,
		Image:        podImage,
		ImageID:      podImageID,
		// A runtime gives each run of a container an ID of its own.
		ContainerID: fmt.Sprintf("containerd://%x", sha256.Sum256(fmt.Appendf(nil, "%s/%d", pod, restarts))),
	}
	if last != nil {
		cs.LastTerminationState = corev1.ContainerState{Terminated: last}
	}
	return cs
}

// ensureServiceAccount creates the pods' namespace and its default
// ServiceAccount where they are missing. A control plane without
// kube-controller-manager, as envtest's, creates neither, and the
// apiserver's ServiceAccount admission refuses a pod without its account.
func (f *Fleet) ensureServiceAccount(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.opts.PodNamespace}}
	if _, err := f.pods.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("fleet: create namespace %s: %w", ns.Name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: f.opts.PodNamespace}}
	if _, err := f.pods.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("fleet: create service account %s/default: %w", sa.Namespace, err)
	}
	return nil
}
