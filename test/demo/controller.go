package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// controller is the node-lifecycle-controller binary, run as its own process
// against the demo's control plane with the demo's timings.
type controller struct {
	*harness.Process
	metricsURL string
	http       *http.Client
}

// controllerFlags are the flags the demo runs the controller with: the
// kube-controller-manager flag names, with the demo's timings t.
func controllerFlags(kubeconfig string, port harness.SecurePort, t timings) []string {
	return append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--node-monitor-period=" + t.monitorPeriod.String(),
		"--node-monitor-grace-period=" + t.grace.String(),
		"--node-startup-grace-period=" + t.startupGrace.String(),
		"--pod-eviction-timeout=" + t.podEvictTimeout.String(),
		"--node-eviction-rate=" + strconv.FormatFloat(t.evictionRate, 'f', -1, 64),
		"--partition-freeze-cooldown=" + t.freezeCooldown.String(),
		// The secure port on loopback, read by the demo itself: its metrics
		// are open to any caller there.
	}, port.Flags("/metrics")...)
}

// startController writes a kubeconfig for the control plane into outDir and
// starts the binary at path with the timings t, its output going to log. It
// returns once the controller reports ready.
func startController(ctx context.Context, env *envtest.Environment, path, outDir string, log *os.File, t timings) (*controller, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("controller binary (run `make build`): %w", err)
	}
	kubeconfigPath := filepath.Join(outDir, "kubeconfig")
	if err := harness.WriteKubeconfig(env, "node-lifecycle-controller", kubeconfigPath); err != nil {
		return nil, err
	}
	port, err := harness.NewSecurePort()
	if err != nil {
		return nil, err
	}

	flags := controllerFlags(kubeconfigPath, port, t)
	fmt.Printf("Starting %s %s ...\n", path, strings.Join(flags[1:], " "))
	proc, err := harness.StartProcess(path, flags, log)
	if err != nil {
		return nil, err
	}
	c := &controller{
		Process:    proc,
		metricsURL: port.URL("/metrics"),
		http:       port.Client,
	}
	if err := c.WaitReady(ctx, c.http, port.URL("/readyz"), time.Minute); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// status runs the controller binary's status subcommand with the flags the
// controller runs with, and returns what it printed.
func (c *controller) status(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, c.Path, append([]string{"status"}, c.Args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s status: %w", c.Path, err)
	}
	return string(out), nil
}

// stop shuts the controller down, killing it if it takes longer than ten
// seconds.
func (c *controller) stop() {
	if err := c.Stop(10 * time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "demo: controller: %v\n", err)
	}
}

// controllerView is what the controller's metrics say about the cluster.
type controllerView struct {
	// Frozen is true while a partition freeze holds destructive work.
	Frozen bool
	// ZoneStates maps a zone label (region/zone) to its state.
	ZoneStates map[string]string
}

// scrape reads the controller's own view from its metrics endpoint.
func (c *controller) scrape(ctx context.Context) (controllerView, error) {
	v := controllerView{ZoneStates: map[string]string{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.metricsURL, nil)
	if err != nil {
		return v, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return v, fmt.Errorf("scrape controller metrics: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return v, fmt.Errorf("parse controller metrics: %w", err)
	}
	if f := families["node_lifecycle_partition_freeze"]; f != nil {
		for _, m := range f.GetMetric() {
			v.Frozen = v.Frozen || m.GetGauge().GetValue() == 1
		}
	}
	if f := families["node_lifecycle_zone_state"]; f != nil {
		for _, m := range f.GetMetric() {
			if m.GetGauge().GetValue() != 1 {
				continue
			}
			var zone, state string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "zone":
					zone = l.GetValue()
				case "state":
					state = l.GetValue()
				}
			}
			v.ZoneStates[zone] = state
		}
	}
	return v, nil
}
