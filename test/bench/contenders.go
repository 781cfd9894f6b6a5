package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// The timings both controllers run with: kube-controller-manager's defaults,
// passed explicitly to both so that neither depends on the other's.
const (
	monitorGrace  = 50 * time.Second
	monitorPeriod = 5 * time.Second
	startupGrace  = time.Minute
	evictionRate  = 0.1 // NoExecute taints per second and zone
)

// sharedFlags are the flags both controllers get, word for word.
func sharedFlags() []string {
	return append(append([]string{
		"--node-monitor-grace-period=" + monitorGrace.String(),
		"--node-monitor-period=" + monitorPeriod.String(),
		"--node-startup-grace-period=" + startupGrace.String(),
		"--node-eviction-rate=" + strconv.FormatFloat(evictionRate, 'f', -1, 64),
		"--secondary-node-eviction-rate=0.01",
		"--large-cluster-size-threshold=50",
		"--unhealthy-zone-threshold=0.55",
	}, clientFlags()...), "--leader-elect=false")
}

// clientFlags are the client's rate limits: kube-controller-manager's
// defaults. Of the shared flags, they are the only ones the floor takes; it
// has no timings to follow and no lease to elect.
func clientFlags() []string {
	return []string{"--kube-api-qps=20", "--kube-api-burst=30"}
}

// upstreamControllers are the kube-controller-manager controllers ours
// replaces.
const upstreamControllers = "node-lifecycle-controller,taint-eviction-controller"

// contender is one process under test: a controller, or the floor.
type contender struct {
	// Name is "upstream", "ours" or "floor".
	Name string
	// binary is its executable.
	binary string
	// flags are the flags it gets beside its kubeconfig and serving flags.
	flags []string
	// judges is true for a controller, which marks and taints nodes, and
	// false for the floor, which only watches: the bench stops no node in
	// its run, for there is nothing to time.
	judges bool
	// serving returns the flags that make it serve on free local ports
	// (readiness, and profiles when asked for), with the URLs to poll.
	serving func(dir string, profile bool) (servingFlags, error)
	// as is the user it acts as (--fairness).
	as envtest.User
}

// servingFlags are a contender's own flags and where it answers.
type servingFlags struct {
	args       []string
	readyURL   string
	profileURL string // empty when profiles are not served
	client     *http.Client
}

// user is the name of the contender's envtest user, by which the audit log
// tells its requests apart.
func (c contender) user() string { return c.as.Name }

// contenderNames are the contenders, in the order of the first round.
var contenderNames = []string{"upstream", "ours", "floor"}

// pickContenders returns the contenders to run, in the order of the first
// round, and the binary of each. The floor's is built from source into the
// output directory unless c.floor names one.
func pickContenders(ctx context.Context, c config) ([]contender, error) {
	all := []contender{
		{Name: "upstream", binary: c.upstream, flags: sharedFlags(), judges: true, serving: upstreamServing},
		{Name: "ours", binary: c.ours, flags: sharedFlags(), judges: true, serving: oursServing},
		{Name: "floor", binary: c.floor, flags: clientFlags(), serving: floorServing},
	}
	var out []contender
	for _, ct := range all {
		if c.only != "" && !slices.Contains(strings.Split(c.only, ","), ct.Name) {
			continue
		}
		ct.as = identity(c.fairness, ct.Name)
		if ct.Name == "floor" && ct.binary == "" {
			built, err := buildFloor(ctx, c.outDir)
			if err != nil {
				return nil, err
			}
			ct.binary = built
		}
		if _, err := os.Stat(ct.binary); err != nil {
			return nil, fmt.Errorf("%s binary (run `make envtest-assets build`): %w", ct.Name, err)
		}
		out = append(out, ct)
	}
	return out, nil
}

// buildFloor builds test/bench/floor into dir as `make build` builds our
// controller, so that neither binary is built differently, and returns its
// path. It runs in the repository's root, as the bench does; the floor is
// in the bench's module, test/bench.
func buildFloor(ctx context.Context, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	path, err := filepath.Abs(filepath.Join(dir, "floor"))
	if err != nil {
		return "", fmt.Errorf("floor binary path: %w", err)
	}
	fmt.Printf("Building the floor into %s ...\n", path)
	cmd := exec.CommandContext(ctx, "go", "build", "-C", "test/bench", "-trimpath", "-o", path, "./floor")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the floor: %w: %s", err, out)
	}
	return path, nil
}

// inRound returns the contenders in the order they run in round, counting
// from zero: each round starts one later in the list than the one before,
// so that over as many rounds as there are contenders each runs first,
// second and last once.
func inRound(contenders []contender, round int) []contender {
	if len(contenders) == 0 {
		return nil
	}
	k := round % len(contenders)
	return append(slices.Clone(contenders[k:]), contenders[:k]...)
}

