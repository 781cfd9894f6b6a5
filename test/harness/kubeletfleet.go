package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// KubeletFleet is hollow kubelets spread over zones: the real kubelet's
// counterpart of pkg/fleet's simulated fleet, with the same names for what a
// demo or a bench does to its nodes.
type KubeletFleet struct {
	names    []string
	zones    []string
	zoneOf   map[string]string
	kubelets map[string]*HollowKubelet
}

// kubeletStarts is how many hollow kubelets StartKubeletFleet starts at
// once: each takes about 0.2s of a core to start, and more at once only
// queue on two cores.
const kubeletStarts = 4

// StartKubeletFleet starts n hollow kubelets named prefix0000, prefix0001,
// ..., the i-th in zone region-a, -b, ... (i modulo zones), with cfg's
// Region and Zone set to match. It returns once every kubelet's API
// answers; each registers its Node soon after. When one fails to start, the
// others are killed.
func StartKubeletFleet(ctx context.Context, cfg HollowKubeletConfig, prefix, region string, n, zones int) (*KubeletFleet, error) {
	if n < 1 || zones < 1 {
		return nil, fmt.Errorf("a kubelet fleet needs at least one node and one zone, got %d nodes in %d zones", n, zones)
	}
	f := &KubeletFleet{zoneOf: map[string]string{}, kubelets: map[string]*HollowKubelet{}}
	for i := range n {
		name := fmt.Sprintf("%s%04d", prefix, i)
		zone := fmt.Sprintf("%s-%c", region, 'a'+rune(i%zones))
		f.names = append(f.names, name)
		f.zoneOf[name] = zone
		if !slices.Contains(f.zones, zone) {
			f.zones = append(f.zones, zone)
		}
	}
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		errs  []error
		slots = make(chan struct{}, kubeletStarts)
	)
	for _, name := range f.names {
		c := cfg
		c.Region, c.Zone = region, f.zoneOf[name]
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			k, err := StartHollowKubelet(ctx, c, name)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			f.kubelets[name] = k
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		f.Close()
		return nil, fmt.Errorf("start %d hollow kubelets: %d failed, the first: %w", n, len(errs), errs[0])
	}
	return f, nil
}

// Nodes returns the names of the fleet's nodes, in order.
func (f *KubeletFleet) Nodes() []string { return slices.Clone(f.names) }

// Zones returns the zone names, in order.
func (f *KubeletFleet) Zones() []string { return slices.Clone(f.zones) }

// Zone returns the zone of a node, "" for a name not in the fleet.
func (f *KubeletFleet) Zone(name string) string { return f.zoneOf[name] }

// InZone returns the nodes of a zone, in order.
func (f *KubeletFleet) InZone(zone string) []string {
	return slices.DeleteFunc(f.Nodes(), func(n string) bool { return f.zoneOf[n] != zone })
}

// Kubelet returns the kubelet of a node, or nil.
func (f *KubeletFleet) Kubelet(name string) *HollowKubelet { return f.kubelets[name] }

// Stop freezes the named nodes' kubelets (SIGSTOP), as hung nodes: no
// heartbeat, no status, no pod status, until Resume. It is the simulated
// fleet's Stop, done to the real kubelet.
func (f *KubeletFleet) Stop(names ...string) error {
	var errs []error
	for _, n := range names {
		if k := f.kubelets[n]; k != nil {
			errs = append(errs, k.Freeze())
		}
	}
	return errors.Join(errs...)
}

// Resume lets the named nodes' frozen kubelets run again (SIGCONT): each
// renews its overdue Lease at once, and posts its status at its next check.
func (f *KubeletFleet) Resume(names ...string) error {
	var errs []error
	for _, n := range names {
		if k := f.kubelets[n]; k != nil {
			errs = append(errs, k.Resume())
		}
	}
	return errors.Join(errs...)
}

// Usage returns what the fleet's kubelets have used so far, summed.
func (f *KubeletFleet) Usage() (Usage, error) {
	var sum Usage
	for _, n := range f.names {
		k := f.kubelets[n]
		if k == nil {
			continue
		}
		u, err := k.Usage()
		if err != nil {
			return Usage{}, err
		}
		sum.RSS += u.RSS
		sum.PSS += u.PSS
		sum.CPU += u.CPU
	}
	return sum, nil
}

// Close kills every kubelet and removes its root directory.
func (f *KubeletFleet) Close() {
	for _, k := range f.kubelets {
		k.Close()
	}
}

// KubeletPod returns a pod bound to node that a hollow kubelet runs: one
// pause container, and no service account token to mount, for no
// controller publishes the root CA in a bare control plane.
func KubeletPod(namespace, name, node string, labels map[string]string, tolerations ...corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                     node,
			AutomountServiceAccountToken: ptr.To(false),
			Containers:                   []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			Tolerations:                  tolerations,
		},
	}
}
