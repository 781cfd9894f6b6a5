package safety

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// AnnotationCountdown records on a Node the eviction countdown that a hold
// paused: when the countdown began and how long it had run. It is written
// with the patch that takes the NoExecute taint off for the hold, read back
// when the taint returns, and removed once the node is Ready again. Being on
// the Node, it is what a new leader finds, as it finds the taints.
const AnnotationCountdown = "health.nodelifecycle.io/eviction-countdown"

// Countdown is a node's eviction countdown, as AnnotationCountdown keeps it
// while a hold pauses it. Times are the apiserver's, as taints' timeAdded.
type Countdown struct {
	// Started is when the countdown began: the timeAdded of the episode's
	// first lifecycle NoExecute taint.
	Started time.Time `json:"started"`
	// ServedSeconds is how long the countdown had run when it was last
	// paused, in whole seconds as timeAdded is written.
	ServedSeconds int64 `json:"servedSeconds"`
	// Resumed is when the countdown last went on after a pause; zero
	// before the first.
	Resumed time.Time `json:"resumed,omitzero"`
}

// Served returns the time served as a duration.
func (c Countdown) Served() time.Duration { return time.Duration(c.ServedSeconds) * time.Second }

// encode returns the annotation's value.
func (c Countdown) encode() string {
	b, err := json.Marshal(c)
	if err != nil {
		// A struct of a time and an integer always marshals.
		panic(err)
	}
	return string(b)
}

// CountdownOf returns the countdown recorded on the node, and whether there
// is one. A record that does not parse is no record: the countdown then
// starts again when the taint returns, which keeps pods longer, never
// shorter.
func CountdownOf(node *corev1.Node) (Countdown, bool) {
	v, ok := node.Annotations[AnnotationCountdown]
	if !ok {
		return Countdown{}, false
	}
	var c Countdown
	if err := json.Unmarshal([]byte(v), &c); err != nil || c.Started.IsZero() || c.ServedSeconds < 0 {
		return Countdown{}, false
	}
	return c, true
}

// countdownSince returns when the node's eviction countdown last began or
// went on after a pause: the later of the record's start and resumption
// while one is kept, else the timeAdded of its lifecycle NoExecute taint;
// zero when it has neither.
func countdownSince(node *corev1.Node) time.Time {
	if c, ok := CountdownOf(node); ok {
		if c.Resumed.After(c.Started) {
			return c.Resumed
		}
		return c.Started
	}
	if t := lifecycleNoExecute(node); t != nil && t.TimeAdded != nil {
		return t.TimeAdded.Time
	}
	return time.Time{}
}

// AnnotationMaintenanceGrace records on a Node in maintenance that stopped
// being Ready when its maintenance grace began and ends
// (MaintenanceGrace), so that the grace runs once per failure, whatever the
// Ready condition's later changes and whichever process looks.
const AnnotationMaintenanceGrace = "health.nodelifecycle.io/maintenance-grace"

// MaintenanceGrace is a node's maintenance grace, as
// AnnotationMaintenanceGrace keeps it, on the apiserver's clock.
type MaintenanceGrace struct {
	// Since is the maintenance condition's lastTransitionTime: the record
	// belongs to that maintenance.
	Since time.Time `json:"since"`
	// Until is when the grace ends.
	Until time.Time `json:"until"`
}

func (g MaintenanceGrace) encode() string {
	b, err := json.Marshal(g)
	if err != nil {
		// A struct of times always marshals.
		panic(err)
	}
	return string(b)
}

// MaintenanceGraceOf returns the maintenance grace recorded on the node, and
// whether there is one; a record that does not parse is none.
func MaintenanceGraceOf(node *corev1.Node) (MaintenanceGrace, bool) {
	v, ok := node.Annotations[AnnotationMaintenanceGrace]
	if !ok {
		return MaintenanceGrace{}, false
	}
	var g MaintenanceGrace
	if err := json.Unmarshal([]byte(v), &g); err != nil || g.Until.IsZero() {
		return MaintenanceGrace{}, false
	}
	return g, true
}
