package deploy

import (
	"bytes"
	"context"
	goflag "flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/cmdline"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// repoRoot is the module root, seen from this package's directory.
const repoRoot = "../.."

// kustomize is the binary `make kustomize` builds and `make build-installer`
// renders with.
var kustomize = filepath.Join(repoRoot, "bin", "kustomize")

// securePortName names the container port of the binary's secure port, which
// serves the probes and the metrics, and the metrics Service's port that
// leads to it.
const securePortName = "https"

// metricsServicePort is the metrics Service's port: where the metrics were
// served before the secure port, kept so that scrapers of the Service need
// no change.
const metricsServicePort = 8443

// builtInRoles are the roles the controller is bound to that Kubernetes
// itself makes, and the installer does not render.
var builtInRoles = []string{
	// The client CA of the secure port, in kube-system's ConfigMap
	// extension-apiserver-authentication.
	"Role kube-system/extension-apiserver-authentication-reader",
}

// forPeople are the ClusterRoles the installer offers to users and to the
// metrics scraper, not to the controller.
var forPeople = []string{
	"node-lifecycle-metrics-reader",
	"node-lifecycle-nodehealthpolicy-viewer-role",
	"node-lifecycle-nodehealthpolicy-editor-role",
}

// strict makes the apiserver refuse unknown and duplicate fields instead of
// dropping them with a warning.
var strict = client.FieldValidation(metav1.FieldValidationStrict)

func TestInstallerIsAcceptedByTheAPIServer(t *testing.T) {
	objs := render(t, "config/default")
	_, c, warnings := startAPIServer(t)
	ctx := t.Context()
	installOn(t, c, objs)
	pod := podOf(t, objs)
	for _, w := range warnings.all() {
		t.Errorf("The apiserver warned: %s", w)
	}
	if t.Failed() {
		return
	}

	// The checks above can fail: the namespace enforces the restricted
	// profile, and unknown fields are refused.
	t.Run("a pod that may run as root is refused", func(t *testing.T) {
		root := pod.DeepCopy()
		root.Spec.SecurityContext.RunAsNonRoot = nil
		err := c.Create(ctx, root, client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
			t.Errorf("Got %v, want a PodSecurity refusal", err)
		}
	})
	t.Run("an unknown field is refused", func(t *testing.T) {
		dep := one(t, objs, "Deployment").DeepCopy()
		if err := unstructured.SetNestedField(dep.Object, int64(2), "spec", "replica"); err != nil {
			t.Fatal(err)
		}
		err := c.Create(ctx, dep, client.DryRunAll, strict)
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("Got %v, want an unknown field refusal", err)
		}
	})
}

