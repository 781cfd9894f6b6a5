package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Hollow kubelets are real kubelets: kubemark --morph=kubelet runs the
// kubelet's own code (registration, the Lease controller, the node status
// loop, the pod workers and the status manager, the static pod source)
// against a fake container runtime served from inside the same process: no
// container runtime and no cgroups, and it writes only under /tmp.
//
// What one costs here (kubemark of k8s.io/kubernetes v1.37.2 on 2 cores,
// against an envtest control plane; TestHollowKubeletCost measures it, and
// docs/kubelet.md has the numbers): 0.33% of a core once steady, 18 MiB of
// memory of its own (80 MiB resident, most of it the binary's pages, which
// all share), 0.2s of a core to start. CPU bounds how many fit: 200 and
// their control plane take under 0.8 of a core; 400 take 1.5, and saturate
// both while they start.
//
// Its timings are kubemark's and cannot be set by flag: the Lease lasts 40s
// and is renewed every 10s (0.25 of it, with 4% jitter), node status is
// computed every 10s and written on a change or every 5 minutes. A grace
// period of 30s lets two renewals go missing before a live one is marked.

// KubeletLeaseDuration and KubeletLeaseRenewInterval are a hollow kubelet's
// Lease timings, and KubeletStatusInterval how often it computes its node
// status (writing it on a change, or every 5 minutes), fixed by kubemark.
const (
	KubeletLeaseDuration      = 40 * time.Second
	KubeletLeaseRenewInterval = 10 * time.Second
	KubeletStatusInterval     = 10 * time.Second
)

// Node labels that place a hollow kubelet in a zone.
const (
	LabelRegion = "topology.kubernetes.io/region"
	LabelZone   = "topology.kubernetes.io/zone"
)

// HollowKubeletConfig is what the hollow kubelets of one StartHollowKubelets
// share.
type HollowKubeletConfig struct {
	// Binary is kubemark's path (KubemarkBinary finds it).
	Binary string
	// Kubeconfig is the kubeconfig they reach the apiserver with. Its user
	// must be allowed what a kubelet does: register its Node, write its
	// status and Lease, create mirror pods. A member of system:masters is.
	Kubeconfig string
	// Dir holds a directory per kubelet, named after it, with the log of
	// each of its runs (kubelet-1.log, ...).
	Dir string
	// Region and Zone label the Node, as a cloud provider would; an empty
	// one leaves its label off.
	Region, Zone string
	// Labels are more labels for the Node.
	Labels map[string]string
	// Verbosity is the kubelet's klog -v; 0 logs errors and the few lines
	// at level 0, enough to see a refused manifest.
	Verbosity int
}

// HollowKubelet is one hollow kubelet, running as a child process.
type HollowKubelet struct {
	// Name is its Node's name.
	Name string
	// Port is the port of its API (/healthz, /pods), served on every
	// address without TLS or authentication: it is a test's.
	Port int

	cfg        HollowKubeletConfig
	dir        string            // cfg.Dir/Name
	staticPods map[string][]byte // file name to manifest, for every run
	runs       int               // how many times it was started
	log        *os.File          // the current run's output
	rootDir    string            // the current run's root directory
	sockets    []string          // fake runtime sockets that appeared as it started
	proc       *Process
}

// KubemarkBinary finds kubemark: $KUBEMARK when set, else kubemark in
// $KUBEBUILDER_ASSETS, else the first of fallbacks that exists.
func KubemarkBinary(fallbacks ...string) (string, error) {
	if path := os.Getenv("KUBEMARK"); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("KUBEMARK=%s: %w", path, err)
		}
		return path, nil
	}
	candidates := slices.Clone(fallbacks)
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		candidates = append([]string{filepath.Join(dir, "kubemark")}, candidates...)
	}
	for _, path := range candidates {
		if _, err := os.Stat(path); err == nil {
			return filepath.Abs(path)
		}
	}
	return "", fmt.Errorf("no kubemark in %v: run `make kubemark`, which builds it into bin/, or set KUBEMARK", candidates)
}

// StartHollowKubelets starts a hollow kubelet for each name, one after the
// other, each returning once its API answers. When one fails to start, those
// already started are killed.
func StartHollowKubelets(ctx context.Context, cfg HollowKubeletConfig, names ...string) ([]*HollowKubelet, error) {
	kubelets := make([]*HollowKubelet, 0, len(names))
	for _, name := range names {
		k, err := StartHollowKubelet(ctx, cfg, name)
		if err != nil {
			for _, started := range kubelets {
				started.Close()
			}
			return nil, err
		}
		kubelets = append(kubelets, k)
	}
	return kubelets, nil
}