// upstreamServing makes kube-controller-manager serve HTTPS on a free
// loopback port with a self-signed certificate in dir. Without an
// authentication or authorization kubeconfig it cannot check callers, so the
// paths the bench reads are allowed to anyone; the port is on loopback only.
func upstreamServing(dir string, profile bool) (servingFlags, error) {
	addr, err := harness.FreeLocalAddr()
	if err != nil {
		return servingFlags{}, err
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return servingFlags{}, fmt.Errorf("split %s: %w", addr, err)
	}
	allowed := []string{"/healthz", "/readyz", "/livez", "/metrics"}
	s := servingFlags{
		readyURL: "https://" + addr + "/healthz",
		// The certificate is self-signed, by a process the bench started,
		// serving on loopback.
		client: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
		}},
	}
	if profile {
		allowed = append(allowed, "/debug/pprof/*")
		s.profileURL = "https://" + addr + "/debug/pprof/profile"
	}
	s.args = []string{
		"--controllers=" + upstreamControllers,
		"--use-service-account-credentials=false",
		"--bind-address=" + host,
		"--secure-port=" + port,
		"--cert-dir=" + filepath.Join(dir, "upstream-serving"),
		"--authentication-skip-lookup",
		"--authorization-always-allow-paths=" + strings.Join(allowed, ","),
		"--profiling=" + strconv.FormatBool(profile),
	}
	return s, nil
}

// oursServing serves our controller's probes and metrics on its secure
// port, as upstream's are served above, and, when asked for, profiles on a
// free loopback port.
func oursServing(_ string, profile bool) (servingFlags, error) {
	port, err := harness.NewSecurePort()
	if err != nil {
		return servingFlags{}, err
	}
	s := servingFlags{
		args:     append(port.Flags("/metrics"), "--authentication-skip-lookup"),
		readyURL: port.URL("/healthz"),
		client:   port.Client,
	}
	if profile {
		addr, err := harness.FreeLocalAddr()
		if err != nil {
			return servingFlags{}, err
		}
		s.args = append(s.args, "--pprof-bind-address="+addr)
		s.profileURL = "http://" + addr + "/debug/pprof/profile"
	}
	return s, nil
}

// floorServing serves the floor's probes and, when asked for, profiles on
// free loopback ports, as oursServing does; it serves no metrics.
func floorServing(_ string, profile bool) (servingFlags, error) {
	probe, err := harness.FreeLocalAddr()
	if err != nil {
		return servingFlags{}, err
	}
	s := servingFlags{
		args:     []string{"--health-probe-bind-address=" + probe},
		readyURL: "http://" + probe + "/readyz",
		client:   &http.Client{Timeout: 2 * time.Second},
	}
	if profile {
		addr, err := harness.FreeLocalAddr()
		if err != nil {
			return servingFlags{}, err
		}
		s.args = append(s.args, "--pprof-bind-address="+addr)
		s.profileURL = "http://" + addr + "/debug/pprof/profile"
	}
	return s, nil
}

// running is a contender's process, ready.
type running struct {
	*harness.Process
	serving servingFlags
}

// start runs the contender with its own user's kubeconfig and returns once
// it serves.
func (c contender) start(ctx context.Context, env *envtest.Environment, dir string, profile bool, gogc string) (*running, error) {
	kubeconfig := filepath.Join(dir, c.Name+".kubeconfig")
	if err := harness.WriteUserKubeconfig(env, c.as, kubeconfig); err != nil {
		return nil, err
	}
	s, err := c.serving(dir, profile)
	if err != nil {
		return nil, err
	}
	args := append(append([]string{"--kubeconfig=" + kubeconfig}, c.flags...), s.args...)
	log, err := os.Create(filepath.Join(dir, c.Name+".log"))
	if err != nil {
		return nil, fmt.Errorf("create the log of %s: %w", c.Name, err)
	}
	defer func() { _ = log.Close() }() // the child holds its own descriptor
	fmt.Printf("Starting %s: %s %s\n", c.Name, c.binary, strings.Join(args, " "))
	var goEnv []string
	if gogc != "" {
		goEnv = append(goEnv, "GOGC="+gogc)
	}
	proc, err := harness.StartProcessWithEnv(c.binary, args, goEnv, log)
	if err != nil {
		return nil, err
	}
	if err := proc.WaitReady(ctx, s.client, s.readyURL, 2*time.Minute); err != nil {
		return nil, errorsJoinStop(err, proc)
	}
	return &running{Process: proc, serving: s}, nil
}

// errorsJoinStop stops proc after err and reports both.
func errorsJoinStop(err error, proc *harness.Process) error {
	if stopErr := proc.Stop(30 * time.Second); stopErr != nil {
		return fmt.Errorf("%w (and stopping it: %w)", err, stopErr)
	}
	return err
}
