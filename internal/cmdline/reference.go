package cmdline

import "slices"

// sharedFlags are this binary's flags that kube-controller-manager has under
// the same name. test/deploy checks the list against kube-controller-manager's
// --help, both ways.
var sharedFlags = []string{
	"kubeconfig", "master", "kube-api-qps", "kube-api-burst",
	"node-monitor-period", "node-monitor-grace-period", "node-startup-grace-period",
	"node-eviction-rate", "secondary-node-eviction-rate", "large-cluster-size-threshold", "unhealthy-zone-threshold",
	"leader-elect", "leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period",
	"leader-elect-resource-lock", "leader-elect-resource-name", "leader-elect-resource-namespace",
	"v", "vmodule", "logging-format", "log-flush-frequency",
	"log-json-info-buffer-size", "log-json-split-stream", "log-text-info-buffer-size", "log-text-split-stream",
	"version",
	// The secure port's, bound by k8s.io/apiserver's options as
	// kube-controller-manager binds them.
	"bind-address", "secure-port", "cert-dir", "tls-cert-file", "tls-private-key-file", "tls-cipher-suites",
	"tls-curve-preferences", "tls-min-version", "tls-sni-cert-key", "http2-max-streams-per-connection",
	"disable-http2-serving", "permit-port-sharing", "permit-address-sharing",
	"authentication-kubeconfig", "authentication-token-webhook-cache-ttl", "authentication-skip-lookup",
	"authentication-tolerate-lookup-failure", "client-ca-file", "requestheader-allowed-names",
	"requestheader-client-ca-file", "requestheader-extra-headers-prefix", "requestheader-group-headers",
	"requestheader-uid-headers", "requestheader-username-headers",
	"authorization-kubeconfig", "authorization-always-allow-paths",
	"authorization-webhook-cache-authorized-ttl", "authorization-webhook-cache-unauthorized-ttl",
}

// SharedWithKubeControllerManager reports whether kube-controller-manager has
// a flag of this name, which this binary acts on too.
func SharedWithKubeControllerManager(name string) bool { return slices.Contains(sharedFlags, name) }

// UpstreamGroup is a set of kube-controller-manager flags this binary accepts
// without acting on them, and why.
type UpstreamGroup struct {
	Why   string
	Names []string
}

// UpstreamGroups lists the kube-controller-manager flags this binary accepts
// without effect, by why, each group's names sorted.
func UpstreamGroups() []UpstreamGroup {
	out := make([]UpstreamGroup, 0, len(upstreamFlags))
	for _, g := range upstreamFlags {
		names := slices.Concat(g.bools, g.values)
		slices.Sort(names)
		out = append(out, UpstreamGroup{Why: g.why, Names: names})
	}
	return out
}
