package docs

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runController runs the controller as the docs do, against the control
// plane, with the flags' defaults: it gets ready, announces a node created
// after its start, and takes no leader election Lease.
func runController(t *testing.T, w *workspace, c command) {
	cl := w.controlPlane(t)
	ctl := w.startController(t, c.text)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "docs-new-node"}}
	if err := cl.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	eventsFor(t, cl, "involvedObject.name="+node.Name+",reason=RegisteredNode", func(events []corev1.Event) error {
		if len(events) == 0 {
			return fmt.Errorf("no RegisteredNode event for node %s yet", node.Name)
		}
		return nil
	})
	lease := &coordinationv1.Lease{}
	if err := cl.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "node-lifecycle-controller"}, lease); !apierrors.IsNotFound(err) {
		t.Errorf("With --leader-elect=false, the leader election Lease: %v (held by %v), want none", err, lease.Spec.HolderIdentity)
	}
	if err := ctl.Stop(10 * time.Second); err != nil {
		t.Errorf("stop: %v\n%s", err, ctl.tail())
	}
	// The node would go NotReady in the scenario's status.
	if err := cl.Delete(t.Context(), node); err != nil {
		t.Fatal(err)
	}
}

// refusedAsShown runs a command line the binary refuses: it prints what the
// doc shows, on stderr, and exits with 2, as the doc says.
func refusedAsShown(t *testing.T, w *workspace, c command) {
	r := w.shell(t, "", c.text)
	if r.code != 2 || r.stdout != "" || strings.TrimRight(r.stderr, "\n") != strings.Join(c.output, "\n") {
		t.Errorf("%s:\n%s\nthe doc shows exit code 2 and on stderr\n%s", c.text, r, strings.Join(c.output, "\n"))
	}
}

// event is an event the scenario must have written, by its reason and the
// object it is about.
type event struct{ reason, kind, name string }

// getEvents does what `kubectl get events -A --field-selector <selector>`
// does, listing the events of every namespace with the selector, until it
// lists every event of want.
func getEvents(want func(*scenario) []event) func(*testing.T, *workspace, command) {
	return func(t *testing.T, w *workspace, c command) {
		words := shellWords(t, c.text)
		if len(words) != 6 || strings.Join(words[:5], " ") != "kubectl get events -A --field-selector" {
			t.Fatalf("`%s`: the test runs `kubectl get events -A --field-selector <selector>` and no other form", c.text)
		}
		s := w.theScenario(t)
		wanted := want(s)
		eventsFor(t, w.controlPlane(t), words[5], func(events []corev1.Event) error {
			for _, e := range wanted {
				if !slices.ContainsFunc(events, func(got corev1.Event) bool {
					return got.Reason == e.reason && got.InvolvedObject.Kind == e.kind && got.InvolvedObject.Name == e.name
				}) {
					return fmt.Errorf("no %s event on %s %s", e.reason, e.kind, e.name)
				}
			}
			return nil
		})
	}
}

// nodeControllerEvents are the scenario's events from node-controller: each
// node announced, and the silent one gone NotReady.
func nodeControllerEvents(s *scenario) []event {
	var want []event
	for _, n := range s.fleet.Nodes() {
		want = append(want, event{"RegisteredNode", "Node", n})
	}
	return append(want, event{"NodeNotReady", "Node", s.silent})
}

// evictionEvents are the scenario's events from taint-eviction-controller:
// the evictions of the drained node's pods.
func evictionEvents(s *scenario) []event {
	var want []event
	for i := range podsPerNode {
		want = append(want, event{"TaintManagerEviction", "Pod", fmt.Sprintf("%s-pod-%d", s.drained, i)})
	}
	return want
}

// Times of day and durations in the status output, which differ from run
// to run.
var (
	clockTime = regexp.MustCompile(`\b\d{2}:\d{2}:\d{2}Z`)
	duration  = regexp.MustCompile(`\b(\d+(\.\d+)?(h|ms|m|s))+\b`)
	blanks    = regexp.MustCompile(`[ \t]+`)
)

// shape is status output with its times and durations made placeholders,
// and its columns single-spaced.
func shape(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		l = clockTime.ReplaceAllString(l, "<time>")
		l = duration.ReplaceAllString(l, "<duration>")
		l = blanks.ReplaceAllString(strings.TrimRight(l, " \t"), " ")
		b.WriteString(l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// status runs the status subcommand during the scenario: it prints what
// the doc shows, but for the times; and with -o json, which the doc names,
// the same as JSON. It runs again while the output differs, until the wait
// times out: a healthy node that a busy machine keeps from renewing its
// Lease within the demo's 4s grace goes NotReady, and comes back.
func status(t *testing.T, w *workspace, c command) {
	s := w.theScenario(t)
	var r result
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) {
		r = w.mustShell(t, "", c.text)
		return shape(strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")) == shape(c.output), nil
	})
	if err != nil {
		t.Errorf("%s printed\n%s\nwhich differs, but for its times and spacing, from what the doc shows:\n%s", c.text, r.stdout, strings.Join(c.output, "\n"))
	}
	r = w.mustShell(t, "", c.text+" -o json")
	if !json.Valid([]byte(r.stdout)) || !strings.Contains(r.stdout, `"`+s.silent+`"`) {
		t.Errorf("%s -o json printed no JSON naming node %s:\n%s", c.text, s.silent, r.stdout)
	}
}
