package deploy

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/serving"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// helm is the binary `make helm` builds.
var helm = filepath.Join(repoRoot, "bin", "helm")

// chart is the Helm chart, relative to the module root. With its default
// values it must render the objects of config/default, but for the Namespace.
const chart = "dist/chart"

// release is the release name the chart is rendered under. The chart's
// object names do not depend on it: the controller is one per cluster.
const release = "node-lifecycle"

// resourcePolicy is the annotation with which Helm leaves an object in place
// when the release is uninstalled.
const resourcePolicy = "helm.sh/resource-policy"

// helmLabels are the labels that the chart's "chart.labels" puts on every
// object. Those the installer gives an object too must have the same value,
// but for app.kubernetes.io/managed-by: Helm there, kustomize in the
// installer.
var helmLabels = []string{
	"helm.sh/chart",
	"app.kubernetes.io/name",
	"app.kubernetes.io/instance",
	"app.kubernetes.io/version",
	"app.kubernetes.io/managed-by",
}

func TestChartPassesStrictLint(t *testing.T) {
	for _, values := range [][]string{
		nil,
		{"namespace.create=true", "prometheus.enable=true"},
		{"securePort=12345", "prometheus.enable=true"},
		{"metrics.enable=false", "rbac.enable=false", "crd.enable=false"},
		{"dryRun.enable=true"},
		{"dryRun.enable=true", "rbac.enable=false"},
		{"certManager.enable=true", "prometheus.enable=true"},
	} {
		name := strings.Join(values, ",")
		if name == "" {
			name = "defaults"
		}
		t.Run(name, func(t *testing.T) {
			runHelm(t, append([]string{"lint", "--strict", filepath.Join(repoRoot, chart)}, setFlags(values)...)...)
		})
	}
}

func TestChartRendersTheInstaller(t *testing.T) {
	installer := render(t, "config/default")
	// Helm charts install into the release's namespace, which `helm install
	// --create-namespace` creates, and do not create it themselves: the
	// chart renders the installer's Namespace only with namespace.create.
	// Rendered into the installer's namespace, it must hold the rest.
	namespace := one(t, installer, "Namespace").GetName()
	// config/prometheus holds the ServiceMonitor and the PrometheusRule.
	withPrometheus := renderWithPrometheus(t)
	one(t, withPrometheus, "PrometheusRule")
	withoutNamespace := func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		return slices.DeleteFunc(slices.Clone(objs), func(o *unstructured.Unstructured) bool { return o.GetKind() == "Namespace" })
	}

	for _, tc := range []struct {
		name   string
		values []string
		want   []*unstructured.Unstructured
	}{{
		name: "defaults render all but the Namespace",
		want: withoutNamespace(installer),
	}, {
		name:   "namespace.create renders the Namespace too",
		values: []string{"namespace.create=true"},
		want:   installer,
	}, {
		name:   "prometheus.enable renders config/prometheus's ServiceMonitor and PrometheusRule",
		values: []string{"namespace.create=true", "prometheus.enable=true"},
		want:   withPrometheus,
	}, {
		name:   "prometheus.rules.enable=false renders the ServiceMonitor alone",
		values: []string{"namespace.create=true", "prometheus.enable=true", "prometheus.rules.enable=false"},
		want:   slices.DeleteFunc(slices.Clone(withPrometheus), func(o *unstructured.Unstructured) bool { return o.GetKind() == "PrometheusRule" }),
	}, {
		name:   "certManager.enable renders config/certmanager, with config/prometheus",
		values: []string{"namespace.create=true", "prometheus.enable=true", "certManager.enable=true"},
		want:   renderWithCertManager(t),
	}, {
		// --dry-run, and the Role and RoleBinding of the record.
		name:   "dryRun.enable renders config/dry-run, but the Namespace",
		values: []string{"dryRun.enable=true"},
		want:   withoutNamespace(render(t, dryRunInstaller)),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			compareRenders(t, tc.want, renderChart(t, namespace, tc.values...))
		})
	}
}

