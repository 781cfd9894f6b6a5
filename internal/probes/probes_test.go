package probes

import (
	"errors"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

func TestRecordedChecksSetTheirGaugeEachTimeTheyAreAsked(t *testing.T) {
	failing := true
	checks := Recorded("readyz", map[string]healthz.Checker{
		"flaky": func(*http.Request) error {
			if failing {
				return errors.New("not yet")
			}
			return nil
		},
	})
	req, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
	gauge := healthCheck.WithLabelValues("flaky", "readyz")
	if err := checks["flaky"](req); err == nil {
		t.Fatal("the check's error was lost")
	}
	if v := testutil.ToFloat64(gauge); v != 0 {
		t.Fatalf("gauge %v after a failure, want 0", v)
	}
	failing = false
	if err := checks["flaky"](req); err != nil {
		t.Fatalf("the check failed: %v", err)
	}
	if v := testutil.ToFloat64(gauge); v != 1 {
		t.Fatalf("gauge %v after a pass, want 1", v)
	}
}
