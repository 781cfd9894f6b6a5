package deploy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/shadow"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// dryRunInstaller installs the controller as a dry run beside
// kube-controller-manager: config/default, with --dry-run and the RBAC of
// the record.
const dryRunInstaller = "config/dry-run"

// controllerManager is the field manager of the binary's requests, the
// name its user agent starts with.
const controllerManager = "node-lifecycle-controller"

// configMapGrant is a verb some rule grants on ConfigMaps, where, and on
// which names ("*" for every name).
type configMapGrant struct {
	role  string
	verb  string
	names string
}

// configMapGrants returns every verb that a Role or ClusterRole of objs
// grants on core/v1 ConfigMaps, wildcards included, one entry per verb and
// rule.
func configMapGrants(t *testing.T, objs []*unstructured.Unstructured) []configMapGrant {
	t.Helper()
	var grants []configMapGrant
	add := func(role string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			if !slices.Contains(r.APIGroups, "") && !slices.Contains(r.APIGroups, rbacv1.APIGroupAll) {
				continue
			}
			if !slices.Contains(r.Resources, "configmaps") && !slices.Contains(r.Resources, rbacv1.ResourceAll) {
				continue
			}
			names := "*"
			if len(r.ResourceNames) > 0 {
				names = strings.Join(slices.Sorted(slices.Values(r.ResourceNames)), ",")
			}
			for _, verb := range r.Verbs {
				grants = append(grants, configMapGrant{role: role, verb: verb, names: names})
			}
		}
	}
	for _, u := range find(objs, "ClusterRole") {
		add(describe(u), convert[rbacv1.ClusterRole](t, u).Rules)
	}
	for _, u := range find(objs, "Role") {
		add(describe(u), convert[rbacv1.Role](t, u).Rules)
	}
	return grants
}

// An install that runs no dry run has no record to keep, and so no right on
// any ConfigMap: kube-system's hold kubeadm's configuration, the cluster's
// CA bundle and other controllers' state. The one it reads, the client CA
// of its secure port, it reads through the built-in
// extension-apiserver-authentication-reader Role, which no installer renders.
func TestInstallersGrantNothingOnConfigMaps(t *testing.T) {
	for _, tc := range []struct {
		name   string
		render func(*testing.T) []*unstructured.Unstructured
	}{
		{"config/default", func(t *testing.T) []*unstructured.Unstructured { return render(t, "config/default") }},
		{staticPodRBAC, func(t *testing.T) []*unstructured.Unstructured { return render(t, staticPodRBAC) }},
		{"the chart's defaults", func(t *testing.T) []*unstructured.Unstructured { return renderChart(t, "node-lifecycle-system") }},
		{"the chart with namespace.create and prometheus.enable", func(t *testing.T) []*unstructured.Unstructured {
			return renderChart(t, "node-lifecycle-system", "namespace.create=true", "prometheus.enable=true")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.render(t)
			if len(find(objs, "ClusterRole"))+len(find(objs, "Role")) == 0 {
				t.Fatal("Renders no role to look at")
			}
			for _, g := range configMapGrants(t, objs) {
				t.Errorf("%s grants %s on ConfigMaps %s", g.role, g.verb, g.names)
			}
		})
	}
}

