package buildinfo

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestReadTakesTheStampAndWhatGoRecorded(t *testing.T) {
	info := Read("v1.2.3")
	if info.Version != "v1.2.3" || info.GoVersion != runtime.Version() {
		t.Fatalf("Read = %+v, want version v1.2.3 and Go %s", info, runtime.Version())
	}
	// A test binary records no dependencies, so ClientGo is empty here;
	// the e2e suite reads the binary's from its metrics.
	if unstamped := Read(""); unstamped.Version == "" {
		t.Error("an unstamped build has no version")
	}
}

func TestStringReadsAsVersionPrintsIt(t *testing.T) {
	for _, tc := range []struct {
		info Info
		want string
	}{
		{Info{Version: "v0.1.0"}, "v0.1.0"},
		{Info{Version: "v0.1.0", Revision: "abc123"}, "v0.1.0 abc123"},
		{Info{Version: "(devel)", Revision: "abc123", Modified: true}, "(devel) abc123 (modified)"},
	} {
		if got := tc.info.String(); got != tc.want {
			t.Errorf("%+v reads %q, want %q", tc.info, got, tc.want)
		}
	}
}

func TestPublishKeepsOneSeries(t *testing.T) {
	Publish(Info{Version: "v0.1.0", Revision: "a", GoVersion: "go1.26", ClientGo: "v0.37.2"})
	Publish(Info{Version: "v0.2.0", Revision: "b", GoVersion: "go1.26", ClientGo: "v0.37.2"})
	if n := testutil.CollectAndCount(buildInfo); n != 1 {
		t.Fatalf("%d series, want the last build's alone", n)
	}
	if v := testutil.ToFloat64(buildInfo.WithLabelValues("v0.2.0", "b", "go1.26", "v0.37.2")); v != 1 {
		t.Fatalf("build info = %v, want 1", v)
	}
}
