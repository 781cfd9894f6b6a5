package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// fairness is who the bench's clients are to the apiserver's API priority
// and fairness (--fairness).
type fairness string

const (
	// fairnessExempt runs every contender and the fleet in system:masters,
	// which priority and fairness exempts from every limit.
	fairnessExempt fairness = "exempt"
	// fairnessCluster runs each as it runs in a cluster, under the
	// apiserver's suggested flow schemas alone: upstream as the User
	// system:kube-controller-manager (workload-high), ours and the floor as
	// the installer's ServiceAccount with the installer's RBAC
	// (service-accounts: workload-low), the fleet as nodes (system-node-high
	// for Nodes and Leases, system-nodes for the pods).
	fairnessCluster fairness = "cluster"
	// fairnessInstall is fairnessCluster with the installer's priority level
	// and flow schemas (config/flowcontrol) applied too.
	fairnessInstall fairness = "install"
)

// fairnessModes are the values --fairness takes.
var fairnessModes = []fairness{fairnessExempt, fairnessCluster, fairnessInstall}

// The identities of the clients when they are not exempt.
const (
	upstreamUser  = "system:kube-controller-manager"
	installerSA   = "node-lifecycle-controller-manager"
	installerSANS = "node-lifecycle-system"
	fleetUser     = "system:node:bench-fleet"
	clusterAdmin  = "cluster-admin"
)

// identity returns the user the contender name runs as under f.
func identity(f fairness, name string) envtest.User {
	switch {
	case f == fairnessExempt || f == "":
		return envtest.User{Name: "bench-" + name, Groups: []string{"system:masters"}}
	case name == "upstream":
		return envtest.User{Name: upstreamUser}
	default:
		// The name and groups the apiserver gives the ServiceAccount's
		// tokens; RBAC and flow schemas match a ServiceAccount by them.
		return envtest.User{
			Name:   "system:serviceaccount:" + installerSANS + ":" + installerSA,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + installerSANS},
		}
	}
}

// installerKinds are the kinds of the installer's objects the bench applies
// under f: what the controller's identity and its rights need, and with
// fairnessInstall the flow control objects. Never the Deployment: the bench
// runs the contender itself.
func installerKinds(f fairness) []string {
	kinds := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"}
	if f == fairnessInstall {
		kinds = append(kinds, "PriorityLevelConfiguration", "FlowSchema")
	}
	return kinds
}

// renderInstaller renders the kustomize installer dir with the kustomize
// binary and returns the objects the bench applies under f.
func renderInstaller(ctx context.Context, kustomize, dir string, f fairness) ([]*unstructured.Unstructured, error) {
	cmd := exec.CommandContext(ctx, kustomize, "build", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s build %s (run `make kustomize`): %w: %s", kustomize, dir, err, stderr.String())
	}
	objs, err := harness.DecodeObjects(out)
	if err != nil {
		return nil, fmt.Errorf("decode %s build %s: %w", kustomize, dir, err)
	}
	kinds := installerKinds(f)
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return !slices.Contains(kinds, o.GetKind()) })
	if f == fairnessInstall && !slices.ContainsFunc(objs, func(o *unstructured.Unstructured) bool { return o.GetKind() == "FlowSchema" }) {
		return nil, fmt.Errorf("%s renders no FlowSchema for --fairness=%s", dir, f)
	}
	// Namespaces first: the rest may live in them.
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return rankNamespaceFirst(a) - rankNamespaceFirst(b)
	})
	return objs, nil
}

func rankNamespaceFirst(o *unstructured.Unstructured) int {
	if o.GetKind() == "Namespace" {
		return 0
	}
	return 1
}

// prepareIdentities gives the contender's and the fleet's identities under
// f their rights on the control plane of env, with the admin's cfg, and
// returns the fleet's client configuration. Upstream and the fleet are
// bound to cluster-admin, which does not exempt them from priority and
// fairness as system:masters does; ours and the floor get the installer's
// objects, installer.
func prepareIdentities(ctx context.Context, env *envtest.Environment, cfg *rest.Config, f fairness, ct contender, installer []*unstructured.Unstructured) (*rest.Config, error) {
	if f == fairnessExempt || f == "" {
		return cfg, nil
	}
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client of the control plane: %w", err)
	}
	// The apiserver makes kube-node-lease, where the installer keeps a
	// Role, shortly after it starts.
	lease := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}
	if err := c.Create(ctx, lease); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", lease.Name, err)
	}
	admins := []string{fleetUser}
	if ct.Name == "upstream" {
		admins = append(admins, upstreamUser)
	} else {
		for _, obj := range installer {
			if err := c.Create(ctx, obj.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				return nil, fmt.Errorf("apply the installer's %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
	}
	for _, user := range admins {
		binding := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "bench-" + sanitize(user)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterAdmin},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}
		if err := c.Create(ctx, binding); err != nil {
			return nil, fmt.Errorf("bind %s to %s: %w", clusterAdmin, user, err)
		}
	}
	fleet, err := env.AddUser(envtest.User{Name: fleetUser, Groups: []string{"system:nodes"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("add the fleet's user: %w", err)
	}
	return fleet.Config(), nil
}

// sanitize turns a user name into a name an object may carry.
func sanitize(user string) string {
	b := []byte(user)
	for i, ch := range b {
		if ch == ':' {
			b[i] = '-'
		}
	}
	return string(b)
}

// describeFairness says, for results.md, who the clients were under f.
func describeFairness(f fairness) string {
	switch f {
	case fairnessCluster, fairnessInstall:
		s := "Clients (`--fairness=" + string(f) + "`): upstream as the User " + upstreamUser + " (bound to " + clusterAdmin +
			"), ours and the floor as the installer's ServiceAccount " + installerSANS + "/" + installerSA + " with the installer's RBAC, the fleet as the User " +
			fleetUser + " in system:nodes (bound to " + clusterAdmin + "): none exempt from priority and fairness; the bench's own watch is, in system:masters."
		if f == fairnessInstall {
			return s + " The installer's priority level and flow schemas were applied (config/flowcontrol)."
		}
		return s + " The apiserver's own flow schemas alone."
	default:
		return "Clients (`--fairness=exempt`): every contender, the fleet and the bench's own watch in system:masters, which priority and fairness exempts."
	}
}