// StartHollowKubelet starts a hollow kubelet whose Node is name, and returns
// once its API answers; it registers its Node and takes its Lease soon
// after.
func StartHollowKubelet(ctx context.Context, cfg HollowKubeletConfig, name string) (*HollowKubelet, error) {
	dir := filepath.Join(cfg.Dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the directory of hollow kubelet %s: %w", name, err)
	}
	k := &HollowKubelet{cfg: cfg, Name: name, dir: dir, staticPods: map[string][]byte{}}
	// Kubelets started together may be handed the same free port: the
	// one that finds it taken starts again on another.
	for try := 1; ; try++ {
		addr, err := FreeLocalAddr()
		if err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		if k.Port, err = strconv.Atoi(port); err != nil {
			return nil, fmt.Errorf("port of %s: %w", addr, err)
		}
		err = k.start(ctx)
		if err == nil {
			return k, nil
		}
		if !errors.Is(err, ErrPortTaken) || try == portTries {
			return nil, err
		}
	}
}

// portTries is how many ports StartHollowKubelet tries a kubelet on.
const portTries = 3

// start runs kubemark anew, logging to a file of the run's own. kubemark
// makes a new root directory, with the static pod directory in it, under
// /tmp at each start (it has no flag for either, and ignores TMPDIR), so a
// restarted kubelet starts from an empty root, as a node whose disk was
// replaced does; the static pods AddStaticPod gave it are written into each
// run's.
func (k *HollowKubelet) start(ctx context.Context) error {
	k.runs++
	log, err := os.Create(filepath.Join(k.dir, fmt.Sprintf("kubelet-%d.log", k.runs)))
	if err != nil {
		return fmt.Errorf("create the log of hollow kubelet %s: %w", k.Name, err)
	}
	k.log, k.rootDir, k.sockets = log, "", nil
	before, err := fakeRuntimeSockets()
	if err != nil {
		_ = k.log.Close()
		return err
	}
	args := k.args()
	if _, err := fmt.Fprintf(k.log, "=== %s %s\n", k.cfg.Binary, strings.Join(args, " ")); err != nil {
		_ = k.log.Close()
		return fmt.Errorf("write the log of hollow kubelet %s: %w", k.Name, err)
	}
	// kubemark starts no health server of its own; the kubelet's API
	// serves /healthz.
	proc, err := StartProcess(k.cfg.Binary, args, k.log)
	if err != nil {
		_ = k.log.Close()
		return fmt.Errorf("start hollow kubelet %s: %w", k.Name, err)
	}
	k.proc = proc
	client := &http.Client{Timeout: 2 * time.Second}
	if err := proc.WaitReady(ctx, client, k.URL("/healthz"), time.Minute); err != nil {
		k.stop()
		return fmt.Errorf("hollow kubelet %s (log %s): %w", k.Name, k.log.Name(), err)
	}
	// The answer may have come from another process on the same port.
	if err := proc.WaitListening(ctx, k.Port, 10*time.Second); err != nil {
		k.stop()
		return fmt.Errorf("hollow kubelet %s (log %s): %w", k.Name, k.log.Name(), err)
	}
	// By now kubemark has logged the root directory it made, and listens
	// on its fake runtime's socket.
	if k.rootDir, err = k.loggedRootDir(); err != nil {
		k.stop()
		return err
	}
	after, err := fakeRuntimeSockets()
	if err != nil {
		k.stop()
		return err
	}
	for _, s := range after {
		if !slices.Contains(before, s) {
			k.sockets = append(k.sockets, s)
		}
	}
	dir, err := k.StaticPodDir()
	if err != nil {
		k.stop()
		return err
	}
	for _, file := range slices.Sorted(maps.Keys(k.staticPods)) {
		if err := writeManifest(dir, file, k.staticPods[file]); err != nil {
			k.stop()
			return err
		}
	}
	return nil
}

// args are kubemark's flags for the kubelet: its name, port and labels.
func (k *HollowKubelet) args() []string {
	labels := maps.Clone(k.cfg.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	if k.cfg.Region != "" {
		labels[LabelRegion] = k.cfg.Region
	}
	if k.cfg.Zone != "" {
		labels[LabelZone] = k.cfg.Zone
	}
	pairs := make([]string, 0, len(labels))
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		pairs = append(pairs, key+"="+labels[key])
	}
	args := []string{
		"--morph=kubelet",
		"--name=" + k.Name,
		"--kubeconfig=" + k.cfg.Kubeconfig,
		"--kubelet-port=" + strconv.Itoa(k.Port),
		// The read-only port would be one more port per kubelet, and
		// nothing reads it.
		"--kubelet-read-only-port=0",
		// The host's image service is containerd's socket, absent here;
		// the fake runtime's own pulls every image at once.
		"--use-host-image-service=false",
		"--v=" + strconv.Itoa(k.cfg.Verbosity),
	}
	if len(pairs) > 0 {
		args = append(args, "--node-labels="+strings.Join(pairs, ","))
	}
	return args
}

