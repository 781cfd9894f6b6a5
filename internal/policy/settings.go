package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// DefaultMaxUnhealthy is a policy's breaker when it does not set one.
var DefaultMaxUnhealthy = intstr.FromString("50%")

// Settings is what the nodes of one pool follow.
type Settings struct {
	// Pool is the name of the policy, or "" for the nodes no policy
	// selects, which follow the flags.
	Pool string
	// Grace holds the grace periods.
	Grace health.Grace
	// PodEvictionTimeout applies to pods without a toleration for the
	// unreachable or not-ready taint.
	PodEvictionTimeout time.Duration
	// MaintenanceGrace is how long a node in maintenance that stopped
	// being Ready waits for its NoExecute taint; 0 turns the hold off.
	MaintenanceGrace time.Duration
	// Disruption holds the pool's rates, thresholds and guards.
	Disruption disruption.Pool
}

// Resolve returns the settings of a policy: its fields where it sets them,
// the defaults (the flags' settings) where it does not. It refuses settings
// that only the combination with the flags makes invalid, such as a grace
// period set by the policy that is not below the flags' eviction timeout.
func Resolve(defaults Settings, p *v1alpha1.NodeHealthPolicy) (Settings, error) {
	s := defaults
	s.Pool = p.Name
	spec := &p.Spec
	setDuration(&s.Grace.Monitor, spec.NodeMonitorGracePeriod)
	setDuration(&s.Grace.Startup, spec.NodeStartupGracePeriod)
	if spec.NodeStartupGracePeriod == nil && s.Grace.Startup < s.Grace.Monitor {
		// A policy that lengthens the grace period but leaves the startup
		// grace to the flags gives a starting node at least the grace a
		// running one has.
		s.Grace.Startup = s.Grace.Monitor
	}
	setDuration(&s.PodEvictionTimeout, spec.PodEvictionTimeout)
	setDuration(&s.MaintenanceGrace, spec.MaintenanceGracePeriod)
	d := &s.Disruption
	if spec.NodeEvictionRate != nil {
		d.Normal = *spec.NodeEvictionRate
	}
	if spec.SecondaryNodeEvictionRate != nil {
		d.Secondary = *spec.SecondaryNodeEvictionRate
	}
	if spec.UnhealthyZoneThreshold != nil {
		d.UnhealthyZoneThreshold = *spec.UnhealthyZoneThreshold
	}
	if spec.LargeClusterSizeThreshold != nil {
		d.LargeClusterSizeThreshold = int(*spec.LargeClusterSizeThreshold)
	}
	d.HaltFullZones = spec.FullDisruption == v1alpha1.FullDisruptionHalt
	d.MaxUnhealthy = &DefaultMaxUnhealthy
	if spec.MaxUnhealthy != nil {
		m := *spec.MaxUnhealthy
		d.MaxUnhealthy = &m
	}
	d.Paused = len(spec.PauseRequests) > 0

	var errs []error
	if s.Grace.Monitor <= 0 || s.Grace.Startup <= 0 || s.PodEvictionTimeout <= 0 {
		errs = append(errs, errors.New("grace periods and podEvictionTimeout must be positive"))
	}
	if s.MaintenanceGrace < 0 {
		errs = append(errs, fmt.Errorf("maintenanceGracePeriod (%v) must not be negative", s.MaintenanceGrace))
	}
	if s.Grace.Startup < s.Grace.Monitor {
		errs = append(errs, fmt.Errorf("nodeStartupGracePeriod (%v) must be at least nodeMonitorGracePeriod (%v)",
			s.Grace.Startup, s.Grace.Monitor))
	}
	if s.PodEvictionTimeout <= s.Grace.Monitor {
		errs = append(errs, fmt.Errorf("podEvictionTimeout (%v) must be greater than nodeMonitorGracePeriod (%v)",
			s.PodEvictionTimeout, s.Grace.Monitor))
	}
	if !(d.Normal >= 0) || !(d.Secondary >= 0) {
		errs = append(errs, errors.New("eviction rates must be at least 0"))
	}
	if !(d.UnhealthyZoneThreshold > 0 && d.UnhealthyZoneThreshold <= 1) {
		errs = append(errs, fmt.Errorf("unhealthyZoneThreshold (%v) must be in (0, 1]", d.UnhealthyZoneThreshold))
	}
	if _, err := intstr.GetScaledValueFromIntOrPercent(d.MaxUnhealthy, 100, false); err != nil {
		errs = append(errs, fmt.Errorf("maxUnhealthy: %w", err))
	}
	if len(errs) > 0 {
		return s, joinErrors(errs)
	}
	return s, nil
}

func setDuration(dst *time.Duration, d *metav1.Duration) {
	if d != nil {
		*dst = d.Duration
	}
}

// joinErrors joins errors into one line, for a condition message.
func joinErrors(errs []error) error {
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// Defaults returns the settings of the nodes no NodeHealthPolicy selects,
// which are also what every policy's unset fields take.
func Defaults(o options.Options) Settings {
	return Settings{
		Grace:              health.Grace{Monitor: o.NodeMonitorGracePeriod, Startup: o.NodeStartupGracePeriod},
		PodEvictionTimeout: o.PodEvictionTimeout,
		MaintenanceGrace:   o.MaintenanceGracePeriod,
		Disruption: disruption.Pool{
			Rates: disruption.Rates{
				Normal:                    o.NodeEvictionRate,
				Secondary:                 o.SecondaryNodeEvictionRate,
				LargeClusterSizeThreshold: int(o.LargeClusterSizeThreshold),
			},
			UnhealthyZoneThreshold: o.UnhealthyZoneThreshold,
		},
	}
}
