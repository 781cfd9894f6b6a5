package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// FullDisruptionAction says what happens to a zone of a pool in which no
// node is ready.
// +kubebuilder:validation:Enum=Evict;Halt
type FullDisruptionAction string

const (
	// FullDisruptionEvict taints the zone's nodes NoExecute at the normal
	// rate, as kube-controller-manager does.
	FullDisruptionEvict FullDisruptionAction = "Evict"
	// FullDisruptionHalt taints nothing NoExecute in the zone while it is
	// fully disrupted: a site that lost its link keeps its pods.
	FullDisruptionHalt FullDisruptionAction = "Halt"
)

// NodeHealthPolicySpec is the policy of one pool of nodes. Every field but
// nodeSelector is optional; an unset field takes the controller's flag.
//
// +kubebuilder:validation:XValidation:rule="!has(self.podEvictionTimeout) || !has(self.nodeMonitorGracePeriod) || duration(self.podEvictionTimeout) > duration(self.nodeMonitorGracePeriod)",message="podEvictionTimeout must be greater than nodeMonitorGracePeriod"
// +kubebuilder:validation:XValidation:rule="!has(self.nodeStartupGracePeriod) || !has(self.nodeMonitorGracePeriod) || duration(self.nodeStartupGracePeriod) >= duration(self.nodeMonitorGracePeriod)",message="nodeStartupGracePeriod must be at least nodeMonitorGracePeriod"
type NodeHealthPolicySpec struct {
	// NodeSelector selects the nodes of the pool; empty selects every node.
	// A node selected by several policies follows the oldest of them (then
	// the first by name); the others report it in their Conflict condition.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, e.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="nodeSelector: a matchExpressions operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(e, (e.operator in ['In', 'NotIn']) == (has(e.values) && size(e.values) > 0))",message="nodeSelector: In and NotIn need values, Exists and DoesNotExist take none"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, k.size() <= 317 && self.matchLabels[k].size() <= 63)",message="nodeSelector: matchLabels keys must be at most 317 characters and values at most 63"
	// +optional
	NodeSelector metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// NodeMonitorGracePeriod is how long a node may go without a heartbeat
	// before it is marked Unknown (--node-monitor-grace-period).
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="nodeMonitorGracePeriod must be positive"
	// +optional
	NodeMonitorGracePeriod *metav1.Duration `json:"nodeMonitorGracePeriod,omitempty"`
	// NodeStartupGracePeriod is the grace period of a node that has never
	// posted a Ready condition (--node-startup-grace-period). Unset, it is
	// the flag's, or nodeMonitorGracePeriod when that is longer.
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="nodeStartupGracePeriod must be positive"
	// +optional
	NodeStartupGracePeriod *metav1.Duration `json:"nodeStartupGracePeriod,omitempty"`
	// PodEvictionTimeout is how long pods without a toleration for the
	// unreachable or not-ready taint stay on a tainted node
	// (--pod-eviction-timeout).
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="podEvictionTimeout must be positive"
	// +optional
	PodEvictionTimeout *metav1.Duration `json:"podEvictionTimeout,omitempty"`
	// MaintenanceGracePeriod is how long a node of the pool with
	// MaintenanceInProgress, GracefulNodeShutdownInProgress or Drained True
	// may stay unreachable or not ready before it is tainted NoExecute,
	// counted from the later of the condition turning True and the node
	// ceasing to be Ready (--maintenance-grace-period). Until then it counts
	// towards no zone, breaker or partition freeze. 0s turns the hold off.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="maintenanceGracePeriod must not be negative"
	// +optional
	MaintenanceGracePeriod *metav1.Duration `json:"maintenanceGracePeriod,omitempty"`

	// NodeEvictionRate is the number of nodes per second tainted NoExecute
	// in a zone of the pool that is not partially disrupted
	// (--node-eviction-rate).
	// +kubebuilder:validation:Minimum=0
	// +optional
	NodeEvictionRate *float64 `json:"nodeEvictionRate,omitempty"`
	// SecondaryNodeEvictionRate replaces NodeEvictionRate in a partially
	// disrupted zone larger than LargeClusterSizeThreshold
	// (--secondary-node-eviction-rate).
	// +kubebuilder:validation:Minimum=0
	// +optional
	SecondaryNodeEvictionRate *float64 `json:"secondaryNodeEvictionRate,omitempty"`
	// UnhealthyZoneThreshold is the share of not-ready nodes (more than
	// two) at which a zone of the pool is partially disrupted
	// (--unhealthy-zone-threshold).
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	// +optional
	UnhealthyZoneThreshold *float64 `json:"unhealthyZoneThreshold,omitempty"`
	// LargeClusterSizeThreshold is the zone size at or below which a
	// partially disrupted zone of the pool is not tainted at all
	// (--large-cluster-size-threshold).
	// +kubebuilder:validation:Minimum=0
	// +optional
	LargeClusterSizeThreshold *int32 `json:"largeClusterSizeThreshold,omitempty"`
	// FullDisruption says what a zone of the pool with no ready node gets:
	// Evict (kube-controller-manager's behavior, the default) or Halt.
	// +optional
	FullDisruption FullDisruptionAction `json:"fullDisruption,omitempty"`
	// MaxUnhealthy is how many of the pool's nodes, as a number or a
	// percentage, may be unhealthy before the pool's breaker trips: while
	// more are, no node of the pool is tainted NoExecute and no pod is
	// evicted from it. A percentage rounds up, so that a small pool may
	// lose a node (25% of two nodes is one); 0 or 0% trips at the first.
	// Default 50%.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxUnhealthy must be a number of nodes at least 0 or a percentage from 0% to 100%"
	// +optional
	MaxUnhealthy *intstr.IntOrString `json:"maxUnhealthy,omitempty"`
	// PauseRequests holds the reasons for which eviction in the pool is
	// paused. While the list is not empty, the pool's nodes are judged and
	// their conditions and NoSchedule taints kept truthful, but no node is
	// tainted NoExecute and no pod is evicted.
	// +listType=set
	// +optional
	PauseRequests []string `json:"pauseRequests,omitempty"`
}

