package disruption

import corev1 "k8s.io/api/core/v1"

// LabelExcludeDisruption keeps a node out of zone counting, as upstream.
const LabelExcludeDisruption = "node.kubernetes.io/exclude-disruption"

// ZoneKey returns the zone a node belongs to, from the topology labels (the
// deprecated beta labels when the GA ones are missing). Nodes with neither
// share the zone "". It is written here rather than taken from
// k8s.io/component-helpers/node/topology.GetZoneKey, which reads the same
// labels (the beta ones first), because that key joins region and zone with
// a NUL byte: this one, "region/zone", is also the zone label of the metrics
// and the name in a policy's status, where a NUL cannot go.
func ZoneKey(node *corev1.Node) string {
	region := labelOr(node, corev1.LabelTopologyRegion, corev1.LabelFailureDomainBetaRegion)
	zone := labelOr(node, corev1.LabelTopologyZone, corev1.LabelFailureDomainBetaZone)
	if region == "" && zone == "" {
		return ""
	}
	return region + "/" + zone
}

func labelOr(node *corev1.Node, key, fallback string) string {
	if v, ok := node.Labels[key]; ok && v != "" {
		return v
	}
	return node.Labels[fallback]
}

// Excluded reports whether a node is left out of its zone's counts.
func Excluded(node *corev1.Node) bool {
	_, ok := node.Labels[LabelExcludeDisruption]
	return ok
}

// ZoneState is the health of a zone as a whole.
type ZoneState uint8

// The zone states. ZoneInitial is a zone with no counted node.
const (
	ZoneInitial ZoneState = iota
	ZoneNormal
	ZonePartialDisruption
	ZoneFullDisruption
)

// String names the state as upstream's logs and metrics do.
func (s ZoneState) String() string {
	switch s {
	case ZoneNormal:
		return "Normal"
	case ZonePartialDisruption:
		return "PartialDisruption"
	case ZoneFullDisruption:
		return "FullDisruption"
	default:
		return "Initial"
	}
}

// ZoneID names a zone of a pool.
type ZoneID struct {
	// Pool is the pool's name, "" for the nodes no pool claims.
	Pool string
	// Zone is the zone's key, as ZoneKey returns it.
	Zone string
}

// zoneOf returns the zone of its pool a node is counted in.
func zoneOf(st NodeStatus) ZoneID { return ZoneID{Pool: st.Pool, Zone: st.Zone} }

// Counts are the counted nodes of a zone: Ready=True ones and the others.
type Counts struct {
	Ready, NotReady int
}

// Size is the number of counted nodes.
func (c Counts) Size() int { return c.Ready + c.NotReady }

// tally returns the counts with a node of the given readiness added (n = 1)
// or taken out (n = -1).
func (c Counts) tally(ready bool, n int) Counts {
	if ready {
		c.Ready += n
	} else {
		c.NotReady += n
	}
	return c
}

// ZoneSnapshot is a zone's counts and state.
type ZoneSnapshot struct {
	Counts
	State ZoneState
}

// ZoneStateOf computes a zone's state: FullDisruption when no node is ready,
// PartialDisruption when more than two nodes are not ready and they make up
// at least threshold of the zone, Normal otherwise.
func ZoneStateOf(c Counts, threshold float64) ZoneState {
	switch {
	case c.Size() == 0:
		return ZoneInitial
	case c.Ready == 0:
		return ZoneFullDisruption
	case c.NotReady > 2 && float64(c.NotReady)/float64(c.Size()) >= threshold:
		return ZonePartialDisruption
	default:
		return ZoneNormal
	}
}

// Rates are the tainting rates, in nodes per second, and the zone size that
// separates small zones from large ones.
type Rates struct {
	Normal                    float64
	Secondary                 float64
	LargeClusterSizeThreshold int
}

// ZoneRate is how many nodes per second may be tainted NoExecute in a zone
// of the given state and size. A fully disrupted zone keeps the normal rate,
// as upstream: the guard halts everything only when every zone is down.
func ZoneRate(s ZoneState, size int, r Rates) float64 {
	if s == ZonePartialDisruption {
		if size > r.LargeClusterSizeThreshold {
			return r.Secondary
		}
		return 0
	}
	return r.Normal
}
