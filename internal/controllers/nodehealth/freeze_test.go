package nodehealth

import "testing"

// TestFreezeKickNeverBlocks: the kick runs on the answer that ended an
// outage, which may be the answer to the freeze's own write, made by the
// resync that reads the kicks: a kick while one is unread must not wait.
func TestFreezeKickNeverBlocks(t *testing.T) {
	k := make(freezeKick, 1)
	k.kick()
	k.kick()
	select {
	case <-k:
	default:
		t.Fatal("the kick did not reach the resync")
	}
}
