package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The deprecated OS and architecture labels, which the kubelet still sets
// beside kubernetes.io/os and kubernetes.io/arch.
const (
	betaOSLabel   = "beta.kubernetes.io/os"
	betaArchLabel = "beta.kubernetes.io/arch"
)

// addBetaLabels gives every node the beta OS and architecture labels, as a
// kubelet registers them. The fleet's nodes lack them, and upstream's node
// lifecycle controller adds them when it starts, with a read and a patch per
// node at its 20 requests per second: minutes of start-up work at scale that
// would spill into its steady state and that no real cluster asks of it.
func addBetaLabels(ctx context.Context, cfg *rest.Config, names []string) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 200, 400
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("build the labeling client: %w", err)
	}
	work := make(chan string)
	errs := make(chan error, len(names))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for name := range work {
				errs <- labelNode(ctx, cs, name)
			}
		})
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func labelNode(ctx context.Context, cs kubernetes.Interface, name string) error {
	node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get node %q: %w", name, err)
	}
	labels := map[string]string{}
	if os, ok := node.Labels[corev1.LabelOSStable]; ok && node.Labels[betaOSLabel] != os {
		labels[betaOSLabel] = os
	}
	if arch, ok := node.Labels[corev1.LabelArchStable]; ok && node.Labels[betaArchLabel] != arch {
		labels[betaArchLabel] = arch
	}
	if len(labels) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return fmt.Errorf("encode the labels of node %q: %w", name, err)
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("label node %q: %w", name, err)
	}
	return nil
}