func TestChartValues(t *testing.T) {
	const namespace = "node-lifecycle-system"

	t.Run("defaults", func(t *testing.T) {
		objs := renderChart(t, namespace)
		if len(find(objs, "Namespace")) > 0 {
			t.Error("The chart renders a Namespace without namespace.create")
		}
		crd := one(t, objs, "CustomResourceDefinition")
		if got := crd.GetAnnotations()[resourcePolicy]; got != "keep" {
			t.Errorf("CRD %s has %s=%q, want keep (crd.keep)", crd.GetName(), resourcePolicy, got)
		}
		if len(find(objs, "ServiceMonitor")) > 0 {
			t.Error("The chart renders a ServiceMonitor without prometheus.enable: it would not install without the Prometheus operator")
		}
		if got := checkServesOnTheSecurePort(t, manager(t, objs)); got != serving.DefaultSecurePort {
			t.Errorf("The secure port is %d, want the binary's default %d", got, serving.DefaultSecurePort)
		}
		checkMetricsService(t, objs, metricsServicePort)
		for _, name := range []string{"node-lifecycle-metrics-auth-role", "node-lifecycle-metrics-reader"} {
			if !has(objs, "ClusterRole", name) {
				t.Errorf("No ClusterRole %s", name)
			}
		}
	})

	// A release upgraded with --reuse-values keeps the values it was
	// installed with, those of a chart without securePort; setting it to
	// null removes it the same way.
	t.Run("no securePort, as after an upgrade with --reuse-values", func(t *testing.T) {
		want := manager(t, renderChart(t, namespace))
		got := manager(t, renderChart(t, namespace, "securePort=null"))
		if d := diff.Diff(want, got); d != "" {
			t.Errorf("The container differs from the defaults' (-defaults +without securePort):\n%s", d)
		}
	})

	t.Run("securePort=12345", func(t *testing.T) {
		objs := renderChart(t, namespace, "securePort=12345")
		if got := checkServesOnTheSecurePort(t, manager(t, objs)); got != 12345 {
			t.Errorf("The secure port is %d, want 12345", got)
		}
		// The Service's own port stays metrics.port; it leads to the new one.
		checkMetricsService(t, objs, metricsServicePort)
		for _, port := range []string{"0", "65536", "https"} {
			_, err := renderChartErr(t, namespace, "securePort="+port)
			if err == nil || !strings.Contains(err.Error(), "securePort") {
				t.Errorf("securePort=%s renders with error %v, want one about securePort", port, err)
			}
		}
	})

	// Metrics are served over HTTPS only now: a value that asks for plain
	// HTTP must fail, saying why, rather than be ignored.
	t.Run("metrics.secure=false", func(t *testing.T) {
		_, err := renderChartErr(t, namespace, "metrics.secure=false", "prometheus.enable=true")
		if err == nil {
			t.Fatal("The chart renders with metrics.secure=false, which it no longer honors")
		}
		for _, why := range []string{"metrics.secure", "HTTPS", "docs/upgrading.md"} {
			if !strings.Contains(err.Error(), why) {
				t.Errorf("The chart refuses metrics.secure=false with %q, which does not mention %s", err, why)
			}
		}
		// The old default, which --reuse-values carries over, is what the
		// chart does anyway.
		if d := diff.Diff(renderChart(t, namespace), renderChart(t, namespace, "metrics.secure=true")); d != "" {
			t.Errorf("metrics.secure=true renders other objects than the defaults (-defaults +metrics.secure=true):\n%s", d)
		}
	})

	t.Run("metrics.enable=false", func(t *testing.T) {
		objs := renderChart(t, namespace, "metrics.enable=false")
		// The probes still need the secure port, which serves /metrics
		// anyway, to callers allowed to get it.
		checkServesOnTheSecurePort(t, manager(t, objs))
		if len(find(objs, "Service")) > 0 {
			t.Error("The chart renders a metrics Service without metrics")
		}
		if has(objs, "ClusterRole", "node-lifecycle-metrics-reader") {
			t.Error("The chart renders the metrics-reader ClusterRole without metrics")
		}
		// The secure port checks its callers whatever metrics.enable.
		if !has(objs, "ClusterRole", "node-lifecycle-metrics-auth-role") || !has(objs, "ClusterRoleBinding", "node-lifecycle-metrics-auth-rolebinding") {
			t.Error("The chart leaves out the role with which the secure port checks its callers")
		}
		if !has(objs, "RoleBinding", "node-lifecycle-authentication-reader") {
			t.Error("The chart leaves out the authentication reader RoleBinding, without which the controller trusts no client certificate")
		}
		if _, err := renderChartErr(t, namespace, "metrics.enable=false", "prometheus.enable=true"); err == nil {
			t.Error("The chart renders a ServiceMonitor with nothing to scrape")
		}
	})

	t.Run("rbac.enable=false", func(t *testing.T) {
		// Not even the dry run's record.
		objs := renderChart(t, namespace, "rbac.enable=false", "dryRun.enable=true")
		for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
			for _, o := range find(objs, kind) {
				t.Errorf("The chart renders %s without rbac.enable", describe(o))
			}
		}
		// The Deployment still needs the identity it runs as.
		sa := one(t, objs, "ServiceAccount")
		if dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment")); dep.Spec.Template.Spec.ServiceAccountName != sa.GetName() {
			t.Errorf("Deployment runs as %q, want the rendered ServiceAccount %s", dep.Spec.Template.Spec.ServiceAccountName, sa.GetName())
		}
	})

	t.Run("dryRun.enable=true", func(t *testing.T) {
		objs := renderChart(t, namespace, "dryRun.enable=true", "controllerManager.container.args={--leader-elect=true,--node-monitor-grace-period=50s}")
		args := manager(t, objs).Args
		// After the user's flags, before the chart's own.
		if want := []string{"--leader-elect=true", "--node-monitor-grace-period=50s", "--dry-run", fmt.Sprintf("--secure-port=%d", serving.DefaultSecurePort)}; !slices.Equal(args, want) {
			t.Errorf("Args %q, want %q", args, want)
		}
		opts := parseFlags(t, args)
		if !opts.DryRun || opts.DryRunRecord != options.DefaultDryRunRecord {
			t.Errorf("Args %q give --dry-run=%t --dry-run-record=%s, want a dry run with the record at its default %s",
				args, opts.DryRun, opts.DryRunRecord, options.DefaultDryRunRecord)
		}
		for _, kind := range []string{"Role", "RoleBinding"} {
			if !has(objs, kind, "node-lifecycle-dry-run-record") {
				t.Errorf("No %s node-lifecycle-dry-run-record", kind)
			}
		}
	})

	// A release upgraded with --reuse-values keeps the values of a chart
	// without dryRun, and so is no dry run; dryRun.enable=false is the
	// default.
	t.Run("no dryRun, as after an upgrade with --reuse-values", func(t *testing.T) {
		defaults := renderChart(t, namespace)
		for _, values := range [][]string{{"dryRun=null"}, {"dryRun.enable=false"}} {
			if d := diff.Diff(defaults, renderChart(t, namespace, values...)); d != "" {
				t.Errorf("%s renders other objects than the defaults (-defaults +%s):\n%s", values, values, d)
			}
		}
	})

	// A release upgraded with --reuse-values keeps the values of a chart
	// without certManager: the controller makes its own certificate, as it
	// did.
	t.Run("no certManager, as after an upgrade with --reuse-values", func(t *testing.T) {
		defaults := renderChart(t, namespace)
		for _, values := range [][]string{{"certManager=null"}, {"certManager.enable=false"}} {
			if d := diff.Diff(defaults, renderChart(t, namespace, values...)); d != "" {
				t.Errorf("%s renders other objects than the defaults (-defaults +%s):\n%s", values, values, d)
			}
		}
	})

	// A certificate of the user's beside cert-manager's: one of the two
	// would be served, the other silently not.
	t.Run("certManager.enable with a certificate among the args", func(t *testing.T) {
		for _, arg := range []string{"--tls-cert-file=/c/tls.crt", "--tls-private-key-file=/c/tls.key", "--cert-dir=/c"} {
			_, err := renderChartErr(t, namespace, "certManager.enable=true", "controllerManager.container.args={--leader-elect=true,"+arg+"}")
			if err == nil || !strings.Contains(err.Error(), "certManager.enable") {
				t.Errorf("%s among the args renders with error %v, want one about certManager.enable", arg, err)
			}
		}
		for _, values := range [][]string{{"certManager=true"}, {"certManager.enable=yes"}, {"certManager.enable=true", "metrics.enable=false"}} {
			if _, err := renderChartErr(t, namespace, values...); err == nil || !strings.Contains(err.Error(), "certManager") {
				t.Errorf("%s renders with error %v, want one about certManager", values, err)
			}
		}
	})

	// --dry-run among the user's flags would run a dry run without the
	// RBAC of its record, which is no longer granted to every install.
	t.Run("--dry-run in controllerManager.container.args", func(t *testing.T) {
		for _, arg := range []string{"--dry-run", "--dry-run=true", "--dry-run=1"} {
			_, err := renderChartErr(t, namespace, "controllerManager.container.args={--leader-elect=true,"+arg+"}")
			if err == nil || !strings.Contains(err.Error(), "dryRun.enable=true") {
				t.Errorf("%s among the args renders with error %v, want one that says to set dryRun.enable=true", arg, err)
			}
		}
		// --dry-run=false, or --dry-run-record alone, runs no dry run.
		for _, args := range []string{"--dry-run=false", "--dry-run-record=ops/record"} {
			if _, err := renderChartErr(t, namespace, "controllerManager.container.args={--leader-elect=true,"+args+"}"); err != nil {
				t.Errorf("%s among the args: %v", args, err)
			}
		}
		for _, values := range [][]string{{"dryRun=true"}, {"dryRun.enable=yes"}} {
			if _, err := renderChartErr(t, namespace, values...); err == nil || !strings.Contains(err.Error(), "dryRun") {
				t.Errorf("%s renders with error %v, want one about dryRun", values, err)
			}
		}
	})

	t.Run("crd", func(t *testing.T) {
		crd := one(t, renderChart(t, namespace, "crd.keep=false"), "CustomResourceDefinition")
		if got, ok := crd.GetAnnotations()[resourcePolicy]; ok {
			t.Errorf("CRD %s has %s=%q without crd.keep", crd.GetName(), resourcePolicy, got)
		}
		if objs := renderChart(t, namespace, "crd.enable=false"); len(find(objs, "CustomResourceDefinition")) > 0 {
			t.Error("The chart renders the CRD without crd.enable")
		}
	})

	t.Run("controllerManager", func(t *testing.T) {
		objs := renderChart(t, namespace,
			"controllerManager.replicas=3",
			"controllerManager.container.image.repository=registry.example.com/node-lifecycle-controller",
			"controllerManager.container.image.tag=v0.1.0",
			"controllerManager.container.image.pullPolicy=IfNotPresent",
			"controllerManager.container.args={--leader-elect=true,--node-monitor-grace-period=50s}",
			"controllerManager.container.resources.limits.memory=4Gi",
		)
		dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
		if got := ptr.Deref(dep.Spec.Replicas, 1); got != 3 {
			t.Errorf("Deployment has %d replicas, want 3", got)
		}
		ctr := dep.Spec.Template.Spec.Containers[0]
		if want := "registry.example.com/node-lifecycle-controller:v0.1.0"; ctr.Image != want {
			t.Errorf("Image %q, want %q", ctr.Image, want)
		}
		if ctr.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("ImagePullPolicy %q, want %q", ctr.ImagePullPolicy, corev1.PullIfNotPresent)
		}
		if !slices.Contains(ctr.Args, "--node-monitor-grace-period=50s") {
			t.Errorf("Args %q lack the one given in controllerManager.container.args", ctr.Args)
		}
		// The chart's own flags come after the user's, and the binary takes
		// them all.
		parseFlags(t, ctr.Args)
		if got := ctr.Resources.Limits.Memory().String(); got != "4Gi" {
			t.Errorf("Memory limit %s, want 4Gi", got)
		}
	})

	t.Run("release namespace", func(t *testing.T) {
		const elsewhere = "ops"
		objs := renderChart(t, elsewhere, "namespace.create=true", "dryRun.enable=true")
		if ns := one(t, objs, "Namespace"); ns.GetName() != elsewhere {
			t.Errorf("Namespace %s rendered, want the release's %s", ns.GetName(), elsewhere)
		}
		for _, o := range objs {
			switch ns := o.GetNamespace(); {
			case clusterScoped(o):
				if ns != "" {
					t.Errorf("%s is cluster-scoped but has a namespace", describe(o))
				}
			case ns == corev1.NamespaceNodeLease, ns == metav1.NamespaceSystem:
				// The Role and RoleBinding for node Leases stay where the
				// Leases are, and those for the dry-run record where it is.
				if o.GetKind() != "Role" && o.GetKind() != "RoleBinding" {
					t.Errorf("%s is not in the release's namespace %s", describe(o), elsewhere)
				}
			case ns != elsewhere:
				t.Errorf("%s is not in the release's namespace %s", describe(o), elsewhere)
			}
		}
		for _, o := range append(find(objs, "RoleBinding"), find(objs, "ClusterRoleBinding")...) {
			subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
			for _, s := range subjects {
				if ns := s.(map[string]any)["namespace"]; ns != elsewhere {
					t.Errorf("%s binds a subject in namespace %v, want the release's %s", describe(o), ns, elsewhere)
				}
			}
		}
		for _, o := range find(objs, "FlowSchema") {
			for _, rule := range convert[flowcontrolv1.FlowSchema](t, o).Spec.Rules {
				for _, s := range rule.Subjects {
					if sa := s.ServiceAccount; sa == nil || sa.Namespace != elsewhere {
						t.Errorf("%s matches %v, want a ServiceAccount in the release's namespace %s", describe(o), subjectsOf([]flowcontrolv1.Subject{s}), elsewhere)
					}
				}
			}
		}
	})
}

