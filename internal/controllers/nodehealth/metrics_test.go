package nodehealth

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/disruption"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/health"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety/act"
)

// zoneVecs are the gauges that carry a series per zone of a pool, with how
// many series a published zone has in each.
var zoneVecs = []struct {
	name   string
	vec    *prometheus.GaugeVec
	series int
}{
	{"zone_size", zoneSize, 1},
	{"zone_health", zoneHealth, 1},
	{"unhealthy_nodes_in_zone", unhealthyNodes, 1},
	{"zone_state", zoneStates, 3},
}

// zoneSeries returns the series of the zone in vec. The vectors are shared
// by every test of the package, so only the zone's own series are returned.
// (client_golang's testutil would need a module this one does not require.)
func zoneSeries(t *testing.T, vec prometheus.Collector, id disruption.ZoneID) []*dto.Metric {
	t.Helper()
	ch := make(chan prometheus.Metric)
	go func() { vec.Collect(ch); close(ch) }()
	var out []*dto.Metric
	for m := range ch {
		d := &dto.Metric{}
		if err := m.Write(d); err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{}
		for _, p := range d.GetLabel() {
			labels[p.GetName()] = p.GetValue()
		}
		if labels["zone"] == id.Zone && labels["pool"] == id.Pool {
			out = append(out, d)
		}
	}
	return out
}

// gaugeValue returns the value of the zone's one series in vec.
func gaugeValue(t *testing.T, vec *prometheus.GaugeVec, id disruption.ZoneID) float64 {
	t.Helper()
	series := zoneSeries(t, vec, id)
	if len(series) != 1 {
		t.Fatalf("%d series for zone %+v, want 1", len(series), id)
	}
	return series[0].GetGauge().GetValue()
}

// wantZoneSeries fails the test unless every zone gauge has the zone's
// series (published) or none of them (!published).
func wantZoneSeries(t *testing.T, id disruption.ZoneID, published bool) {
	t.Helper()
	for _, v := range zoneVecs {
		want := 0
		if published {
			want = v.series
		}
		if got := len(zoneSeries(t, v.vec, id)); got != want {
			t.Errorf("%s: %d series for zone %q of pool %q, want %d", v.name, got, id.Zone, id.Pool, want)
		}
	}
}

func zonedNode(name, zone string) *corev1.Node {
	n := healthyNode(name)
	n.Labels = map[string]string{corev1.LabelTopologyRegion: "metrics", corev1.LabelTopologyZone: zone}
	return n
}

// TestZoneSeriesGoWithTheLastNode: a zone whose last node is deleted keeps no
// series, or dashboards would show it forever.
func TestZoneSeriesGoWithTheLastNode(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, []client.Object{zonedNode("n1", "deleted")}, nil, nil)
	id := disruption.ZoneID{Zone: "metrics/deleted"}
	f.reconcile(t)
	wantZoneSeries(t, id, true)
	if got := gaugeValue(t, zoneSize, id); got != 1 {
		t.Fatalf("zone size = %v, want 1", got)
	}

	if err := f.cached.Delete(ctx, zonedNode("n1", "deleted")); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	wantZoneSeries(t, id, false)
}

// TestZoneSeriesGoWhenTheLastNodeMoves: a node relabelled into another zone
// takes its old zone's series away when it was the last one there.
func TestZoneSeriesGoWhenTheLastNodeMoves(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, []client.Object{zonedNode("n1", "old")}, nil, nil)
	from, to := disruption.ZoneID{Zone: "metrics/old"}, disruption.ZoneID{Zone: "metrics/new"}
	f.reconcile(t)
	wantZoneSeries(t, from, true)

	n := f.node(t)
	n.Labels[corev1.LabelTopologyZone] = "new"
	if err := f.cached.Update(ctx, n); err != nil {
		t.Fatal(err)
	}
	f.reconcile(t)
	wantZoneSeries(t, from, false)
	wantZoneSeries(t, to, true)
}

// TestZoneSeriesGoWithTheirPool: when a pool's policy is deleted its nodes
// fall back to the nodes no pool claims, and the pool's zones lose their
// series.
func TestZoneSeriesGoWithTheirPool(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil, nil, nil)
	g := f.guard
	pooled := disruption.ZoneID{Pool: "deleted-pool", Zone: "metrics/pooled"}
	st := disruption.NodeStatus{Pool: pooled.Pool, Zone: pooled.Zone, Ready: true}
	f.r.guardChanged(ctx, g.SetPool(pooled.Pool, &disruption.Pool{UnhealthyZoneThreshold: 0.55}, t0))
	f.r.guardChanged(ctx, g.Update("x", st, t0))
	wantZoneSeries(t, pooled, true)

	f.r.guardChanged(ctx, g.SetPool(pooled.Pool, nil, t0))
	st.Pool = ""
	f.r.guardChanged(ctx, g.Update("x", st, t0))
	wantZoneSeries(t, pooled, false)
	wantZoneSeries(t, disruption.ZoneID{Zone: pooled.Zone}, true)
}

// TestMarkStagesSplitTheDelay: the stages of a mark that a deadline wake
// started add up to its delay; one that another look started has the reads
// and the patch alone.
func TestMarkStagesSplitTheDelay(t *testing.T) {
	deadline := t0
	m := &act.Mark{Verdict: health.Verdict{Deadline: deadline}, Delay: 100 * time.Millisecond,
		Read: 10 * time.Millisecond, Patch: 5 * time.Millisecond}
	stages := func(values []any) map[string]time.Duration {
		out := map[string]time.Duration{}
		for i := 0; i+1 < len(values); i += 2 {
			out[values[i].(string)] = values[i+1].(time.Duration)
		}
		return out
	}
	got := stages(markStages(m, lookTimes{handed: deadline.Add(20 * time.Millisecond), start: deadline.Add(50 * time.Millisecond)}))
	want := map[string]time.Duration{"wake": 20 * time.Millisecond, "queue": 30 * time.Millisecond,
		"look": 35 * time.Millisecond, "read": 10 * time.Millisecond, "patch": 5 * time.Millisecond}
	if !maps.Equal(got, want) {
		t.Errorf("stages of a mark a deadline wake started = %v, want %v", got, want)
	}
	got = stages(markStages(m, lookTimes{start: deadline.Add(50 * time.Millisecond)}))
	want = map[string]time.Duration{"read": 10 * time.Millisecond, "patch": 5 * time.Millisecond}
	if !maps.Equal(got, want) {
		t.Errorf("stages of a mark another look started = %v, want %v", got, want)
	}
}
