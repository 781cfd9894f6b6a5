package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controller is the node-lifecycle-controller binary, run as its own process
// against the demo's control plane with the demo's short timings.
type controller struct {
	path       string
	flags      []string
	cmd        *exec.Cmd
	exited     chan struct{} // closed when the process has exited
	waitErr    error         // how it exited; read only after exited is closed
	metricsURL string
	http       *http.Client
}

// controllerFlags are the flags the demo runs the controller with: the
// kube-controller-manager flag names, with seconds where a real cluster has
// minutes.
func controllerFlags(kubeconfig, metricsAddr, probeAddr string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--node-monitor-period=" + monitorPeriod.String(),
		"--node-monitor-grace-period=" + graceperiod.String(),
		"--node-startup-grace-period=" + startupGrace.String(),
		"--pod-eviction-timeout=" + podEvictTimeout.String(),
		"--node-eviction-rate=" + strconv.FormatFloat(evictionRate, 'f', -1, 64),
		"--partition-freeze-cooldown=" + freezeCooldown.String(),
		"--metrics-bind-address=" + metricsAddr,
		"--health-probe-bind-address=" + probeAddr,
	}
}

// startController writes a kubeconfig for the control plane into outDir and
// starts the binary at path, its output going to log. It returns once the
// controller reports ready.
func startController(ctx context.Context, env *envtest.Environment, path, outDir string, log *os.File) (*controller, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("controller binary (run `make build`): %w", err)
	}
	user, err := env.AddUser(envtest.User{Name: "node-lifecycle-controller", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("add the controller's user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return nil, fmt.Errorf("render the controller's kubeconfig: %w", err)
	}
	kubeconfigPath := filepath.Join(outDir, "kubeconfig")
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return nil, fmt.Errorf("write kubeconfig: %w", err)
	}
	metricsAddr, err := freeLocalAddr()
	if err != nil {
		return nil, err
	}
	probeAddr, err := freeLocalAddr()
	if err != nil {
		return nil, err
	}

	flags := controllerFlags(kubeconfigPath, metricsAddr, probeAddr)
	fmt.Printf("Starting %s %s ...\n", path, strings.Join(flags[1:], " "))
	cmd := exec.Command(path, flags...)
	cmd.Stdout, cmd.Stderr = log, log
	setParentDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start controller: %w", err)
	}
	c := &controller{
		path:       path,
		flags:      flags,
		cmd:        cmd,
		exited:     make(chan struct{}),
		metricsURL: "http://" + metricsAddr + "/metrics",
		http:       &http.Client{Timeout: 2 * time.Second},
	}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	if err := c.waitReady(ctx, "http://"+probeAddr+"/readyz"); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// status runs the controller binary's status subcommand with the flags the
// controller runs with, and returns what it printed.
func (c *controller) status(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, c.path, append([]string{"status"}, c.flags...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s status: %w", c.path, err)
	}
	return string(out), nil
}

// waitReady polls the readiness probe until it answers 200, the process
// exits, or a minute passes.
func (c *controller) waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if resp, err := c.http.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-c.exited:
			return fmt.Errorf("controller exited before it was ready (see its log): %w", c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("controller not ready at %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
}

// stop asks the controller to shut down and waits for it, killing it if it
// takes longer than ten seconds.
func (c *controller) stop() {
	select {
	case <-c.exited:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		var exit *exec.ExitError
		if c.waitErr != nil && !errors.As(c.waitErr, &exit) {
			fmt.Fprintf(os.Stderr, "demo: controller: %v\n", c.waitErr)
		}
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		fmt.Fprintln(os.Stderr, "demo: the controller did not stop within 10s and was killed")
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

// freeLocalAddr returns a loopback address with a port nobody listens on.
func freeLocalAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}