func TestDeploymentRunsTwoLeaderElectedReplicasUnderRestricted(t *testing.T) {
	objs := render(t, "config/default")
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	ns := convert[corev1.Namespace](t, one(t, objs, "Namespace"))

	if dep.Namespace != ns.Name {
		t.Errorf("Deployment in namespace %q, want the installer's %q", dep.Namespace, ns.Name)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("Namespace %s enforces Pod Security level %q, want restricted", ns.Name, got)
	}
	if got := ptr.Deref(dep.Spec.Replicas, 1); got != 2 {
		t.Errorf("Deployment has %d replicas, want 2", got)
	}
	spec := dep.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(spec.Containers))
	}
	ctr := spec.Containers[0]
	// The Makefile's overlay sets IMG by replacing this name.
	if ctr.Image != "node-lifecycle-controller:latest" {
		t.Errorf("Image %q, want the placeholder rewritten to node-lifecycle-controller:latest", ctr.Image)
	}

	opts := parseFlags(t, ctr.Args)
	if !slices.Contains(ctr.Args, "--leader-elect=true") || !opts.LeaderElection.LeaderElect {
		t.Errorf("Args %q, want --leader-elect=true", ctr.Args)
	}
	// The leader election Role grants the Lease in kube-system, where every
	// install and any process run elsewhere compete for it.
	if opts.LeaderElection.ResourceNamespace != metav1.NamespaceSystem {
		t.Errorf("--leader-elect-resource-namespace=%s, want %s", opts.LeaderElection.ResourceNamespace, metav1.NamespaceSystem)
	}

	checkServesOnTheSecurePort(t, ctr)

	psc := spec.SecurityContext
	if psc == nil || !ptr.Deref(psc.RunAsNonRoot, false) {
		t.Error("Pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("Pod securityContext.seccompProfile is not RuntimeDefault")
	}
	sc := ctr.SecurityContext
	if sc == nil {
		t.Fatal("Container has no securityContext")
	}
	if ptr.Deref(sc.AllowPrivilegeEscalation, true) {
		t.Error("Container securityContext.allowPrivilegeEscalation is not false")
	}
	if !ptr.Deref(sc.ReadOnlyRootFilesystem, false) {
		t.Error("Container securityContext.readOnlyRootFilesystem is not true")
	}
	if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("Container drops capabilities %v, want [ALL]", sc.Capabilities)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := ctr.Resources.Requests[r]; !ok {
			t.Errorf("No %s request", r)
		}
		if _, ok := ctr.Resources.Limits[r]; !ok {
			t.Errorf("No %s limit", r)
		}
	}
}

func TestBindingsGrantEveryRoleToTheServiceAccount(t *testing.T) {
	for _, dir := range []string{"config/default", dryRunInstaller} {
		t.Run(dir, func(t *testing.T) {
			checkBindings(t, render(t, dir))
		})
	}
}

// checkBindings checks that the installer objs runs its Deployment as its
// ServiceAccount, and binds to it every role it renders but those for
// people, and the built-in ones it needs, and nothing else; and that the
// Roles for Leases stay in the namespaces of the Leases.
func checkBindings(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	sa := one(t, objs, "ServiceAccount")
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	if dep.Spec.Template.Spec.ServiceAccountName != sa.GetName() || dep.Namespace != sa.GetNamespace() {
		t.Errorf("Deployment %s/%s runs as ServiceAccount %q, want %s/%s",
			dep.Namespace, dep.Name, dep.Spec.Template.Spec.ServiceAccountName, sa.GetNamespace(), sa.GetName())
	}

	// Every rendered role must end up bound to the ServiceAccount, and every
	// binding refer to a rendered role, but for the roles the installer
	// offers to people and scrapers, which the controller must not hold.
	bound := map[string]bool{}
	for _, r := range find(objs, "ClusterRole") {
		if slices.Contains(forPeople, r.GetName()) {
			continue
		}
		bound["ClusterRole "+r.GetName()] = false
	}
	for _, name := range forPeople {
		if !slices.ContainsFunc(find(objs, "ClusterRole"), func(u *unstructured.Unstructured) bool { return u.GetName() == name }) {
			t.Errorf("No ClusterRole %s", name)
		}
	}
	for _, r := range find(objs, "Role") {
		bound["Role "+r.GetNamespace()+"/"+r.GetName()] = false
	}
	// The built-in roles the controller needs must be bound too, though
	// the installer does not hold them.
	for _, role := range builtInRoles {
		bound[role] = false
	}
	checkRoleRef := func(binding, role string) {
		if name, ok := strings.CutPrefix(role, "ClusterRole "); ok && slices.Contains(forPeople, name) {
			t.Errorf("%s grants %s to the controller, which needs none of it", binding, role)
		}
		if _, ok := bound[role]; !ok {
			t.Errorf("%s refers to %s, which the installer does not hold and Kubernetes does not make", binding, role)
		}
		bound[role] = true
	}
	checkSubjects := func(binding string, subjects []rbacv1.Subject) {
		if len(subjects) == 0 {
			t.Errorf("%s has no subjects", binding)
		}
		for _, s := range subjects {
			if s.Kind != rbacv1.ServiceAccountKind || s.Name != sa.GetName() || s.Namespace != sa.GetNamespace() {
				t.Errorf("%s binds %s %s/%s, want ServiceAccount %s/%s",
					binding, s.Kind, s.Namespace, s.Name, sa.GetNamespace(), sa.GetName())
			}
		}
	}
	for _, u := range find(objs, "ClusterRoleBinding") {
		b := convert[rbacv1.ClusterRoleBinding](t, u)
		binding := "ClusterRoleBinding " + b.Name
		checkSubjects(binding, b.Subjects)
		checkRoleRef(binding, b.RoleRef.Kind+" "+b.RoleRef.Name)
	}
	for _, u := range find(objs, "RoleBinding") {
		b := convert[rbacv1.RoleBinding](t, u)
		binding := "RoleBinding " + b.Namespace + "/" + b.Name
		checkSubjects(binding, b.Subjects)
		// A RoleBinding may refer to a ClusterRole too, granting it in
		// its own namespace only.
		role := b.RoleRef.Kind + " " + b.RoleRef.Name
		if b.RoleRef.Kind == "Role" {
			role = b.RoleRef.Kind + " " + b.Namespace + "/" + b.RoleRef.Name
		}
		checkRoleRef(binding, role)
	}
	for role, ok := range bound {
		if !ok {
			t.Errorf("%s is bound to nothing", role)
		}
	}

	// The namespace transformer must leave the Role for node Leases where
	// they are, and the leader election Role where its Lease is:
	// kube-system.
	if !grantsLeases(t, objs, corev1.NamespaceNodeLease, "watch") {
		t.Errorf("No Role grants watching Leases in %s", corev1.NamespaceNodeLease)
	}
	if !grantsLeases(t, objs, metav1.NamespaceSystem, "update") {
		t.Errorf("No Role grants updating Leases in %s, where the leader election Lease is", metav1.NamespaceSystem)
	}
}

