package reporter

import (
	"errors"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Defaults of the kubelet, applied by New to zero fields of a Config.
const (
	DefaultLeaseDurationSeconds      int32   = 40
	DefaultRenewIntervalFraction     float64 = 0.25
	DefaultNodeStatusUpdateFrequency         = 10 * time.Second
	DefaultNodeStatusReportFrequency         = 5 * time.Minute
	DefaultMaxBackoff                        = 7 * time.Second
)

// Config of one node's reporter. Zero fields take the kubelet's defaults.
type Config struct {
	// NodeName names the Node and its Lease.
	NodeName string
	// Labels are registered with the Node, on top of kubernetes.io/hostname,
	// kubernetes.io/os and kubernetes.io/arch (which they may override).
	Labels map[string]string
	// RegisterWithTaints are the taints the Node is registered with, as the
	// kubelet's --register-with-taints: set when the reporter creates the
	// Node, left alone on a Node that already exists.
	RegisterWithTaints []corev1.Taint
	// Capacity of the node. Empty means DefaultCapacity().
	Capacity corev1.ResourceList
	// Allocatable resources of the node. Empty means the Capacity.
	Allocatable corev1.ResourceList
	// Addresses of the node. Empty leaves the Node's addresses alone.
	Addresses []corev1.NodeAddress
	// Images the node's status lists, as a kubelet lists the container
	// images on its node (by default the 50 largest). Empty lists none.
	Images []corev1.ContainerImage
	// LeaseDurationSeconds is written to the Lease. Default 40.
	LeaseDurationSeconds int32
	// RenewIntervalFraction of the lease duration is the renewal interval.
	// Default 0.25, which renews every 10s.
	RenewIntervalFraction float64
	// NodeStatusUpdateFrequency is how often the status is computed.
	// Default 10s.
	NodeStatusUpdateFrequency time.Duration
	// NodeStatusReportFrequency is the interval between two reports of an
	// unchanged status; after a report of a change (or the registration) it
	// is shifted once by up to half of it either way, at random. Default 5m.
	NodeStatusReportFrequency time.Duration
	// StartOffset delays the first lease renewal and the start of the
	// periodic status sync, so that a fleet started at once spreads its
	// writes evenly over the intervals.
	StartOffset time.Duration
	// MaxBackoff caps the waits between rounds of failed registrations and
	// lease renewals. Default 7s, the kubelet's; a fleet run with grace
	// periods of seconds shortens it in proportion. Each wait is shortened
	// at random by up to half, so that reporters failing together, as a
	// fleet does while the apiserver is down, do not retry in lockstep.
	MaxBackoff time.Duration
	// Health holds the switches the default setters report. Nil means a new
	// healthy Health, available from Reporter.Health.
	Health *Health
	// Setters compute the status after the Capacity, Allocatable,
	// Addresses and Images above are applied. Nil means DefaultSetters(Health).
	Setters []StatusSetter
	// OnRepeatedFailure, if set, is called after every failed heartbeat
	// write that follows another failed one in the same round, typically
	// to drop connections that died silently (see NewHeartbeatClient).
	OnRepeatedFailure func()
}

// DefaultCapacity is the capacity of a node whose Config sets none: a
// modest machine with the kubelet's default pod limit.
func DefaultCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("16Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
	}
}

