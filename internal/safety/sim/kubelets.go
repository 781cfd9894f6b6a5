package sim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
)

// kubelets act: live ones renew their Lease, report their status when the
// cluster holds another, and set their pods' readiness back to what they
// see; maintenance conditions are set and cleared as asked. Nothing lands
// while the apiserver is down. It returns the Leases renewed.
func (w *world) actKubelets() (leasesRenewed []string) {
	if w.down {
		return nil
	}
	for _, k := range w.kubelets {
		node := w.nodes[k.name]
		changed := false
		if k.maintenance != hasMaintenance(node) {
			setMaintenance(node, k.maintenance, k.maintenanceSince)
			if !k.maintenance {
				k.maintenanceEnded = w.now
			}
			changed = true
		}
		if k.alive {
			if !w.now.Before(k.renewed.Add(w.cfg.LeaseEvery)) {
				lease := w.leases[k.name].DeepCopy()
				lease.Spec.RenewTime = &metav1.MicroTime{Time: w.now}
				w.leases[k.name] = lease
				k.renewed, k.landed = w.now, w.now
				leasesRenewed = append(leasesRenewed, k.name)
			}
			want := corev1.ConditionFalse
			if k.ready {
				want = corev1.ConditionTrue
			}
			if health.ReadyStatus(node) != want {
				setReady(node, want, w.now)
				k.landed = w.now
				changed = true
			}
			if !w.now.Before(k.podsSet.Add(w.cfg.PodsEvery)) {
				k.podsSet = w.now
				for i := range w.pods[k.name] {
					setPodReady(&w.pods[k.name][i], corev1.ConditionTrue)
				}
			}
		}
		if changed {
			w.bump(node)
		}
	}
	return leasesRenewed
}

func hasMaintenance(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeMaintenanceInProgress && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func setMaintenance(node *corev1.Node, on bool, since time.Time) {
	conds := node.Status.Conditions[:0:0]
	for _, c := range node.Status.Conditions {
		if c.Type != corev1.NodeMaintenanceInProgress {
			conds = append(conds, c)
		}
	}
	if on {
		conds = append(conds, corev1.NodeCondition{Type: corev1.NodeMaintenanceInProgress, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(since)})
	}
	node.Status.Conditions = conds
}

func setReady(node *corev1.Node, status corev1.ConditionStatus, now time.Time) {
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.Type == corev1.NodeReady {
			if c.Status != status {
				c.LastTransitionTime = metav1.NewTime(now)
			}
			c.Status, c.Reason, c.LastHeartbeatTime = status, "Kubelet", metav1.NewTime(now)
		}
	}
}

func setPodReady(pod *corev1.Pod, status corev1.ConditionStatus) bool {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == corev1.PodReady && c.Status != status {
			c.Status = status
			return true
		}
	}
	return false
}
