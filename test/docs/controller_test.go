package docs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// waitTimeout bounds each wait for the controller to act. The scenario's
// timings are the demo's: seconds.
const waitTimeout = time.Minute

// controller is the binary run as a doc shows, as a child process.
type controller struct {
	*harness.Process
	log string
}

// startController runs a doc's command line of the controller with extra
// flags after it, its secure port on a free loopback port rather than every
// address's 10263, where another package's test may listen. It returns once
// the process is ready.
func (w *workspace) startController(t *testing.T, text string, extra ...string) *controller {
	t.Helper()
	w.controlPlane(t)
	port, err := harness.NewSecurePort()
	if err != nil {
		t.Fatal(err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.CreateTemp(w.dir, "controller-*.log")
	if err != nil {
		t.Fatal(err)
	}
	// exec: the process is the controller itself, which SIGTERM stops.
	script := "cd " + quote(w.dir) + " && exec " + text + " " + strings.Join(slices.Concat(extra, port.Flags()), " ")
	proc, err := harness.StartProcessWithEnv(bash, []string{"-c", script}, w.environ(), log)
	if err != nil {
		_ = log.Close()
		t.Fatal(err)
	}
	c := &controller{Process: proc, log: log.Name()}
	w.root.Cleanup(func() {
		if err := c.Stop(10 * time.Second); err != nil {
			w.root.Errorf("stop %s: %v", script, err)
		}
		_ = log.Close()
	})
	if err := proc.WaitReady(t.Context(), port.Client, port.URL("/readyz"), waitTimeout); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, c.tail())
	}
	return c
}

// tail returns the last lines of the controller's log, for a failure.
func (c *controller) tail() string {
	data, err := os.ReadFile(c.log)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return "the controller's log ends:\n" + strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// scenario is act (b) of the demo, which operating.md's status output
// shows, with the demo's timings: nine nodes in three zones with two pods
// each, run by a fleet of reporters, and one of them gone silent.
// Another node then gets an administrator's NoExecute taint, so that pods
// are evicted without waiting out the tolerations.
type scenario struct {
	fleet   *fleet.Fleet
	silent  string // the node whose reporter stopped
	drained string // the node with the administrator's taint
}

// The nodes and pods of the scenario, as the status output in operating.md
// has them.
const (
	scenarioNodes = 9
	scenarioZones = 3
	podsPerNode   = 2
	// podToleration is how long the pods tolerate the unreachable and
	// not-ready taints: long enough that the silent node's pods are still
	// there, counting down, whenever status runs.
	podToleration = time.Hour
)

// drainTaint is the administrator's NoExecute taint, one that no pod
// tolerates.
var drainTaint = corev1.Taint{Key: "example.com/retired", Effect: corev1.TaintEffectNoExecute}

// theScenario plays the scenario the first time a command needs it, with the
// controller run as the docs run it, the demo's flags after theirs.
func (w *workspace) theScenario(t *testing.T) *scenario {
	t.Helper()
	if w.scenario != nil {
		return w.scenario
	}
	if len(w.demoFlags) == 0 {
		t.Fatal("getting-started.md shows no flags of the demo's controller to run the scenario with")
	}
	c := w.controlPlane(t)
	ctx := t.Context()
	ctl := w.startController(t, controllerCommand, w.demoFlags...)
	tolerate := func(key string) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute,
			TolerationSeconds: ptr.To(int64(podToleration / time.Second))}
	}
	f, err := fleet.Start(ctx, w.cfg, fleet.Options{
		Nodes: scenarioNodes, Zones: scenarioZones, PodsPerNode: podsPerNode,
		// The demo's reporters, within its 4s grace.
		LeaseDurationSeconds:      2,
		NodeStatusUpdateFrequency: time.Second,
		PodTolerations:            []corev1.Toleration{tolerate(corev1.TaintNodeUnreachable), tolerate(corev1.TaintNodeNotReady)},
	})
	if err != nil {
		t.Fatalf("start fleet: %v", err)
	}
	w.root.Cleanup(f.Close)
	s := &scenario{fleet: f, silent: f.Nodes()[0], drained: f.Nodes()[1]}

	waitCtx, cancel := context.WithTimeout(ctx, waitTimeout)
	defer cancel()
	f.Stop(s.silent)
	if err := f.WaitFor(waitCtx, s.silent, hasTaint(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)); err != nil {
		t.Fatalf("Node %s, silent, not tainted unreachable:NoExecute: %v\n%s", s.silent, err, ctl.tail())
	}

	node := &corev1.Node{}
	if err := c.Get(ctx, client.ObjectKey{Name: s.drained}, node); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Taints = append(node.Spec.Taints, drainTaint)
	if err := c.Patch(ctx, node, patch); err != nil {
		t.Fatalf("taint %s: %v", s.drained, err)
	}
	err = wait.PollUntilContextCancel(waitCtx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("spec.nodeName", s.drained)}); err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("The pods of %s, tainted %s:NoExecute, not evicted: %v\n%s", s.drained, drainTaint.Key, err, ctl.tail())
	}
	w.scenario = s
	return s
}

// hasTaint is a condition of fleet.WaitFor: the node has the taint.
func hasTaint(key string, effect corev1.TaintEffect) func(*corev1.Node) bool {
	return func(n *corev1.Node) bool {
		for _, t := range n.Spec.Taints {
			if t.Key == key && t.Effect == effect {
				return true
			}
		}
		return false
	}
}

// eventsFor lists events as `kubectl get events -A --field-selector
// selector` does, until want holds of them or the wait times out.
func eventsFor(t *testing.T, c client.Client, selector string, want func([]corev1.Event) error) {
	t.Helper()
	sel, err := fields.ParseSelector(selector)
	if err != nil {
		t.Fatalf("--field-selector %s: %v", selector, err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	var (
		events  []corev1.Event
		lastErr error
	)
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		list := &corev1.EventList{}
		if err := c.List(ctx, list, client.MatchingFieldsSelector{Selector: sel}); err != nil {
			// A field the apiserver does not know is refused at once.
			return false, err
		}
		events = list.Items
		lastErr = want(events)
		return lastErr == nil, nil
	})
	if err != nil {
		var names []string
		for _, e := range events {
			names = append(names, fmt.Sprintf("%s %s/%s (%s)", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Source.Component))
		}
		t.Fatalf("--field-selector %s: %v: %v; it lists %d events: %s", selector, err, lastErr, len(events), strings.Join(names, ", "))
	}
}