// grantsLeases reports whether a Role of objs in namespace allows verb on
// coordination.k8s.io Leases.
func grantsLeases(t *testing.T, objs []*unstructured.Unstructured, namespace, verb string) bool {
	t.Helper()
	for _, u := range find(objs, "Role") {
		if u.GetNamespace() != namespace {
			continue
		}
		for _, rule := range convert[rbacv1.Role](t, u).Rules {
			if slices.Contains(rule.APIGroups, "coordination.k8s.io") && slices.Contains(rule.Resources, "leases") &&
				slices.Contains(rule.Verbs, verb) {
				return true
			}
		}
	}
	return false
}

func TestServiceMonitorScrapesTheMetricsService(t *testing.T) {
	objs := render(t, "config/default")
	if len(find(objs, "ServiceMonitor")) > 0 {
		t.Error("config/default has a ServiceMonitor: it would not apply to a cluster without the Prometheus operator")
	}
	svc := convert[corev1.Service](t, one(t, objs, "Service"))
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	for k, v := range svc.Spec.Selector {
		if dep.Spec.Template.Labels[k] != v {
			t.Errorf("Service %s selects %s=%s, which the Deployment's pods do not carry", svc.Name, k, v)
		}
	}
	checkMetricsService(t, objs, metricsServicePort)

	mon := one(t, render(t, "config/prometheus"), "ServiceMonitor")
	if gv := mon.GroupVersionKind().GroupVersion(); gv != (schema.GroupVersion{Group: "monitoring.coreos.com", Version: "v1"}) {
		t.Errorf("ServiceMonitor is %s, want monitoring.coreos.com/v1", gv)
	}
	selector, _, err := unstructured.NestedStringMap(mon.Object, "spec", "selector", "matchLabels")
	if err != nil || len(selector) == 0 {
		t.Errorf("ServiceMonitor has no spec.selector.matchLabels (%v)", err)
	}
	for k, v := range selector {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, which Service %s does not carry", k, v, svc.Name)
		}
	}
	endpoints, _, err := unstructured.NestedSlice(mon.Object, "spec", "endpoints")
	if err != nil || len(endpoints) == 0 {
		t.Fatalf("ServiceMonitor has no spec.endpoints (%v)", err)
	}
	for _, e := range endpoints {
		e, _ := e.(map[string]any)
		if port, _ := e["port"].(string); port != svc.Spec.Ports[0].Name {
			t.Errorf("ServiceMonitor scrapes port %q, want %q", port, svc.Spec.Ports[0].Name)
		}
		// The controller serves metrics over HTTPS to a caller whose
		// token the apiserver accepts.
		if scheme, _ := e["scheme"].(string); scheme != "https" {
			t.Errorf("ServiceMonitor scrapes with scheme %q, want https", scheme)
		}
		if file, _ := e["bearerTokenFile"].(string); file == "" {
			t.Error("ServiceMonitor sends no bearer token")
		}
	}
}