// ZoneStatus is the state of one zone of a pool.
type ZoneStatus struct {
	// Name is the zone, as region/zone.
	Name string `json:"name"`
	// State is Normal, PartialDisruption or FullDisruption.
	State string `json:"state"`
	// Nodes counts the pool's nodes in the zone.
	Nodes int32 `json:"nodes"`
	// Unhealthy counts those that are not ready.
	Unhealthy int32 `json:"unhealthy"`
}

// NodeHealthPolicyStatus is what the controller observes of a pool.
type NodeHealthPolicyStatus struct {
	// ObservedGeneration is the generation of the spec this status is for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Nodes counts the nodes that follow this policy.
	// +optional
	Nodes int32 `json:"nodes"`
	// HealthyNodes counts those that are ready.
	// +optional
	HealthyNodes int32 `json:"healthyNodes"`
	// UnhealthyNodes counts those that are not.
	// +optional
	UnhealthyNodes int32 `json:"unhealthyNodes"`
	// Zones holds the state of each zone of the pool.
	// +listType=map
	// +listMapKey=name
	// +optional
	Zones []ZoneStatus `json:"zones,omitempty"`
	// Conditions: EvictionAllowed (False with reason TooManyUnhealthy,
	// Paused, PartitionFreeze or FullDisruption) and Conflict (True while
	// nodes this policy selects follow an older policy).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types and reasons of a NodeHealthPolicy.
const (
	ConditionEvictionAllowed = "EvictionAllowed"
	ConditionConflict        = "Conflict"

	ReasonAllowed          = "Allowed"
	ReasonTooManyUnhealthy = "TooManyUnhealthy"
	ReasonPaused           = "Paused"
	ReasonPartitionFreeze  = "PartitionFreeze"
	ReasonFullDisruption   = "FullDisruption"
	ReasonNoConflict       = "NoConflict"
	ReasonOverlap          = "Overlap"
)

// NodeHealthPolicy sets the timing and eviction policy of a pool of nodes,
// in place of the controller's flags for the fields it sets.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=nhp
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodes`
// +kubebuilder:printcolumn:name="Healthy",type=integer,JSONPath=`.status.healthyNodes`
// +kubebuilder:printcolumn:name="Unhealthy",type=integer,JSONPath=`.status.unhealthyNodes`
// +kubebuilder:printcolumn:name="Eviction Allowed",type=string,JSONPath=`.status.conditions[?(@.type=="EvictionAllowed")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeHealthPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeHealthPolicySpec   `json:"spec,omitempty"`
	Status NodeHealthPolicyStatus `json:"status,omitempty"`
}

// NodeHealthPolicyList is a list of NodeHealthPolicy.
//
// +kubebuilder:object:root=true
type NodeHealthPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeHealthPolicy `json:"items"`
}