// clusterScoped says whether o is of a kind the installer and the chart
// render without a namespace.
func clusterScoped(o *unstructured.Unstructured) bool {
	switch o.GetKind() {
	case "Namespace", "CustomResourceDefinition", "FlowSchema", "PriorityLevelConfiguration":
		return true
	}
	return strings.HasPrefix(o.GetKind(), "Cluster")
}

func TestChartIsAcceptedByTheAPIServer(t *testing.T) {
	const namespace = "node-lifecycle-system"
	// With the Namespace, so that its Pod Security level judges the pod. The
	// ServiceMonitor and PrometheusRule (prometheus.enable) are left out:
	// envtest has no Prometheus operator CRDs to judge them with.
	// TestChartRendersTheInstaller compares them with config/prometheus's
	// instead.
	objs := renderChart(t, namespace, "namespace.create=true")
	_, c, warnings := startAPIServer(t)
	ctx := t.Context()
	installOn(t, c, objs)
	if t.Failed() {
		return
	}

	// The values the installer has no counterpart of change the Deployment,
	// the Service and the RBAC; the Namespace and the CRD above stay.
	for _, values := range [][]string{{"securePort=12345"}, {"metrics.enable=false"}, {"rbac.enable=false"}, {"dryRun.enable=true"}} {
		t.Run(strings.Join(values, ","), func(t *testing.T) {
			objs := renderChart(t, namespace, values...)
			for _, obj := range objs {
				if obj.GetKind() == "Namespace" || obj.GetKind() == "CustomResourceDefinition" {
					continue
				}
				if err := c.Create(ctx, obj.DeepCopy(), client.DryRunAll, strict); err != nil {
					t.Errorf("%s refused: %v", describe(obj), err)
				}
			}
			if err := c.Create(ctx, podOf(t, objs), client.DryRunAll, strict); err != nil {
				t.Errorf("A pod of the Deployment is refused: %v", err)
			}
		})
	}
	for _, w := range warnings.all() {
		t.Errorf("The apiserver warned: %s", w)
	}
}

