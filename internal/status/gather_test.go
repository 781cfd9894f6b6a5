package status

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/policy"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

// The report's partition freeze is the one the leader keeps on the
// kube-node-lease Namespace, however long ago it began, and a record that
// does not parse is an error, not a report that no freeze holds.
func TestGatherReadsTheFreezeTheLeaderKeeps(t *testing.T) {
	_, cfg := testenv.Start(t)
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1alpha1.AddToScheme(scheme)); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, now := t.Context(), time.Now()
	frozen := func() (time.Time, error) {
		in, err := Gather(ctx, c, policy.Settings{}, now)
		return in.FrozenSince, err
	}
	since := now.Add(-2 * time.Hour).Truncate(time.Second)
	// The apiserver creates the Namespace itself, soon after it starts.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}
	if err := c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(ns), ns); err != nil {
		t.Fatal(err)
	}
	if since, err := frozen(); err != nil || !since.IsZero() {
		t.Fatalf("no freeze kept: frozen since %v, %v; want none", since, err)
	}
	keep := func(v string) {
		t.Helper()
		ns.Annotations = map[string]string{safety.AnnotationFreeze: v}
		if err := c.Update(ctx, ns); err != nil {
			t.Fatal(err)
		}
	}
	keep(safety.EncodeFreeze(disruption.Record{Since: since, From: since.Add(-20 * time.Second)}))
	if got, err := frozen(); err != nil || !got.Equal(since) {
		t.Fatalf("a freeze kept for two hours: frozen since %v, %v; want %v", got, err, since)
	}
	keep(`{"since":`)
	if _, err := frozen(); err == nil || !strings.Contains(err.Error(), safety.AnnotationFreeze) {
		t.Fatalf("a record that does not parse: %v, want an error naming the annotation", err)
	}
}