// rootDirLine is how kubemark logs the root directory it made.
var rootDirLine = regexp.MustCompile(`Using (\S+) as root dir for hollow-kubelet`)

// loggedRootDir reads the run's root directory from its log.
func (k *HollowKubelet) loggedRootDir() (string, error) {
	out, err := os.ReadFile(k.log.Name())
	if err != nil {
		return "", fmt.Errorf("read the log of hollow kubelet %s: %w", k.Name, err)
	}
	m := rootDirLine.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("hollow kubelet %s logged no root directory (see %s)", k.Name, k.log.Name())
	}
	return string(m[1]), nil
}

// fakeRuntimeSockets lists the Unix sockets that kubemark's fake runtimes
// listen on: kubemark names them at random under /tmp, does not log them,
// and removes them only when it ends cleanly.
func fakeRuntimeSockets() ([]string, error) {
	socks, err := filepath.Glob("/tmp/kubelet_remote_*.sock")
	if err != nil {
		return nil, fmt.Errorf("list the fake runtime sockets: %w", err)
	}
	return socks, nil
}

// removeDeadSockets removes those of socks that nobody listens on any
// more. The sockets that appeared while a kubelet started may include
// another's, started at the same time, which must stay.
func removeDeadSockets(socks []string) {
	for _, s := range socks {
		conn, err := net.DialTimeout("unix", s, time.Second)
		if err == nil {
			_ = conn.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			_ = os.Remove(s)
		}
	}
}

// StaticPodDir is the directory the running kubelet reads static pods from.
func (k *HollowKubelet) StaticPodDir() (string, error) {
	dirs, err := filepath.Glob(filepath.Join(k.rootDir, "static-pods*"))
	if err != nil || len(dirs) != 1 {
		return "", fmt.Errorf("static pod directory of %s: %d under %s: %w", k.Name, len(dirs), k.rootDir, err)
	}
	return dirs[0], nil
}

// stop kills the current run and removes what it left under /tmp: its
// root directory and its runtime's socket. Its log stays.
func (k *HollowKubelet) stop() {
	k.proc.Kill()
	_ = k.log.Close()
	if k.rootDir != "" {
		_ = os.RemoveAll(k.rootDir)
	}
	removeDeadSockets(k.sockets)
}

// AddStaticPod writes manifest into the kubelet's static pod directory as
// file, as kubeadm writes /etc/kubernetes/manifests, and keeps it there
// after a Restart. The kubelet notices the file within seconds (inotify;
// it also rereads the directory every 20s).
func (k *HollowKubelet) AddStaticPod(file string, manifest []byte) error {
	if file != filepath.Base(file) || strings.HasPrefix(file, ".") {
		// The kubelet skips files whose name starts with a dot.
		return fmt.Errorf("static pod file name %q: want a plain file name, not starting with a dot", file)
	}
	dir, err := k.StaticPodDir()
	if err != nil {
		return err
	}
	if err := writeManifest(dir, file, manifest); err != nil {
		return err
	}
	k.staticPods[file] = bytes.Clone(manifest)
	return nil
}

// writeManifest writes a static pod into dir whole: written beside it under
// a dot name, which the kubelet ignores, then renamed, so that the kubelet
// never reads half a manifest.
func writeManifest(dir, file string, manifest []byte) error {
	tmp := filepath.Join(dir, "."+file)
	if err := os.WriteFile(tmp, manifest, 0o600); err != nil {
		return fmt.Errorf("write static pod %s: %w", file, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, file)); err != nil {
		return fmt.Errorf("place static pod %s: %w", file, err)
	}
	return nil
}

// staticPodRefusals are the kubelet's log messages that say it will not run
// a static pod, or will not show it in the API.
var staticPodRefusals = []string{
	"Could not process manifest file", // the file does not decode or validate
	"Failed creating a mirror pod",    // the apiserver refused its mirror pod
}

// mirrorPodRace is the end of the refusal the kubelet logs when two of its
// syncs both create the mirror pod: the second finds the first's, which is
// no refusal.
const mirrorPodRace = "already exists"

// StaticPodRefusals returns the lines of the kubelet's logs, over all its
// runs, in which it refused a static pod or its mirror pod: kubemark's
// kubelet records no events (its recorder is a fake), it only logs them.
func (k *HollowKubelet) StaticPodRefusals() ([]string, error) {
	var refusals []string
	for run := 1; run <= k.runs; run++ {
		out, err := os.ReadFile(filepath.Join(k.dir, fmt.Sprintf("kubelet-%d.log", run)))
		if err != nil {
			return nil, fmt.Errorf("read the log of hollow kubelet %s: %w", k.Name, err)
		}
		for line := range strings.Lines(string(out)) {
			for _, r := range staticPodRefusals {
				if strings.Contains(line, r) && !strings.Contains(line, mirrorPodRace) {
					refusals = append(refusals, strings.TrimSpace(line))
				}
			}
		}
	}
	return refusals, nil
}

