package refdocs

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricsTellsEachKind(t *testing.T) {
	page, err := Metrics([]prometheus.Collector{
		prometheus.NewGauge(prometheus.GaugeOpts{Name: "a_gauge", Help: "A | gauge."}),
		prometheus.NewCounter(prometheus.CounterOpts{Name: "a_counter_total", Help: "A counter."}),
		prometheus.NewHistogram(prometheus.HistogramOpts{Name: "a_histogram_seconds", Help: "A histogram."}),
		prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "a_gauge_vec", Help: "Gauges."}, []string{"zone", "pool"}),
		prometheus.NewCounterVec(prometheus.CounterOpts{Name: "a_counter_vec_total", Help: `Say "when".`}, []string{"action"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{
		"| `a_gauge` | gauge |  | A \\| gauge. |",
		"| `a_counter_total` | counter |  | A counter. |",
		"| `a_histogram_seconds` | histogram |  | A histogram. |",
		"| `a_gauge_vec` | gauge | `zone`, `pool` | Gauges. |",
		"| `a_counter_vec_total` | counter | `action` | Say \"when\". |",
	} {
		if !strings.Contains(page, row+"\n") {
			t.Errorf("no row %s in\n%s", row, page)
		}
	}
}
