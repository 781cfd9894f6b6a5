package fleet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodLabel marks the pods a fleet creates, with the node's name as value.
const PodLabel = "fleet.nodelifecycle.io/node"

// createPods binds PodsPerNode running, Ready pods to every node, as a
// scheduler and the kubelets would.
func (f *Fleet) createPods(ctx context.Context) error {
	if err := f.ensureServiceAccount(ctx); err != nil {
		return err
	}
	pods := f.client.CoreV1().Pods(f.opts.PodNamespace)
	for _, node := range f.names {
		for i := range f.opts.PodsPerNode {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name:   fmt.Sprintf("%s-pod-%d", node, i),
					Labels: map[string]string{PodLabel: node},
				},
				Spec: corev1.PodSpec{
					NodeName:    node,
					Containers:  []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
					Tolerations: f.opts.PodTolerations,
				},
			}
			created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("fleet: create pod %s: %w", pod.Name, err)
			}
			now := metav1.Now()
			created.Status.Phase = corev1.PodRunning
			created.Status.Conditions = []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			}
			if _, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("fleet: mark pod %s running: %w", pod.Name, err)
			}
		}
	}
	return nil
}

// ensureServiceAccount creates the pods' namespace and its default
// ServiceAccount where they are missing. A control plane without
// kube-controller-manager, as envtest's, creates neither, and the
// apiserver's ServiceAccount admission refuses a pod without its account.
func (f *Fleet) ensureServiceAccount(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.opts.PodNamespace}}
	if _, err := f.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("fleet: create namespace %s: %w", ns.Name, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: f.opts.PodNamespace}}
	if _, err := f.client.CoreV1().ServiceAccounts(sa.Namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("fleet: create service account %s/default: %w", sa.Namespace, err)
	}
	return nil
}
