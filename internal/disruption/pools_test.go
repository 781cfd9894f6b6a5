package disruption

import (
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPoolHold(t *testing.T) {
	half := intstr.FromString("50%")
	bad := intstr.FromString("half")
	quarter := intstr.FromString("25%")
	none := intstr.FromString("0%")
	tests := []struct {
		name   string
		pool   Pool
		counts Counts
		fading int
		want   string
	}{
		{"no breaker", Pool{}, Counts{NotReady: 9}, 9, ""},
		{"invalid before paused", Pool{Invalid: true, Paused: true}, Counts{}, 0, HeldInvalid},
		{"paused", Pool{Paused: true}, Counts{Ready: 1}, 0, HeldPaused},
		{"at the limit", Pool{MaxUnhealthy: &half}, Counts{Ready: 2, NotReady: 2}, 0, ""},
		{"over the limit", Pool{MaxUnhealthy: &half}, Counts{Ready: 1, NotReady: 3}, 0, HeldBreaker},
		{"fading nodes count", Pool{MaxUnhealthy: &half}, Counts{Ready: 4}, 3, HeldBreaker},
		{"a share rounds up: one of a pool of one may fail at 50%", Pool{MaxUnhealthy: &half}, Counts{NotReady: 1}, 0, ""},
		{"a share rounds up: one of two may fail at 25%", Pool{MaxUnhealthy: &quarter}, Counts{Ready: 1, NotReady: 1}, 0, ""},
		{"but not two of two", Pool{MaxUnhealthy: &quarter}, Counts{NotReady: 2}, 0, HeldBreaker},
		{"0% holds the first failure", Pool{MaxUnhealthy: &none}, Counts{Ready: 9, NotReady: 1}, 0, HeldBreaker},
		{"a limit that does not parse trips", Pool{MaxUnhealthy: &bad}, Counts{Ready: 4}, 0, HeldBreaker},
	}
	for _, tt := range tests {
		if got := poolHold(tt.pool, tt.counts, tt.fading); got != tt.want {
			t.Errorf("%s: poolHold = %q, want %q", tt.name, got, tt.want)
		}
	}
}