// withDefaults returns a copy of c with its zero fields defaulted. Maps and
// slices are copied, so the caller may reuse its Config.
func (c Config) withDefaults() Config {
	if c.LeaseDurationSeconds == 0 {
		c.LeaseDurationSeconds = DefaultLeaseDurationSeconds
	}
	if c.RenewIntervalFraction == 0 {
		c.RenewIntervalFraction = DefaultRenewIntervalFraction
	}
	if c.NodeStatusUpdateFrequency == 0 {
		c.NodeStatusUpdateFrequency = DefaultNodeStatusUpdateFrequency
	}
	if c.NodeStatusReportFrequency == 0 {
		c.NodeStatusReportFrequency = DefaultNodeStatusReportFrequency
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if len(c.Capacity) == 0 {
		c.Capacity = DefaultCapacity()
	} else {
		c.Capacity = c.Capacity.DeepCopy()
	}
	if len(c.Allocatable) == 0 {
		c.Allocatable = c.Capacity.DeepCopy()
	} else {
		c.Allocatable = c.Allocatable.DeepCopy()
	}
	c.Labels = maps.Clone(c.Labels)
	c.RegisterWithTaints = append([]corev1.Taint(nil), c.RegisterWithTaints...)
	c.Addresses = append([]corev1.NodeAddress(nil), c.Addresses...)
	if c.Health == nil {
		c.Health = &Health{}
	}
	if c.Setters == nil {
		c.Setters = DefaultSetters(c.Health)
	} else {
		c.Setters = append([]StatusSetter(nil), c.Setters...)
	}
	return c
}

// validate reports every problem of a defaulted Config at once.
func (c *Config) validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	if c.NodeName == "" {
		add("nodeName: must be set")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(c.NodeName) {
			add("nodeName %q: %s", c.NodeName, msg)
		}
	}
	for k, v := range c.Labels {
		for _, msg := range validation.IsQualifiedName(k) {
			add("labels: key %q: %s", k, msg)
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			add("labels: value %q of %q: %s", v, k, msg)
		}
	}
	for _, t := range c.RegisterWithTaints {
		for _, msg := range validation.IsQualifiedName(t.Key) {
			add("registerWithTaints: key %q: %s", t.Key, msg)
		}
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			add("registerWithTaints: value %q of %q: %s", t.Value, t.Key, msg)
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			add("registerWithTaints: effect %q of %q: must be NoSchedule, PreferNoSchedule or NoExecute", t.Effect, t.Key)
		}
	}
	if c.LeaseDurationSeconds <= 0 {
		add("leaseDurationSeconds: must be positive, got %d", c.LeaseDurationSeconds)
	}
	if c.RenewIntervalFraction <= 0 || c.RenewIntervalFraction >= 1 {
		add("renewIntervalFraction: must be in (0, 1), got %v", c.RenewIntervalFraction)
	} else if c.LeaseDurationSeconds > 0 && c.renewInterval() <= 0 {
		add("renewIntervalFraction: %v of %ds is no interval", c.RenewIntervalFraction, c.LeaseDurationSeconds)
	}
	if c.NodeStatusUpdateFrequency <= 0 {
		add("nodeStatusUpdateFrequency: must be positive, got %v", c.NodeStatusUpdateFrequency)
	}
	if c.NodeStatusReportFrequency <= 0 {
		add("nodeStatusReportFrequency: must be positive, got %v", c.NodeStatusReportFrequency)
	}
	if c.StartOffset < 0 {
		add("startOffset: must not be negative, got %v", c.StartOffset)
	}
	if c.MaxBackoff < 0 {
		add("maxBackoff: must not be negative, got %v", c.MaxBackoff)
	}
	for name, q := range c.Capacity {
		if q.Sign() < 0 {
			add("capacity: %s must not be negative, got %s", name, q.String())
		}
	}
	for name, q := range c.Allocatable {
		if q.Sign() < 0 {
			add("allocatable: %s must not be negative, got %s", name, q.String())
		}
		if limit, ok := c.Capacity[name]; ok && q.Cmp(limit) > 0 {
			add("allocatable: %s %s exceeds capacity %s", name, q.String(), limit.String())
		}
	}
	for i, a := range c.Addresses {
		if a.Type == "" || a.Address == "" {
			add("addresses[%d]: type and address must be set, got %q %q", i, a.Type, a.Address)
		}
	}
	for i, s := range c.Setters {
		if s == nil {
			add("setters[%d]: must not be nil", i)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("invalid reporter config for node %q: %w", c.NodeName, errors.Join(errs...))
}

// renewInterval is how often the Lease is renewed.
func (c *Config) renewInterval() time.Duration {
	return time.Duration(float64(c.LeaseDurationSeconds) * float64(time.Second) * c.RenewIntervalFraction)
}