// URL is the URL of path on the kubelet's API.
func (k *HollowKubelet) URL(path string) string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(k.Port)) + path
}

// LogPath is the file the kubelet's current run logs to; the earlier runs'
// are beside it.
func (k *HollowKubelet) LogPath() string { return k.log.Name() }

// Process is the kubelet's current process.
func (k *HollowKubelet) Process() *Process { return k.proc }

// Kill ends the kubelet with SIGKILL, as a node that loses power: no
// request is finished and nothing is said to the apiserver. Its Node, Lease
// and pods stay as they were. It returns once the process has exited.
func (k *HollowKubelet) Kill() { k.proc.Kill() }

// Freeze stops the kubelet with SIGSTOP, every thread of it, as a hung node
// or a paused VM: its connections stay open and its clocks count on, so on
// Resume it finds its Lease overdue.
func (k *HollowKubelet) Freeze() error { return k.proc.Pause() }

// Resume lets a frozen kubelet run again, with SIGCONT.
func (k *HollowKubelet) Resume() error { return k.proc.Resume() }

// Restart kills the kubelet and starts it again under the same name, port
// and labels, from a fresh root directory, with its static pods; it returns
// once the new process's API answers.
func (k *HollowKubelet) Restart(ctx context.Context) error {
	k.stop()
	return k.start(ctx)
}

// Close kills the kubelet and removes its root directory. Its logs stay, in
// its directory under HollowKubeletConfig.Dir.
func (k *HollowKubelet) Close() { k.stop() }

// Usage is what a process has used so far.
type Usage struct {
	// RSS is its resident memory now, counting in full the pages it
	// shares with other processes, such as those of one binary.
	RSS int64
	// PSS is its resident memory now with each shared page divided among
	// the processes that share it: what one more process adds, near enough.
	PSS int64
	// CPU is the processor time it has used since it started, user and
	// system.
	CPU time.Duration
}

// clockTick is the unit of the CPU times in /proc/<pid>/stat: USER_HZ,
// 100 on every Linux this runs on.
const clockTick = 10 * time.Millisecond

// Usage reads the kubelet's memory and processor time from /proc (Linux
// only).
func (k *HollowKubelet) Usage() (Usage, error) {
	return ProcessUsage(k.proc.PID())
}

// ProcessUsage reads the memory and processor time of the process pid from
// /proc (Linux only).
func ProcessUsage(pid int) (Usage, error) {
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	stat, err := os.ReadFile(filepath.Join(proc, "stat"))
	if err != nil {
		return Usage{}, fmt.Errorf("read the state of process %d: %w", pid, err)
	}
	// The fields after the command name, which is in parentheses: state is
	// the first of them, utime and stime the 12th and 13th.
	i := bytes.LastIndex(stat, []byte(") "))
	if i < 0 {
		return Usage{}, fmt.Errorf("state of process %d: no command name in %q", pid, stat)
	}
	fields := strings.Fields(string(stat[i+2:]))
	if len(fields) < 13 {
		return Usage{}, fmt.Errorf("state of process %d: %d fields", pid, len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("state of process %d: cpu time %q: %w", pid, f, err)
		}
		ticks += n
	}
	status, err := os.ReadFile(filepath.Join(proc, "status"))
	if err != nil {
		return Usage{}, fmt.Errorf("read the status of process %d: %w", pid, err)
	}
	rss, err := kilobytes(status, "VmRSS:")
	if err != nil {
		return Usage{}, fmt.Errorf("status of process %d: %w", pid, err)
	}
	rollup, err := os.ReadFile(filepath.Join(proc, "smaps_rollup"))
	if err != nil {
		return Usage{}, fmt.Errorf("read the memory map of process %d: %w", pid, err)
	}
	pss, err := kilobytes(rollup, "Pss:")
	if err != nil {
		return Usage{}, fmt.Errorf("memory map of process %d: %w", pid, err)
	}
	return Usage{RSS: rss, PSS: pss, CPU: time.Duration(ticks) * clockTick}, nil
}

// kilobytes reads the line of a /proc file that starts with key, "key:  123 kB",
// and returns its value in bytes.
func kilobytes(file []byte, key string) (int64, error) {
	for line := range strings.Lines(string(file)) {
		if rest, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s %q: %w", key, rest, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no " + key)
}
