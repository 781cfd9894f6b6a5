package main

import (
	"strings"
	"testing"
	"time"
)

func TestApplyKubelets(t *testing.T) {
	defaults := config{podStatusEvery: defaultPodStatusEvery, imagesPerNode: defaultImagesPerNode}
	tests := []struct {
		kubelets string
		set      []string
		wantErr  bool
		// wantSimulated is true when the simulated fleet's pod status
		// writes and images stay as they were.
		wantSimulated bool
	}{
		{kubelets: kubeletsSimulated, set: []string{"pod-status-every", "images-per-node"}, wantSimulated: true},
		{kubelets: kubeletsHollow, set: []string{"nodes", "pods-per-node"}},
		{kubelets: kubeletsHollow, set: []string{"pod-status-every"}, wantErr: true},
		{kubelets: kubeletsHollow, set: []string{"images-per-node"}, wantErr: true},
		{kubelets: "real", wantErr: true},
	}
	for _, tt := range tests {
		c := defaults
		c.kubelets = tt.kubelets
		set := map[string]bool{}
		for _, name := range tt.set {
			set[name] = true
		}
		err := c.applyKubelets(set)
		if (err != nil) != tt.wantErr {
			t.Errorf("--kubelets=%s with %v: error %v, want one: %v", tt.kubelets, tt.set, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		simulated := c.podStatusEvery == defaultPodStatusEvery && c.imagesPerNode == defaultImagesPerNode
		zero := c.podStatusEvery == 0 && c.imagesPerNode == 0
		if tt.wantSimulated && !simulated || !tt.wantSimulated && !zero {
			t.Errorf("--kubelets=%s with %v: pod status every %v, %d images; want the defaults: %v", tt.kubelets, tt.set, c.podStatusEvery, c.imagesPerNode, tt.wantSimulated)
		}
	}
}

func TestKubeletUseString(t *testing.T) {
	k := &kubeletUse{CPUSecondsPerMinute: 2.345, PSSBytes: 1800 << 20, RSSBytes: 8000 << 20}
	if got, want := k.String(), "the kubelets used 2.35 CPU s/min in the steady state, 1800 MiB PSS (8000 MiB RSS) in all"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	r := &turn{Kubelets: k, SteadyStart: time.Unix(100, 0), SteadyEnd: time.Unix(160, 0)}
	if got := r.phases(); !strings.Contains(got, k.String()) {
		t.Errorf("phases %q lack the kubelets' use", got)
	}
}
