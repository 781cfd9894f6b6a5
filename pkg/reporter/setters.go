package reporter

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusSetter computes part of a node's status: it mutates node.Status of
// a copy the reporter owns. Setters set the type, status, reason and message
// of conditions through SetCondition; the reporter stamps the heartbeat and
// transition times of the conditions set in this pass afterwards, so setters
// need not. A condition no setter set in the pass is another writer's (an
// administrator's MaintenanceInProgress, a cloud provider's
// NetworkUnavailable): the reporter neither stamps it nor writes it. A
// setter that changes a condition in any way makes it the reporter's, so
// setters leave the conditions of other writers alone. An error is logged
// and the other setters still run.
type StatusSetter func(node *corev1.Node, now time.Time) error

// Reasons and messages of the conditions written by the default setters;
// the kubelet's, so that tools keyed on them keep working.
const (
	ReasonKubeletReady    = "KubeletReady"
	ReasonKubeletNotReady = "KubeletNotReady"

	ReasonSufficientMemory   = "KubeletHasSufficientMemory"
	ReasonInsufficientMemory = "KubeletHasInsufficientMemory"
	ReasonNoDiskPressure     = "KubeletHasNoDiskPressure"
	ReasonDiskPressure       = "KubeletHasDiskPressure"
	ReasonSufficientPID      = "KubeletHasSufficientPID"
	ReasonInsufficientPID    = "KubeletHasInsufficientPID"

	MessageReady    = "kubelet is posting ready status"
	MessageNotReady = "kubelet is not ready"
)

// KubeletVersion is the version DefaultNodeInfo reports.
const KubeletVersion = "v1.37.2"

// Health holds the switches the default setters report: whether the node is
// Ready and which pressures it is under. It is safe for concurrent use, so a
// simulator may flip it while the reporter runs. The zero value, like a nil
// *Health, is a Ready node under no pressure.
type Health struct {
	mu             sync.RWMutex
	notReady       bool
	message        string
	memoryPressure bool
	diskPressure   bool
	pidPressure    bool
}

// SetReady sets whether the node is Ready, with the message of its Ready
// condition; an empty message means the kubelet's default.
func (h *Health) SetReady(ready bool, message string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notReady = !ready
	h.message = message
}

// SetPressure sets which of MemoryPressure, DiskPressure and PIDPressure the
// node is under.
func (h *Health) SetPressure(memory, disk, pid bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.memoryPressure, h.diskPressure, h.pidPressure = memory, disk, pid
}

// Ready returns whether the node is Ready and the message set with it.
func (h *Health) Ready() (bool, string) {
	if h == nil {
		return true, ""
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return !h.notReady, h.message
}

// Pressure returns which pressures the node is under.
func (h *Health) Pressure() (memory, disk, pid bool) {
	if h == nil {
		return false, false, false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.memoryPressure, h.diskPressure, h.pidPressure
}

// DefaultSetters returns the setters of a kubelet-like node reporting h: the
// Ready, MemoryPressure, DiskPressure and PIDPressure conditions and the
// node info. Capacity, allocatable and addresses come from the Config and
// are applied before any setter. A nil h is a healthy node.
func DefaultSetters(h *Health) []StatusSetter {
	return []StatusSetter{
		ReadyCondition(h),
		MemoryPressureCondition(h),
		DiskPressureCondition(h),
		PIDPressureCondition(h),
		NodeInfoSetter(DefaultNodeInfo()),
	}
}

// requiredCapacity lists the resources without which the kubelet calls its
// node NotReady.
var requiredCapacity = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods}

// ReadyCondition sets the Ready condition from h. As the kubelet does, a node
// missing cpu, memory or pods capacity is not Ready whatever h says.
func ReadyCondition(h *Health) StatusSetter {
	return func(node *corev1.Node, _ time.Time) error {
		ready, message := h.Ready()
		var missing []string
		for _, name := range requiredCapacity {
			if _, ok := node.Status.Capacity[name]; !ok {
				missing = append(missing, string(name))
			}
		}
		c := corev1.NodeCondition{Type: corev1.NodeReady}
		switch {
		case len(missing) > 0:
			c.Status, c.Reason = corev1.ConditionFalse, ReasonKubeletNotReady
			c.Message = fmt.Sprintf("missing node capacity for resources: %s", strings.Join(missing, ", "))
			if !ready && message != "" {
				c.Message = message + ", " + c.Message
			}
		case ready:
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, ReasonKubeletReady, MessageReady
			if message != "" {
				c.Message = message
			}
		default:
			c.Status, c.Reason, c.Message = corev1.ConditionFalse, ReasonKubeletNotReady, MessageNotReady
			if message != "" {
				c.Message = message
			}
		}
		SetCondition(node, c)
		return nil
	}
}

// MemoryPressureCondition sets the MemoryPressure condition from h.
func MemoryPressureCondition(h *Health) StatusSetter {
	return pressureCondition(corev1.NodeMemoryPressure, func() bool { m, _, _ := h.Pressure(); return m },
		ReasonInsufficientMemory, "kubelet has insufficient memory available",
		ReasonSufficientMemory, "kubelet has sufficient memory available")
}

// DiskPressureCondition sets the DiskPressure condition from h.
func DiskPressureCondition(h *Health) StatusSetter {
	return pressureCondition(corev1.NodeDiskPressure, func() bool { _, d, _ := h.Pressure(); return d },
		ReasonDiskPressure, "kubelet has disk pressure",
		ReasonNoDiskPressure, "kubelet has no disk pressure")
}

// PIDPressureCondition sets the PIDPressure condition from h.
func PIDPressureCondition(h *Health) StatusSetter {
	return pressureCondition(corev1.NodePIDPressure, func() bool { _, _, p := h.Pressure(); return p },
		ReasonInsufficientPID, "kubelet has insufficient PID available",
		ReasonSufficientPID, "kubelet has sufficient PID available")
}

func pressureCondition(t corev1.NodeConditionType, under func() bool, onReason, onMessage, offReason, offMessage string) StatusSetter {
	return func(node *corev1.Node, _ time.Time) error {
		c := corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, Reason: offReason, Message: offMessage}
		if under() {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, onReason, onMessage
		}
		SetCondition(node, c)
		return nil
	}
}

