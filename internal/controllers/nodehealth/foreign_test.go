package nodehealth

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
)

// markedBy returns a node marked Unknown, whose managed fields say manager
// wrote the mark at at.
func markedBy(manager string, at time.Time) *corev1.Node {
	t := metav1.NewTime(at)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &t,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{"f:status":{}}}}}`),
		}}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown}}},
	}
}

func TestAForeignMarkIsToldOncePerWrite(t *testing.T) {
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{d: Deps{Recorder: rec, FieldManager: "node-lifecycle-controller"}, told: told{started: at.Add(-time.Minute)}}
	ctx := context.Background()

	// A mark from before the controller started is not told: it is how the
	// cluster was handed over.
	r.noticeForeignWriters(ctx, markedBy(kubeControllerManager, at.Add(-2*time.Minute)))
	if len(rec.Events) != 0 {
		t.Fatalf("a mark from before the start told: %s", <-rec.Events)
	}

	r.noticeForeignWriters(ctx, markedBy("node-lifecycle-controller", at))
	if len(rec.Events) != 0 {
		t.Fatalf("its own mark told: %s", <-rec.Events)
	}
	r.noticeForeignWriters(ctx, markedBy(kubeControllerManager, at))
	r.noticeForeignWriters(ctx, markedBy(kubeControllerManager, at))
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d events for one foreign mark, want 1", n)
	}
	<-rec.Events
	// The next episode's mark is told again.
	r.noticeForeignWriters(ctx, markedBy(kubeControllerManager, at.Add(time.Hour)))
	if n := len(rec.Events); n != 1 {
		t.Fatalf("%d events for a second foreign mark, want 1", n)
	}
	// A dry run tells nothing.
	dry := &Reconciler{d: Deps{Recorder: rec}, told: told{started: r.told.started}}
	<-rec.Events
	dry.noticeForeignWriters(ctx, markedBy(kubeControllerManager, at))
	if n := len(rec.Events); n != 0 {
		t.Fatalf("a dry run told %d foreign writes", n)
	}
}