// installOn sends objs to the apiserver c as an install would, in apply
// order, and then a pod of their Deployment in dry-run: a Deployment is
// admitted whatever its pods, and the namespace's Pod Security level and the
// priority class are checked on the pods. Refusals fail the test.
func installOn(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	ctx := t.Context()
	// Every cluster has kube-node-lease, where the installer puts the Role
	// for node Leases; a fresh apiserver may not have created it yet.
	lease := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}
	if err := c.Create(ctx, lease); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", corev1.NamespaceNodeLease, err)
	}
	for _, obj := range inApplyOrder(objs) {
		if err := apply(ctx, c, obj.DeepCopy()); err != nil {
			t.Errorf("%s refused: %v", describe(obj), err)
		}
	}
	if err := c.Create(ctx, podOf(t, objs), client.DryRunAll, strict); err != nil {
		t.Errorf("A pod of the Deployment is refused: %v", err)
	}
}

// render runs `kustomize build` on dir, relative to the module root, and
// returns the objects it prints.
func render(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	if _, err := os.Stat(kustomize); err != nil {
		t.Fatalf("No kustomize to render %s with: run `make kustomize` (`make test` does): %v", dir, err)
	}
	cmd := exec.CommandContext(t.Context(), kustomize, "build", filepath.Join(repoRoot, dir))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
	}
	objs, err := harness.DecodeObjects(out)
	if err != nil {
		t.Fatalf("Decode kustomize build %s: %v", dir, err)
	}
	if len(objs) == 0 {
		t.Fatalf("kustomize build %s rendered nothing", dir)
	}
	return objs
}

