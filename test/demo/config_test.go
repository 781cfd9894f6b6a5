package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      []string
		wantNodes int
		wantErr   string // a part of the error; "" for none
	}{
		{name: "defaults", wantNodes: defaultSimulatedNodes},
		{name: "hollow takes its own default", args: []string{"--kubelets=hollow"}, wantNodes: defaultHollowNodes},
		{name: "nodes given", args: []string{"--kubelets=hollow", "--nodes=6", "--zones=2"}, wantNodes: 6},
		{name: "unknown kubelets", args: []string{"--kubelets=real"}, wantErr: "--kubelets=real: want simulated or hollow"},
		{name: "one zone", args: []string{"--zones=1"}, wantErr: "--zones=1"},
		{name: "fewer nodes than zones", args: []string{"--nodes=3", "--zones=4"}, wantErr: "--nodes=3"},
		{name: "too few nodes", args: []string{"--nodes=2", "--zones=2"}, wantErr: "--nodes=2"},
		{name: "too many hollow kubelets", args: []string{"--kubelets=hollow", "--nodes=201"}, wantErr: "at most 200 hollow"},
		{name: "as many simulated nodes as asked", args: []string{"--nodes=1000"}, wantNodes: 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("demo", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c, err := parseFlags(fs, tc.args)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("parseFlags(%q): %v", tc.args, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("parseFlags(%q) = %v, want an error with %q", tc.args, err, tc.wantErr)
			case tc.wantErr == "" && c.nodes != tc.wantNodes:
				t.Errorf("parseFlags(%q) gives %d nodes, want %d", tc.args, c.nodes, tc.wantNodes)
			}
		})
	}
}

// TestTimingsSuitTheKubelets: the controller's options take the demo's
// timings on either kubelets, and its grace lets two renewals go missing before a live
// node is marked: a real kubelet's Lease is renewed every 10s.
func TestTimingsSuitTheKubelets(t *testing.T) {
	for _, kubelets := range []string{simulatedKubelets, hollowKubelets} {
		t.Run(kubelets, func(t *testing.T) {
			timings := timingsFor(kubelets)
			o := options.Default()
			fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
			o.AddFlags(fs)
			// The options of the controller's judgement, not those of its
			// process (kubeconfig, leader election, serving).
			var args []string
			for _, f := range controllerFlags("kubeconfig", harness.SecurePort{Addr: "127.0.0.1:10263"}, timings) {
				if name, _, _ := strings.Cut(strings.TrimPrefix(f, "--"), "="); fs.Lookup(name) != nil {
					args = append(args, f)
				}
			}
			if len(args) < 6 {
				t.Fatalf("only %q of the demo's flags are options", args)
			}
			if err := fs.Parse(args); err != nil {
				t.Fatalf("the controller's flags: %v", err)
			}
			if err := o.Validate(); err != nil {
				t.Errorf("the controller refuses the demo's flags: %v", err)
			}
			if timings.grace < 3*timings.renewEvery {
				t.Errorf("grace %v is under three renewals (every %v)", timings.grace, timings.renewEvery)
			}
			if timings.freezeCooldown < timings.readyWithin() {
				t.Errorf("the freeze's cooldown %v ends before a resumed node says Ready (within %v)", timings.freezeCooldown, timings.readyWithin())
			}
		})
	}
	if got := timingsFor(hollowKubelets).renewEvery; got != harness.KubeletLeaseRenewInterval {
		t.Errorf("hollow kubelets renew every %v, the demo assumes %v", harness.KubeletLeaseRenewInterval, got)
	}
}