func TestDryRunInstallerGrantsItsRecordByName(t *testing.T) {
	objs := render(t, dryRunInstaller)
	recordNS, record := defaultRecord(t)

	// Every right on ConfigMaps, in one Role in the record's namespace: get
	// and update on the record alone, create on any name, which RBAC cannot
	// narrow. Nothing lists, watches, patches or deletes them.
	want := map[string]string{"get": record, "update": record, "create": "*"}
	got := map[string]string{}
	roles := map[string]bool{}
	for _, g := range configMapGrants(t, objs) {
		if _, dup := got[g.verb]; dup {
			t.Errorf("%s grants %s on ConfigMaps %s, and another rule on %s", g.role, g.verb, g.names, got[g.verb])
		}
		got[g.verb] = g.names
		roles[g.role] = true
	}
	if !maps.Equal(got, want) {
		t.Errorf("ConfigMaps granted by verb %v, want %v", got, want)
	}
	if len(roles) != 1 {
		t.Errorf("Roles that grant on ConfigMaps: %v, want one", slices.Sorted(maps.Keys(roles)))
	}
	for role := range roles {
		if !strings.HasPrefix(role, "Role "+recordNS+"/") {
			t.Errorf("%s grants on ConfigMaps, want a Role in %s, where the record is", role, recordNS)
		}
	}
	// Bound to the ServiceAccount, as every other role.
	checkBindings(t, objs)

	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	opts := parseFlags(t, dep.Spec.Template.Spec.Containers[0].Args)
	if !opts.DryRun {
		t.Errorf("Args %q, want --dry-run", dep.Spec.Template.Spec.Containers[0].Args)
	}
	if opts.DryRunRecord != options.DefaultDryRunRecord {
		t.Errorf("--dry-run-record=%s, want the default %s, which the Role grants", opts.DryRunRecord, options.DefaultDryRunRecord)
	}

	// The rest is config/default's: its Deployment with --dry-run before
	// --secure-port, and every other object the same.
	fromDefault, fromDryRun := byKey(t, render(t, "config/default")), byKey(t, objs)
	depKey := "apps/v1 " + describe(one(t, objs, "Deployment"))
	if _, ok := fromDefault[depKey]; !ok {
		t.Fatalf("config/default renders no %s", depKey)
	}
	wantDep := convert[appsv1.Deployment](t, fromDefault[depKey])
	ctr := &wantDep.Spec.Template.Spec.Containers[0]
	i := slices.IndexFunc(ctr.Args, func(a string) bool { return strings.HasPrefix(a, "--secure-port=") })
	if i < 0 {
		t.Fatalf("config/default's args %q have no --secure-port", ctr.Args)
	}
	ctr.Args = slices.Insert(ctr.Args, i, "--dry-run")
	if d := diff.Diff(wantDep, dep); d != "" {
		t.Errorf("The Deployment differs from config/default's with --dry-run before --secure-port (-want +%s):\n%s", dryRunInstaller, d)
	}
	delete(fromDefault, depKey)
	delete(fromDryRun, depKey)
	for _, key := range slices.Sorted(maps.Keys(fromDefault)) {
		if g, ok := fromDryRun[key]; !ok {
			t.Errorf("%s does not render %s, which config/default does", dryRunInstaller, key)
		} else if d := diff.Diff(fromDefault[key].Object, g.Object); d != "" {
			t.Errorf("%s differs from config/default's (-config/default +%s):\n%s", key, dryRunInstaller, d)
		}
		delete(fromDryRun, key)
	}
	wantAdded := []string{
		"rbac.authorization.k8s.io/v1 Role " + recordNS + "/node-lifecycle-dry-run-record",
		"rbac.authorization.k8s.io/v1 RoleBinding " + recordNS + "/node-lifecycle-dry-run-record",
	}
	if added := slices.Sorted(maps.Keys(fromDryRun)); !slices.Equal(added, wantAdded) {
		t.Errorf("%s adds %q to config/default, want %q", dryRunInstaller, added, wantAdded)
	}
}

// defaultRecord returns the namespace and name of the ConfigMap a dry run
// keeps its record in by default.
func defaultRecord(t *testing.T) (namespace, name string) {
	t.Helper()
	o := options.Options{DryRunRecord: options.DefaultDryRunRecord}
	namespace, name, err := o.DryRunRecordKey()
	if err != nil {
		t.Fatal(err)
	}
	return namespace, name
}

