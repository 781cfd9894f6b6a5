// Package probes counts the outcome of the controller's health checks as a
// metric, as kube-controller-manager's kubernetes_healthcheck does, so that
// an alert can say which check fails without probing the process.
package probes

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var healthCheck = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "node_lifecycle_healthcheck",
	Help: "The last outcome of each health check, by name and by the endpoint it serves (livez or readyz): 1 passed, 0 failed. " +
		"Set each time the check is asked, as the kubelet's probes ask it.",
}, []string{"name", "type"})

// Metrics returns the package's collectors.
func Metrics() []prometheus.Collector { return []prometheus.Collector{healthCheck} }

func init() { metrics.Registry.MustRegister(Metrics()...) }

// Recorded returns checks, each setting the gauge of its name and of kind
// (livez or readyz) to its outcome whenever it is asked.
func Recorded(kind string, checks map[string]healthz.Checker) map[string]healthz.Checker {
	out := make(map[string]healthz.Checker, len(checks))
	for name, check := range checks {
		gauge := healthCheck.WithLabelValues(name, kind)
		out[name] = func(req *http.Request) error {
			err := check(req)
			if err != nil {
				gauge.Set(0)
			} else {
				gauge.Set(1)
			}
			return err
		}
	}
	return out
}
