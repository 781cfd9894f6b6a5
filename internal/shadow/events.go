package shadow

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Retarget returns a recorder that emits every event on own, the dry run's
// object, instead of on the Node or Pod it is about, which its note names:
// no controller, and no one reading a node's events, may take what a dry
// run would have done for what was done. The related object is dropped.
func Retarget(next events.EventRecorder, own runtime.Object) events.EventRecorder {
	return retarget{next: next, own: own}
}

type retarget struct {
	next events.EventRecorder
	own  runtime.Object
}

// Eventf emits the event on the dry run's object.
func (r retarget) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	about := strings.ReplaceAll(describe(regarding), "%", "%%")
	r.next.Eventf(r.own, nil, eventtype, reason, action, "Dry run, "+about+": "+note, args...)
}

// describe names an object for an event's note.
func describe(obj runtime.Object) string {
	switch o := obj.(type) {
	case *corev1.Node:
		return "node " + o.Name
	case *corev1.Pod:
		return "pod " + o.Namespace + "/" + o.Name
	case nil:
		return "cluster"
	default:
		return fmt.Sprintf("%T", obj)
	}
}
