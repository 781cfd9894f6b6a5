package reporter

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// TestReporterUnderNodeAuthorization runs reporters against an apiserver
// that guards nodes as a production cluster does: the Node authorizer ahead
// of RBAC, and the NodeRestriction admission plugin, which let a node write
// its own Node and its own Lease and nothing of another node's.
func TestReporterUnderNodeAuthorization(t *testing.T) {
	env, admin := nodeAuthzStartEnv(t)

	// The node's own credential, a kubelet's: the reporter needs no more.
	t.Run("node credential", func(t *testing.T) {
		const name = "cred-node"
		g := NewWithT(t)
		user, err := env.ControlPlane.AddUser(envtest.User{Name: "system:node:" + name, Groups: []string{"system:nodes"}}, nil)
		g.Expect(err).NotTo(HaveOccurred())
		nodeCfg := user.Config()

		nodeAuthzRun(t, nodeCfg, name)
		nodeAuthzExpectHeartbeats(t, admin, name)

		// A write to another node's Lease is refused, its creation as its
		// update.
		asNode, err := kubernetes.NewForConfig(nodeCfg)
		g.Expect(err).NotTo(HaveOccurred())
		nodeAuthzExpectOthersLeaseRefused(t, admin, asNode, name)
	})

	// A node agent's credential of its own, allowed by RBAC to impersonate
	// the node and, for the test's sake, to write any Lease itself.
	t.Run("agent impersonating the node", func(t *testing.T) {
		const name, agent = "imp-node", "node-agent"
		g := NewWithT(t)
		ctx := t.Context()
		user, err := env.ControlPlane.AddUser(envtest.User{Name: agent}, nil)
		g.Expect(err).NotTo(HaveOccurred())
		agentCfg := user.Config()
		nodeAuthzGrant(t, admin, agent, []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"users"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"system:node:" + name}},
			{APIGroups: []string{""}, Resources: []string{"groups"}, Verbs: []string{"impersonate"}, ResourceNames: []string{"system:nodes"}},
			{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		})

		asNodeCfg, err := ImpersonateNode(agentCfg, name)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(agentCfg.Impersonate.UserName).To(BeEmpty(), "the agent's config was changed")
		nodeAuthzRun(t, asNodeCfg, name)
		nodeAuthzExpectHeartbeats(t, admin, name)

		// The apiserver sees the impersonating client as the node.
		asNode, err := kubernetes.NewForConfig(asNodeCfg)
		g.Expect(err).NotTo(HaveOccurred())
		review, err := asNode.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(review.Status.UserInfo.Username).To(Equal("system:node:" + name))
		g.Expect(review.Status.UserInfo.Groups).To(ContainElement("system:nodes"))

		// And holds it to what the node may do: the agent, as itself, may
		// write any Lease, but as the node, not another node's.
		asAgent, err := kubernetes.NewForConfig(agentCfg)
		g.Expect(err).NotTo(HaveOccurred())
		nodeAuthzExpectOthersLeaseRefused(t, asAgent, asNode, name)
		// Nor could the agent, as itself, have written the Node.
		_, err = asAgent.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the agent reads the Node as itself: %v", err)
	})
}

// nodeAuthzStartEnv starts a control plane of its own with the Node
// authorizer and the NodeRestriction admission plugin, stopped when the test
// ends, and returns it with an admin's client.
func nodeAuthzStartEnv(t *testing.T) (*envtest.Environment, kubernetes.Interface) {
	t.Helper()
	env, _, admin := startControlPlane(t, func(env *envtest.Environment) {
		args := env.ControlPlane.GetAPIServer().Configure()
		args.Set("authorization-mode", "Node", "RBAC")
		args.Append("enable-admission-plugins", "NodeRestriction")
	})
	return env, admin
}

// nodeAuthzRun runs a reporter of the node name, its heartbeat client built
// from cfg, until the test ends.
func nodeAuthzRun(t *testing.T, cfg *rest.Config, name string) {
	t.Helper()
	heartbeats, closeIdle, err := NewHeartbeatClient(cfg, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(heartbeats, clock.RealClock{}, Config{
		NodeName:                  name,
		LeaseDurationSeconds:      1,
		NodeStatusUpdateFrequency: 200 * time.Millisecond,
		NodeStatusReportFrequency: time.Second,
		OnRepeatedFailure:         closeIdle,
	})
	if err != nil {
		t.Fatal(err)
	}
	restartRun(t, r)
}

// nodeAuthzExpectHeartbeats fails the test unless the reporter of the node
// name registers its Node, creates its Lease owned by the Node, and then
// renews the Lease and reports the status again.
func nodeAuthzExpectHeartbeats(t *testing.T, admin kubernetes.Interface, name string) {
	t.Helper()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(15 * time.Second)
	g.SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	ctx := t.Context()
	ready := readyHeartbeatOf(ctx, admin, name)
	lease := func(g Gomega) *coordinationv1.Lease {
		lease, err := admin.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(lease.Spec.RenewTime).NotTo(BeNil())
		return lease
	}
	renewed := func(g Gomega) time.Time { return lease(g).Spec.RenewTime.Time }

	var heartbeat, renewal time.Time
	g.Eventually(func(g Gomega) { heartbeat = ready(g) }).Should(Succeed(), "node %s never Ready", name)
	g.Eventually(func(g Gomega) { renewal = renewed(g) }).Should(Succeed(), "lease %s never created", name)
	node, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lease(g).OwnerReferences).To(ConsistOf(HaveField("UID", node.UID)), "lease %s not owned by its node", name)
	g.Eventually(renewed).Should(BeTemporally(">", renewal), "lease %s never renewed", name)
	// The Node's heartbeats have whole seconds.
	g.Eventually(ready).Should(BeTemporally(">", heartbeat), "status of node %s never reported again", name)
}

// nodeAuthzExpectOthersLeaseRefused has writer create the Lease of another
// node than name, and fails the test unless asNode, a client acting as the
// node name, is refused both its creation and its update.
func nodeAuthzExpectOthersLeaseRefused(t *testing.T, writer, asNode kubernetes.Interface, name string) {
	t.Helper()
	g := NewWithT(t)
	ctx := t.Context()
	other := name + "-neighbor"
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: other, Namespace: corev1.NamespaceNodeLease},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(other), LeaseDurationSeconds: ptr.To[int32](40)},
	}
	// Refused for being a node's, whether by the Node authorizer or by
	// NodeRestriction (which of them depends on the apiserver's version),
	// not for want of an RBAC rule.
	byNodeRules := MatchError(ContainSubstring("same name as the requesting node"))
	nodeLeases := asNode.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	_, err := nodeLeases.Create(ctx, lease, metav1.CreateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "node %s creating the lease of %s: %v", name, other, err)
	g.Expect(err).To(byNodeRules)
	t.Logf("Node %s creating the lease of %s: %v", name, other, err)

	existing, err := writer.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred(), "create the lease of %s", other)
	existing.Spec.HolderIdentity = ptr.To(name)
	_, err = nodeLeases.Update(ctx, existing, metav1.UpdateOptions{})
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "node %s updating the lease of %s: %v", name, other, err)
	g.Expect(err).To(byNodeRules)
	t.Logf("Node %s updating the lease of %s: %v", name, other, err)
}

// nodeAuthzGrant grants user the rules, cluster-wide, until the test ends.
func nodeAuthzGrant(t *testing.T, admin kubernetes.Interface, user string, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: rules}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create cluster role %s: %v", user, err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create cluster role binding %s: %v", user, err)
	}
}
