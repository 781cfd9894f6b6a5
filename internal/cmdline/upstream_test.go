package cmdline

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func parse(t *testing.T, args ...string) (Options, error) {
	t.Helper()
	o := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(discard{})
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Validate()
}

func TestControllerEnabled(t *testing.T) {
	tests := []struct {
		list, name string
		want       bool
	}{
		{"*", nodeLifecycleController, true},
		{"*,bootstrapsigner,tokencleaner", taintEvictionController, true},
		{"*,-node-lifecycle-controller", nodeLifecycleController, false},
		{"*,-nodelifecycle", nodeLifecycleController, false},
		{"node-lifecycle-controller,taint-eviction-controller", nodeLifecycleController, true},
		{"nodelifecycle", nodeLifecycleController, true},
		{"nodelifecycle", taintEvictionController, false},
		{"-taint-eviction-controller,*", taintEvictionController, false},
		{"taint-eviction-controller,-taint-eviction-controller", taintEvictionController, true},
		{"", nodeLifecycleController, false},
		{" * , -garbage-collector-controller", nodeLifecycleController, true},
	}
	for _, tt := range tests {
		if got := controllerEnabled(tt.list, tt.name); got != tt.want {
			t.Errorf("controllerEnabled(%q, %s) = %v, want %v", tt.list, tt.name, got, tt.want)
		}
	}
}

// TestUpstreamFlagsAreAcceptedAndNoted: kube-controller-manager's own flags
// parse, bare booleans included, and each is reported once with why it does
// nothing here.
func TestUpstreamFlagsAreAcceptedAndNoted(t *testing.T) {
	o, err := parse(t, "--profiling", "--use-service-account-credentials=true", "--controllers=*,bootstrapsigner",
		"--cluster-cidr=10.244.0.0/16", "--secure-port=10257", "--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
		"--feature-gates=AllAlpha=false")
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	notes := o.UpstreamNotes()
	var flags []string
	for _, n := range notes {
		flags = append(flags, n.Flag+"="+n.Value)
		if n.Why == "" {
			t.Errorf("--%s has no reason", n.Flag)
		}
	}
	want := "cluster-cidr=10.244.0.0/16 controllers=*,bootstrapsigner feature-gates=AllAlpha=false profiling=true use-service-account-credentials=true"
	if got := strings.Join(flags, " "); got != want {
		t.Errorf("notes for %s, want %s", got, want)
	}
	// The secure port's flags are acted on, as kube-controller-manager does.
	if o.Serving.SecureServing.BindPort != 10257 || o.Serving.Authentication.RemoteKubeConfigFile != "/etc/kubernetes/controller-manager.conf" {
		t.Errorf("secure port %d, authentication kubeconfig %q: the flags were not acted on",
			o.Serving.SecureServing.BindPort, o.Serving.Authentication.RemoteKubeConfigFile)
	}
	if o, _ := parse(t); len(o.UpstreamNotes()) != 0 {
		t.Errorf("notes without any upstream flag: %v", o.UpstreamNotes())
	}
}

func TestUpstreamFlagsThatContradictThisBinaryAreRefused(t *testing.T) {
	tests := []struct {
		args []string
		want []string // one line each
	}{
		{[]string{"--controllers=*,-node-lifecycle-controller"}, []string{"invalid --controllers=*,-node-lifecycle-controller: leaves out node-lifecycle-controller"}},
		{[]string{"--controllers=garbage-collector-controller"}, []string{
			"invalid --controllers=garbage-collector-controller: leaves out node-lifecycle-controller",
			"invalid --controllers=garbage-collector-controller: leaves out taint-eviction-controller",
		}},
		{[]string{"--enable-leader-migration", "--leader-migration-config=/etc/lm.yaml"}, []string{
			"invalid --enable-leader-migration=true: leader migration is not supported",
			"invalid --leader-migration-config=/etc/lm.yaml: leader migration is not supported",
		}},
	}
	for _, tt := range tests {
		_, err := parse(t, tt.args...)
		if err == nil {
			t.Errorf("%v accepted", tt.args)
			continue
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) != len(tt.want) {
			t.Errorf("%v: %d lines, want %d: %v", tt.args, len(lines), len(tt.want), err)
			continue
		}
		for i, w := range tt.want {
			if !strings.HasPrefix(lines[i], w) {
				t.Errorf("%v: line %q, want it to start with %q", tt.args, lines[i], w)
			}
		}
	}
	if _, err := parse(t, "--enable-leader-migration=false"); err != nil {
		t.Errorf("--enable-leader-migration=false refused: %v", err)
	}
	if _, err := parse(t, "--profiling=sometimes"); err == nil || !strings.Contains(err.Error(), "not a boolean") {
		t.Errorf("--profiling=sometimes: got %v, want a boolean refused", err)
	}
}

func TestUpstreamFlagsStayOutOfHelp(t *testing.T) {
	o := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	usage := fs.FlagUsages()
	for _, name := range []string{"cluster-cidr", "controllers"} {
		if strings.Contains(usage, "--"+name+" ") {
			t.Errorf("--%s shows in --help", name)
		}
	}
	for _, name := range []string{"master", "secure-port", "authorization-kubeconfig"} {
		if !strings.Contains(usage, "--"+name+" ") {
			t.Errorf("--%s, which this binary acts on, is missing from --help", name)
		}
	}
}
