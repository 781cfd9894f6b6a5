package reporter

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// BenchmarkStatusUnchanged measures the status sync of a healthy node whose
// status has not changed: compute it with the default setters and decide
// not to patch. A fleet does this for every node every 10s.
func BenchmarkStatusUnchanged(b *testing.B) {
	r, err := New(fake.NewClientset(), clocktesting.NewFakeClock(t0), Config{NodeName: testNode})
	if err != nil {
		b.Fatal(err)
	}
	node, err := r.initialNode(t0)
	if err != nil {
		b.Fatal(err)
	}
	r.lastReport = t0
	now := t0.Add(10 * time.Second)
	b.ReportAllocs()
	for b.Loop() {
		_, report, err := r.nextStatus(node, now)
		if err != nil || report {
			b.Fatalf("report = %v, err = %v; want no report", report, err)
		}
	}
}
