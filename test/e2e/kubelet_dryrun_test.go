package e2e

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// startKubeletSidePlane starts a control plane of its own with
// kube-controller-manager's node lifecycle and taint eviction controllers
// deciding at the timings of hollow kubelets: startSidePlane's are shorter
// than their Lease renewals.
func startKubeletSidePlane() *sideBySide {
	GinkgoHelper()
	s := startSidePlane()
	// No node has registered yet: the one startSidePlane started has
	// judged nothing.
	Expect(s.kcm.Stop(10 * time.Second)).To(Succeed())
	s.startKubeControllerManagerWith(upstreamLoops, kubeletGrace, 2*kubeletGrace)
	return s
}

// startKubeletDryRun starts this controller in a dry run beside
// kube-controller-manager, in this process, at the timings of hollow
// kubelets.
func (s *sideBySide) startKubeletDryRun() {
	GinkgoHelper()
	dryCfg := rest.CopyConfig(s.cfg)
	dryCfg.UserAgent = sideUserAgent
	runManagerOn(dryCfg, func(o *ctrl.Options) {
		o.LeaderElection = true
		o.LeaderElectionID = "nlc"
		o.LeaderElectionNamespace = "default"
		o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = ptr.To(leaseDuration), ptr.To(renewDeadline), ptr.To(retryPeriod)
	}, kubeletTimings, func(o *options.Options) {
		o.DryRun = true
		o.DryRunRecord = sideRecord
		o.NodeMonitorPeriod = sidePeriod
		o.NodeEvictionRate = 10
	})
}

var _ = Describe("A dry run beside kube-controller-manager over real kubelets", Label("kubelet"), func() {
	It("agrees with kube-controller-manager on a killed kubelet: both mark it and taint it unreachable, upstream evicts its pod, and the dry run holds nothing back", func() {
		s := startKubeletSidePlane()
		// Started before the kubelets register: each posts Ready=False and
		// then, often within the same second, Ready=True, with the same
		// heartbeat time (whole seconds), and the dry run must take both.
		s.startKubeletDryRun()
		Eventually(s.dryRunLeader).ShouldNot(BeEmpty())
		zone := "zone-" + newNodeName()
		kubelets := startHollowKubeletsOn(s.env, s.k8s, zone, newNodeName(), newNodeName())
		live, dead := kubelets[0], kubelets[1]
		short := createKubeletPodOn(s.k8s, dead.Name+"-short", dead.Name, tolerateUnreachable(ptr.To[int64](2)))
		stays := createKubeletPodOn(s.k8s, live.Name+"-stays", live.Name)
		for _, pod := range []*corev1.Pod{short, stays} {
			Eventually(func(g Gomega) bool {
				got := &corev1.Pod{}
				g.Expect(s.k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), got)).To(Succeed())
				return got.Status.Phase == corev1.PodRunning
			}).WithTimeout(time.Minute).Should(BeTrue(), "pod %s", pod.Name)
		}

		By("a kubelet killed once the dry run has heard it: both mark it and taint it unreachable, upstream evicts its pod, and the dry run holds nothing")
		// Killed just after a Lease renewal that both have heard, so that
		// both judge from the same last heartbeat.
		renewTime := func(g Gomega) *metav1.MicroTime {
			lease := &coordinationv1.Lease{}
			err := s.k8s.Get(context.Background(), client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: dead.Name}, lease)
			if apierrors.IsNotFound(err) {
				return nil
			}
			g.Expect(err).NotTo(HaveOccurred())
			return lease.Spec.RenewTime
		}
		renewed := renewTime(Default)
		Eventually(renewTime).WithTimeout(2 * harness.KubeletLeaseRenewInterval).WithPolling(50 * time.Millisecond).
			Should(And(Not(BeNil()), Not(Equal(renewed))))
		dead.Kill()
		Eventually(func(g Gomega) {
			e := episodeOf(g, s.report(g), dead.Name)
			expectMarkedByBoth(g, e)
			g.Expect(e.Ours.NoExecute).To(Equal(corev1.TaintNodeUnreachable))
			g.Expect(e.Upstream.NoExecute).To(Equal(corev1.TaintNodeUnreachable))
			g.Expect(e.Upstream.Evicted).To(Equal(1))
			g.Expect(e.NoExecuteHeld).To(BeEmpty())
			g.Expect(e.EvictionsHeld).To(BeEmpty())
			// Both judge the same heartbeats against the same grace.
			g.Expect(*e.Ours.Marked).To(BeTemporally("~", *e.Upstream.Marked, sidePeriod+time.Second))
		}).WithTimeout(kubeletGrace + harness.KubeletLeaseRenewInterval + 20*time.Second).WithPolling(time.Second).Should(Succeed())

		By("the live kubelet in no episode, and nothing on any Node or Pod written by the dry run")
		Expect(episodesOf(s.report(Default), live.Name)).To(BeEmpty())
		AddReportEntry("compare", s.compare(Default, "text"))
		s.expectNothingWritten(sideUserAgent)
	})
})