// CapacitySetter sets the node's capacity, and its allocatable resources to
// allocatable, or to the capacity when allocatable is empty.
func CapacitySetter(capacity, allocatable corev1.ResourceList) StatusSetter {
	if len(allocatable) == 0 {
		allocatable = capacity
	}
	return func(node *corev1.Node, _ time.Time) error {
		node.Status.Capacity = capacity.DeepCopy()
		node.Status.Allocatable = allocatable.DeepCopy()
		return nil
	}
}

// AddressesSetter sets the node's addresses; with none it leaves them alone.
func AddressesSetter(addresses []corev1.NodeAddress) StatusSetter {
	return func(node *corev1.Node, _ time.Time) error {
		if len(addresses) > 0 {
			node.Status.Addresses = slices.Clone(addresses)
		}
		return nil
	}
}

// ImagesSetter sets the node's image list; with none it leaves it alone.
func ImagesSetter(images []corev1.ContainerImage) StatusSetter {
	return func(node *corev1.Node, _ time.Time) error {
		if len(images) > 0 {
			node.Status.Images = make([]corev1.ContainerImage, len(images))
			for i := range images {
				images[i].DeepCopyInto(&node.Status.Images[i])
			}
		}
		return nil
	}
}

// DefaultNodeInfo is the node info of DefaultSetters: a linux/amd64 node
// running this kubelet version.
func DefaultNodeInfo() corev1.NodeSystemInfo {
	return corev1.NodeSystemInfo{
		KubeletVersion:          KubeletVersion,
		OperatingSystem:         "linux",
		Architecture:            "amd64",
		OSImage:                 "node-lifecycle-controller reporter",
		ContainerRuntimeVersion: "reporter://" + KubeletVersion,
	}
}

// NodeInfoSetter sets the node info and the kubelet's endpoint.
func NodeInfoSetter(info corev1.NodeSystemInfo) StatusSetter {
	return func(node *corev1.Node, _ time.Time) error {
		node.Status.NodeInfo = info
		node.Status.DaemonEndpoints.KubeletEndpoint.Port = 10250
		return nil
	}
}

// SetCondition puts c into the node's conditions, replacing the condition
// of the same type. It writes c without its heartbeat and transition times:
// the reporter stamps them, and their absence is how it tells the
// conditions set in this pass, which always differ from the stored ones,
// from those other writers own, which it leaves untouched.
func SetCondition(node *corev1.Node, c corev1.NodeCondition) {
	c.LastHeartbeatTime, c.LastTransitionTime = metav1.Time{}, metav1.Time{}
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == c.Type {
			node.Status.Conditions[i] = c
			return
		}
	}
	node.Status.Conditions = append(node.Status.Conditions, c)
}
