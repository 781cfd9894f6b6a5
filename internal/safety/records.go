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

// CountdownOf returns the countdown recorded on the node, and whether there
// is one. A record that does not parse is no record: the countdown then
// starts again when the taint returns, which keeps pods longer, never
// shorter.
func CountdownOf(node *corev1.Node) (Countdown, bool) {
	return recordOf(node, AnnotationCountdown, func(c Countdown) bool { return !c.Started.IsZero() && c.ServedSeconds >= 0 })
}

// countdownStarted returns when the node's current eviction countdown
// began, zero when it has none.
func countdownStarted(node *corev1.Node) time.Time {
	if c, ok := CountdownOf(node); ok {
		return c.Started
	}
	if t := lifecycleNoExecute(node); t != nil && t.TimeAdded != nil {
		return t.TimeAdded.Time
	}
	return time.Time{}
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

// MaintenanceGraceOf returns the maintenance grace recorded on the node, and
// whether there is one; a record that does not parse is none.
func MaintenanceGraceOf(node *corev1.Node) (MaintenanceGrace, bool) {
	return recordOf(node, AnnotationMaintenanceGrace, func(g MaintenanceGrace) bool { return !g.Until.IsZero() })
}

// recordOf reads the record kept in the node's annotation key, and reports
// whether there is one that parses and that valid accepts.
func recordOf[T any](node *corev1.Node, key string, valid func(T) bool) (T, bool) {
	var r T
	v, ok := node.Annotations[key]
	if !ok || json.Unmarshal([]byte(v), &r) != nil || !valid(r) {
		var none T
		return none, false
	}
	return r, true
}

// encode returns a record as an annotation's value.
func encode(r any) string {
	b, err := json.Marshal(r)
	if err != nil {
		// The records are structs of times and integers, which always
		// marshal.
		panic(err)
	}
	return string(b)
}
