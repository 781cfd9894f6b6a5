// Package buildinfo tells which build of the controller runs, on the command
// line (--version) and as a metric, as kube-controller-manager's
// kubernetes_build_info does.
package buildinfo

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Info is a build of the controller.
type Info struct {
	// Version is the release the binary was built as, or the module's
	// version as Go records it ("(devel)" for a build in the repository),
	// or "unknown".
	Version string
	// Revision is the commit the build recorded, "" when none; Modified is
	// true when the tree had changes.
	Revision string
	Modified bool
	// GoVersion is the Go release that built it; ClientGo is the version of
	// k8s.io/client-go it was built with.
	GoVersion, ClientGo string
}

// Read returns the running build, stamped as version when not empty.
func Read(stamped string) Info {
	info := Info{Version: stamped, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if info.Version == "" {
			info.Version = "unknown"
		}
		return info
	}
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	for _, dep := range bi.Deps {
		if dep.Path == "k8s.io/client-go" {
			info.ClientGo = dep.Version
		}
	}
	return info
}

// String reads as --version prints it: the version, the commit, and
// whether the tree was modified.
func (i Info) String() string {
	s := i.Version
	if i.Revision != "" {
		s += " " + i.Revision
	}
	if i.Modified {
		s += " (modified)"
	}
	return s
}

var buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "node_lifecycle_build_info",
	Help: "The running build, always 1: its version, the commit it was built from, the Go release and k8s.io/client-go version it was built with.",
}, []string{"version", "revision", "go_version", "client_go_version"})

// Metrics returns the package's collectors.
func Metrics() []prometheus.Collector { return []prometheus.Collector{buildInfo} }

func init() { metrics.Registry.MustRegister(Metrics()...) }

// Publish sets the build info metric to i.
func Publish(i Info) {
	buildInfo.Reset()
	buildInfo.WithLabelValues(i.Version, i.Revision, i.GoVersion, i.ClientGo).Set(1)
}
