package fleet

import (
	"reflect"
	"strings"
	"testing"
)

func TestPoolsShapeTheNodes(t *testing.T) {
	got, err := Options{Nodes: 3}.pools()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !reflect.DeepEqual(got[0], Pool{Name: "fleet", Nodes: 3, Zones: 1, NamePrefix: "fleet-"}) {
		t.Errorf("Without Pools, pools = %+v, want one pool of the fleet's nodes, its defaults", got)
	}

	got, err = Options{Pools: []Pool{{Name: "gpu", Nodes: 2}, {Name: "general", Nodes: 1, Zones: 3, NamePrefix: "w-"}}}.pools()
	if err != nil {
		t.Fatal(err)
	}
	if got[0].NamePrefix != "gpu-" || got[0].Zones != 1 || got[1].NamePrefix != "w-" || got[1].Zones != 3 {
		t.Errorf("pools = %+v, want the gpu pool with prefix gpu- and 1 zone, the general one as given", got)
	}

	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"no nodes", Options{}, "Nodes must be positive"},
		{"pools and the fleet's count", Options{Nodes: 1, Pools: []Pool{{Name: "a", Nodes: 1}}}, "not the fleet's"},
		{"pools and the fleet's prefix", Options{NamePrefix: "x-", Pools: []Pool{{Name: "a", Nodes: 1}}}, "not the fleet's"},
		{"a pool without a name", Options{Pools: []Pool{{Nodes: 1}}}, "pool 0 has no Name"},
		{"two pools of one name", Options{Pools: []Pool{{Name: "a", Nodes: 1}, {Name: "a", Nodes: 1}}}, `two pools are named "a"`},
		{"an empty pool", Options{Pools: []Pool{{Name: "a"}}}, "pool a: Nodes must be positive"},
		{"two pools of one prefix", Options{Pools: []Pool{{Name: "a", Nodes: 1, NamePrefix: "n-"}, {Name: "b", Nodes: 1, NamePrefix: "n-"}}}, `"n-"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.opts.pools(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("pools() error = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
