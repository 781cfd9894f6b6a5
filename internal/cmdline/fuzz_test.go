package cmdline

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// FuzzParseAndValidate feeds arbitrary command lines to the flags: parsing
// and validation never panic, and whatever validates keeps the rules the
// controller relies on.
func FuzzParseAndValidate(f *testing.F) {
	f.Add("--node-monitor-grace-period=40s --pod-eviction-timeout=1m")
	f.Add("--node-monitor-grace-period=0s")
	f.Add("--unhealthy-zone-threshold=NaN --node-eviction-rate=-1")
	f.Add("--partition-freeze-threshold=1 --partition-freeze-cooldown=-1s")
	f.Add("--node-startup-grace-period=9223372036854775807ns --node-monitor-grace-period=1h")
	f.Add("--kube-api-qps=0 --kube-api-burst=-1 --leader-elect=false --leader-elect-resource-name=")
	f.Add("--pprof-bind-address=127.0.0.1:0 --metrics-bind-address=0")
	f.Fuzz(func(t *testing.T, line string) {
		o := Default()
		fs := pflag.NewFlagSet("fuzz", pflag.ContinueOnError)
		fs.SetOutput(discard{})
		o.AddFlags(fs)
		if err := fs.Parse(strings.Fields(line)); err != nil {
			return
		}
		if err := o.Validate(); err != nil {
			if err.Error() == "" {
				t.Fatal("an empty validation error")
			}
			return
		}
		switch {
		case o.NodeMonitorGracePeriod <= 0 || o.NodeStartupGracePeriod < o.NodeMonitorGracePeriod:
			t.Fatalf("valid with grace %v, startup %v", o.NodeMonitorGracePeriod, o.NodeStartupGracePeriod)
		case o.PodEvictionTimeout <= o.NodeMonitorGracePeriod:
			t.Fatalf("valid with eviction timeout %v not above grace %v", o.PodEvictionTimeout, o.NodeMonitorGracePeriod)
		case !(o.NodeEvictionRate >= 0) || !(o.SecondaryNodeEvictionRate >= 0):
			t.Fatalf("valid with rates %v, %v", o.NodeEvictionRate, o.SecondaryNodeEvictionRate)
		case !(o.UnhealthyZoneThreshold > 0 && o.UnhealthyZoneThreshold <= 1):
			t.Fatalf("valid with threshold %v", o.UnhealthyZoneThreshold)
		case !(o.KubeAPIQPS > 0) || o.KubeAPIBurst <= 0:
			t.Fatalf("valid with qps %v, burst %v", o.KubeAPIQPS, o.KubeAPIBurst)
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