// TestDryRunInstallersRBACKeepsTheRecord runs the binary as a pod of
// config/dry-run would, as its ServiceAccount with only its RBAC: it must
// lead on the dry run's Lease, never the real one, judge a node that went
// silent, keep that in its record ConfigMap, and write nothing to the node.
func TestDryRunInstallersRBACKeepsTheRecord(t *testing.T) {
	env, c, objs := applyInstaller(t, dryRunInstaller)
	ctx := t.Context()
	recordNS, record := defaultRecord(t)

	// Short graces, so that a node that never heartbeats goes silent
	// within seconds; the record is written every monitor period.
	const grace, period = 3 * time.Second, time.Second
	runAsInstalled(t, env, c, objs,
		"--node-monitor-grace-period="+grace.String(),
		"--node-startup-grace-period=4s",
		"--node-monitor-period="+period.String(),
		"--pod-eviction-timeout=5s")

	const leaseName = "node-lifecycle-controller"
	waitForLeader(t, c, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: controllers.DryRunLeaseName(leaseName)})
	err := c.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: leaseName}, &coordinationv1.Lease{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("Get the real Lease %s: %v, want not found: a dry run must never take it", leaseName, err)
	}

	// Ready once, then silent: no Lease in kube-node-lease, no status
	// update.
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "silent"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
		}}},
	}
	if err := c.Create(ctx, node); err != nil {
		t.Fatalf("Create node %s: %v", node.Name, err)
	}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatalf("Post node %s's status: %v", node.Name, err)
	}
	// The apiserver's own, such as node.kubernetes.io/not-ready:NoSchedule
	// on a new node.
	taints := node.Spec.Taints

	// The dry run marks it Unknown, in its record only: it may get the
	// record, and create it.
	key := client.ObjectKey{Namespace: recordNS, Name: record}
	waitForEpisode(t, c, key, node.Name, "marked by the dry run", func(e shadow.Episode) bool { return e.Ours.Marked != nil })
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, key, cm); err != nil {
		t.Fatal(err)
	}
	if got := managers(cm.ManagedFields); !slices.Contains(got, controllerManager) {
		t.Errorf("The record %s was not written by the controller: managers %v", key, got)
	}

	// The node is as it was left: Ready, with the taints it was created
	// with, written by no one but this test.
	if err := c.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
		t.Fatal(err)
	}
	if got := managers(node.ManagedFields); slices.Contains(got, controllerManager) {
		t.Errorf("Node %s was written by the dry run: managers %v", node.Name, got)
	}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status != corev1.ConditionTrue {
			t.Errorf("Node %s is Ready=%s, want it left True", node.Name, cond.Status)
		}
	}
	if !equality.Semantic.DeepEqual(node.Spec.Taints, taints) {
		t.Errorf("Node %s has taints %v, want those it was created with, %v", node.Name, node.Spec.Taints, taints)
	}

	// It heartbeats again: the episode ends, and the dry run updates its
	// record, which it may on that ConfigMap alone.
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			node.Status.Conditions[i].LastHeartbeatTime = metav1.Now()
		}
	}
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatalf("Post node %s's heartbeat: %v", node.Name, err)
	}
	waitForEpisode(t, c, key, node.Name, "ended", func(e shadow.Episode) bool { return e.Ended != nil })
}

// waitForEpisode waits until the record in the ConfigMap key holds an
// episode of node that is what ok tells, and fails t if it does not within
// 30s.
func waitForEpisode(t *testing.T, c client.Client, key client.ObjectKey, node, what string, ok func(shadow.Episode) bool) {
	t.Helper()
	poll(t, 30*time.Second, func() error {
		stored, err := shadow.Load(t.Context(), c, key)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(stored.Episodes, func(e shadow.Episode) bool { return e.Node == node && ok(e) }) {
			return nil
		}
		return fmt.Errorf("the record %s holds no episode of node %s %s: %+v", key, node, what, stored.Episodes)
	})
}

// managers returns the field managers of entries.
func managers(entries []metav1.ManagedFieldsEntry) []string {
	var names []string
	for _, m := range entries {
		names = append(names, m.Manager)
	}
	return names
}