// compareRenders fails t unless the chart renders the objects the installer
// does, the same but for the labels and annotations Helm adds.
func compareRenders(t *testing.T, installer, chart []*unstructured.Unstructured) {
	t.Helper()
	want, got := byKey(t, installer), byKey(t, chart)
	for _, key := range slices.Sorted(maps.Keys(want)) {
		c, ok := got[key]
		if !ok {
			t.Errorf("The chart does not render %s, which config/ does", key)
			continue
		}
		w, c := withoutHelmMetadata(want[key], c)
		if d := diff.Diff(w.Object, c.Object); d != "" {
			t.Errorf("The chart's %s differs from config/'s (-config +chart):\n%s", key, d)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[key]; !ok {
			t.Errorf("The chart renders %s, which config/ does not", key)
		}
	}
}

// byKey indexes objs by API version, kind, namespace and name.
func byKey(t *testing.T, objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	m := make(map[string]*unstructured.Unstructured, len(objs))
	for _, o := range objs {
		key := o.GetAPIVersion() + " " + describe(o)
		if _, dup := m[key]; dup {
			t.Fatalf("%s rendered twice", key)
		}
		m[key] = o
	}
	return m
}

// withoutHelmMetadata returns copies of installer and chart, two renders of
// one object, without the labels and the annotation that only the chart
// gives them.
func withoutHelmMetadata(installer, chart *unstructured.Unstructured) (*unstructured.Unstructured, *unstructured.Unstructured) {
	installer, chart = installer.DeepCopy(), chart.DeepCopy()
	il, cl := installer.GetLabels(), chart.GetLabels()
	for _, k := range helmLabels {
		if _, ok := il[k]; !ok || k == "app.kubernetes.io/managed-by" {
			delete(il, k)
			delete(cl, k)
		}
	}
	installer.SetLabels(orNil(il))
	chart.SetLabels(orNil(cl))
	a := chart.GetAnnotations()
	delete(a, resourcePolicy)
	chart.SetAnnotations(orNil(a))
	return installer, chart
}

// orNil returns m, or nil if m is empty: set on an object, an empty map
// would leave an empty field where the other render has none.
func orNil(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}

// renderWithPrometheus renders config/default with config/prometheus
// included, as its kustomization.yaml says to: with its line uncommented.
func renderWithPrometheus(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return renderDefaultWith(t, "- ../prometheus")
}

// renderWithCertManager renders config/default with config/prometheus and
// the config/certmanager component included, as its kustomization.yaml
// says to.
func renderWithCertManager(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	return renderDefaultWith(t, "- ../prometheus", "components:\n- ../certmanager")
}

// renderDefaultWith renders a copy of config/default whose kustomization.yaml
// has each of lines, commented out there line by line, uncommented, as a
// user would include the optional parts.
func renderDefaultWith(t *testing.T, lines ...string) []*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(repoRoot, "config"))); err != nil {
		t.Fatalf("Copy config/: %v", err)
	}
	path := filepath.Join(dir, "default", "kustomization.yaml")
	k, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		uncommented := "\n" + l + "\n"
		commented := "\n#" + strings.ReplaceAll(l, "\n", "\n#") + "\n"
		if !bytes.Contains(k, []byte(commented)) {
			t.Fatalf("config/default/kustomization.yaml has no lines %q to uncomment", strings.TrimSpace(commented))
		}
		k = bytes.Replace(k, []byte(commented), []byte(uncommented), 1)
	}
	if err := os.WriteFile(path, k, 0o644); err != nil {
		t.Fatal(err)
	}
	// render takes a directory relative to the module root.
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(root, filepath.Join(dir, "default"))
	if err != nil {
		t.Fatal(err)
	}
	return render(t, rel)
}