// startAPIServer starts kube-apiserver and etcd from KUBEBUILDER_ASSETS until
// the test ends, and returns them and an admin's client that records the
// apiserver's warnings.
func startAPIServer(t *testing.T) (*envtest.Environment, client.Client, *warningRecorder) {
	t.Helper()
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test`, which builds kube-apiserver and etcd into bin/")
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("Start kube-apiserver and etcd from %s: %v", assets, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("Stop kube-apiserver and etcd: %v", err)
		}
	})
	warnings := &warningRecorder{}
	withWarnings := rest.CopyConfig(cfg)
	withWarnings.WarningHandlerWithContext = warnings
	c, err := client.New(withWarnings, client.Options{})
	if err != nil {
		t.Fatalf("Create client: %v", err)
	}
	return env, c, warnings
}

// inApplyOrder returns objs with the Namespaces first, then the CRDs, then
// the rest in the order kustomize rendered them.
func inApplyOrder(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	rank := func(o *unstructured.Unstructured) int {
		switch o.GetKind() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition":
			return 1
		default:
			return 2
		}
	}
	sorted := slices.Clone(objs)
	slices.SortStableFunc(sorted, func(a, b *unstructured.Unstructured) int { return rank(a) - rank(b) })
	return sorted
}

// apply creates obj with strict field validation: for real if other objects
// need it to exist even in dry-run (a Namespace), or to be established to be
// judged (a CRD, whose names must also be accepted), else in dry-run.
func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	switch obj.GetKind() {
	case "Namespace":
		return c.Create(ctx, obj, strict)
	case "CustomResourceDefinition":
		if err := c.Create(ctx, obj, strict); err != nil {
			return err
		}
		return harness.WaitEstablished(ctx, c, obj.GetName())
	default:
		return c.Create(ctx, obj, client.DryRunAll, strict)
	}
}

// podOf returns a pod as the Deployment's ReplicaSet would create it.
func podOf(t *testing.T, objs []*unstructured.Unstructured) *corev1.Pod {
	t.Helper()
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	tmpl := dep.Spec.Template
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:        dep.Name + "-dry-run",
			Namespace:   dep.Namespace,
			Labels:      tmpl.Labels,
			Annotations: tmpl.Annotations,
		},
		Spec: tmpl.Spec,
	}
}

// parseFlags parses args with the binary's flag set, as main.go builds it,
// and validates the options they give.
func parseFlags(t *testing.T, args []string) cmdline.Options {
	t.Helper()
	opts := cmdline.Default()
	fs := pflag.NewFlagSet("node-lifecycle-controller", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts.AddFlags(fs)
	logFlags := goflag.NewFlagSet("logging", goflag.ContinueOnError)
	(&zap.Options{}).BindFlags(logFlags)
	fs.AddGoFlagSet(logFlags)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("The binary refuses the Deployment's args %q: %v", args, err)
	}
	if fs.NArg() > 0 {
		t.Fatalf("The binary refuses the Deployment's args: unexpected arguments %q", fs.Args())
	}
	if err := opts.Validate(); err != nil {
		t.Fatalf("The binary refuses the Deployment's args %q: %v", args, err)
	}
	return opts
}

// checkServesOnTheSecurePort checks that ctr serves its probes and metrics
// on the secure port its args give, and on nothing else: one container port,
// securePortName, which both probes get by name over HTTPS, /livez and
// /readyz. It returns the port.
func checkServesOnTheSecurePort(t *testing.T, ctr corev1.Container) int32 {
	t.Helper()
	opts := parseFlags(t, ctr.Args)
	if !opts.Serving.Enabled() {
		t.Fatalf("Args %q turn the secure port off, which serves the probes and the metrics", ctr.Args)
	}
	// The kubelet probes the pod's IP, not loopback.
	if ip := opts.Serving.SecureServing.BindAddress; ip.IsLoopback() {
		t.Errorf("--bind-address=%s: the kubelet cannot probe a port bound to loopback", ip)
	}
	serving := int32(opts.Serving.SecureServing.BindPort)
	if len(ctr.Ports) != 1 {
		t.Errorf("Container has ports %v, want %s only", ctr.Ports, securePortName)
	}
	if got := containerPort(t, ctr, securePortName).ContainerPort; got != serving {
		t.Errorf("Container port %s is %d, but the binary's secure port is %d", securePortName, got, serving)
	}
	// The secure port serves both: nothing else should listen.
	if opts.MetricsBindAddress != "0" {
		t.Errorf("--metrics-bind-address=%s serves metrics apart from the secure port", opts.MetricsBindAddress)
	}
	if opts.HealthProbeBindAddress != "0" {
		t.Errorf("--health-probe-bind-address=%s serves probes apart from the secure port", opts.HealthProbeBindAddress)
	}
	for name, get := range httpsProbes(t, ctr, probeWant{"liveness", ctr.LivenessProbe, "/livez"},
		probeWant{"readiness", ctr.ReadinessProbe, "/readyz"}) {
		// By name, so that the probe follows the port when it moves.
		if get.Port != intstr.FromString(securePortName) {
			t.Errorf("The %s probe gets port %s, want the one named %s", name, get.Port.String(), securePortName)
		}
		if got := resolve(t, ctr, get.Port); got != serving {
			t.Errorf("The %s probe gets port %d, but the binary's secure port is %d", name, got, serving)
		}
	}
	return serving
}

// probeWant is a probe a container must have, and the path it must get.
type probeWant struct {
	name  string
	probe *corev1.Probe
	path  string
}

// httpsProbes checks that each probe is an HTTPS GET of its path, as the
// secure port serves it, and returns the GETs by the probes' names.
func httpsProbes(t *testing.T, ctr corev1.Container, probes ...probeWant) map[string]*corev1.HTTPGetAction {
	t.Helper()
	gets := make(map[string]*corev1.HTTPGetAction, len(probes))
	for _, p := range probes {
		if p.probe == nil || p.probe.HTTPGet == nil {
			t.Errorf("Container %s has no HTTP %s probe", ctr.Name, p.name)
			continue
		}
		get := p.probe.HTTPGet
		if get.Path != p.path {
			t.Errorf("The %s probe gets %s, want %s", p.name, get.Path, p.path)
		}
		if get.Scheme != corev1.URISchemeHTTPS {
			t.Errorf("The %s probe gets with scheme %q, want HTTPS: the secure port serves nothing else", p.name, get.Scheme)
		}
		gets[p.name] = get
	}
	return gets
}

// checkMetricsService checks that the metrics Service of objs has one port,
// securePortName, numbered port, that leads to the secure port of the
// Deployment's pods.
func checkMetricsService(t *testing.T, objs []*unstructured.Unstructured, port int32) {
	t.Helper()
	dep := convert[appsv1.Deployment](t, one(t, objs, "Deployment"))
	ctr := dep.Spec.Template.Spec.Containers[0]
	serving := checkServesOnTheSecurePort(t, ctr)
	svc := convert[corev1.Service](t, one(t, objs, "Service"))
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != securePortName {
		t.Fatalf("Service %s has ports %v, want one named %s", svc.Name, svc.Spec.Ports, securePortName)
	}
	if got := svc.Spec.Ports[0].Port; got != port {
		t.Errorf("Service %s has port %d, want %d", svc.Name, got, port)
	}
	if got := resolve(t, ctr, svc.Spec.Ports[0].TargetPort); got != serving {
		t.Errorf("Service %s targets port %d, but the binary's secure port is %d", svc.Name, got, serving)
	}
}

// containerPort returns the port of ctr called name.
func containerPort(t *testing.T, ctr corev1.Container, name string) corev1.ContainerPort {
	t.Helper()
	i := slices.IndexFunc(ctr.Ports, func(p corev1.ContainerPort) bool { return p.Name == name })
	if i < 0 {
		t.Fatalf("Container %s has no port named %s", ctr.Name, name)
	}
	return ctr.Ports[i]
}

// resolve returns the number of a port of ctr given by number or by name.
func resolve(t *testing.T, ctr corev1.Container, port intstr.IntOrString) int32 {
	t.Helper()
	if port.Type == intstr.Int {
		return port.IntVal
	}
	return containerPort(t, ctr, port.StrVal).ContainerPort
}

// find returns the objects of objs of the given kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	return found
}

// one returns the only object of objs of the given kind.
func one(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := find(objs, kind)
	if len(found) != 1 {
		t.Fatalf("Rendered %d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// convert turns u into its typed form, refusing fields the type lacks.
func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	obj := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, obj, true); err != nil {
		t.Fatalf("%s: %v", describe(u), err)
	}
	return obj
}

func describe(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return u.GetKind() + " " + ns + "/" + u.GetName()
	}
	return u.GetKind() + " " + u.GetName()
}

// warningRecorder keeps the warnings the apiserver sends, such as those for
// deprecated APIs and fields.
type warningRecorder struct {
	mu    sync.Mutex
	texts []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.texts = append(w.texts, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.texts)
}
