package podeviction

import corev1 "k8s.io/api/core/v1"

// ReasonTaintManagerEviction is the event reason on an evicted pod, the same
// as kube-controller-manager's.
const ReasonTaintManagerEviction = "TaintManagerEviction"

// The DisruptionTarget condition an evicted pod gets before it is deleted.
const (
	disruptionReason  = "DeletionByTaintManager"
	disruptionMessage = "Taint manager: deleting due to NoExecute taint"
)

// EventSource is the component that reports evictions, as
// kube-controller-manager's taint eviction controller does.
const EventSource = "taint-eviction-controller"

const actionEvict = "Evict"

func (r *Reconciler) eventEvicting(pod *corev1.Pod, node *corev1.Node) {
	r.Recorder.Eventf(pod, node, corev1.EventTypeNormal, ReasonTaintManagerEviction, actionEvict,
		"Marking for deletion Pod %s/%s", pod.Namespace, pod.Name)
}