// renderChart runs `helm template` on the chart as release in namespace,
// with values given as name=value, and returns the objects it prints.
func renderChart(t *testing.T, namespace string, values ...string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := renderChartErr(t, namespace, values...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// renderChartErr is renderChart, returning rather than failing when helm
// refuses the values.
func renderChartErr(t *testing.T, namespace string, values ...string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	args := append([]string{"template", release, filepath.Join(repoRoot, chart), "--namespace", namespace}, setFlags(values)...)
	out, err := helmOutput(t, args...)
	if err != nil {
		return nil, err
	}
	objs, err := harness.DecodeObjects(out)
	if err != nil {
		t.Fatalf("Decode helm %s: %v", strings.Join(args, " "), err)
	}
	if len(objs) == 0 {
		t.Fatalf("helm %s rendered nothing", strings.Join(args, " "))
	}
	return objs, nil
}

// runHelm runs helm with args, failing t if it fails, and returns its
// standard output.
func runHelm(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := helmOutput(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// helmOutput runs helm with args and returns its standard output, or an
// error with all it printed.
func helmOutput(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("No helm to check %s with: run `make helm` (`make test` does): %v", chart, err)
	}
	cmd := exec.CommandContext(t.Context(), helm, args...)
	// Away from the user's Helm configuration, repositories and plugins.
	home := t.TempDir()
	cmd.Env = append(os.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

// setFlags turns values given as name=value into helm's --set flags.
func setFlags(values []string) []string {
	var flags []string
	for _, v := range values {
		flags = append(flags, "--set", v)
	}
	return flags
}

// manager returns the container of the rendered Deployment.
func manager(t *testing.T, objs []*unstructured.Unstructured) corev1.Container {
	t.Helper()
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	if len(dep.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(dep.Spec.Template.Spec.Containers))
	}
	return dep.Spec.Template.Spec.Containers[0]
}

// has reports whether objs hold an object of kind called name.
func has(objs []*unstructured.Unstructured, kind, name string) bool {
	return slices.ContainsFunc(find(objs, kind), func(o *unstructured.Unstructured) bool { return o.GetName() == name })
}
