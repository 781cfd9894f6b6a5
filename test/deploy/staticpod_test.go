package deploy

import (
	"bytes"
	goflag "flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/cmdline"
	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// The control-plane install, relative to the module root: a static pod for
// kubeadm's manifest directory, its RBAC, and the settings that turn
// kube-controller-manager's two loops off under kubeadm, k3s and RKE2, and
// Cluster API. docs/control-plane.md shows each file.
const (
	staticPodManifest = "config/static-pod/node-lifecycle-controller.yaml"
	staticPodRBAC     = "config/static-pod/rbac"
	kubeadmPatch      = "config/static-pod/kubeadm-patch.yaml"
	k3sConfig         = "config/static-pod/k3s-config.yaml"
	controlPlanePatch = "config/static-pod/kubeadm-control-plane-patch.yaml"
	controlPlaneDoc   = "docs/control-plane.md"
)

// controllerUser is the User the static pods act as: the CN of the client
// certificate in their kubeconfig, to which config/static-pod/rbac binds
// every role.
const controllerUser = "system:node-lifecycle-controller"

// staticPodKubeconfig is the static pods' kubeconfig, at the same path on the
// node and in the container.
const staticPodKubeconfig = "/etc/kubernetes/node-lifecycle-controller.conf"

// manifestsDir is where kubeadm writes its static pods, and the kubelet it
// configures reads them.
const manifestsDir = "/etc/kubernetes/manifests"

// maxFileContent is the most Cluster API's v1beta2 File.content holds.
const maxFileContent = 10240

// kubeadmControllers is the --controllers kubeadm gives kube-controller-manager:
// every controller that is on by default, and the two off by default that its
// bootstrap tokens need, by the names kubeadm uses.
var kubeadmControllers = []string{"*", "bootstrapsigner", "tokencleaner"}

// replacedControllers are the kube-controller-manager controllers this one
// replaces, by their names in --controllers.
var replacedControllers = []string{"node-lifecycle-controller", "taint-eviction-controller"}

// controllerAliases are the older names kubeadm gives two controllers.
// kube-controller-manager accepts them, but its --help lists only the names
// they stand for.
var controllerAliases = map[string]string{
	"bootstrapsigner": "bootstrap-signer-controller",
	"tokencleaner":    "token-cleaner-controller",
}

// pathFlag matches the names of the binary's flags whose value is a file or
// a directory.
var pathFlag = regexp.MustCompile(`^(kubeconfig|.+-kubeconfig|.+-file|.+-dir|.+-path)$`)

// kcmControllerList finds the controller names in the --controllers text of
// kube-controller-manager's --help.
var kcmControllerList = regexp.MustCompile(`(?s)All controllers:\s*(.*?)\s*Disabled-by-default controllers:`)

// kubeadmArg is an entry of extraArgs, in kubeadm's v1beta4 API and in
// Cluster API's v1beta2.
type kubeadmArg struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// clusterConfiguration holds the fields of kubeadm's ClusterConfiguration
// that kubeadm-patch.yaml sets. The fragments are decoded strictly: a field
// not named here fails the test, so a misspelled one is not silently ignored.
type clusterConfiguration struct {
	APIVersion        string `json:"apiVersion,omitempty"`
	Kind              string `json:"kind,omitempty"`
	ControllerManager struct {
		ExtraArgs []kubeadmArg `json:"extraArgs"`
	} `json:"controllerManager"`
}

// kubeadmControlPlane holds the fields of Cluster API's KubeadmControlPlane
// that kubeadm-control-plane-patch.yaml sets.
type kubeadmControlPlane struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		KubeadmConfigSpec struct {
			ClusterConfiguration clusterConfiguration `json:"clusterConfiguration"`
			Files                []kubeadmFile        `json:"files"`
			PostKubeadmCommands  []string             `json:"postKubeadmCommands"`
		} `json:"kubeadmConfigSpec"`
	} `json:"spec"`
}

// kubeadmFile is a file Cluster API writes on a machine before kubeadm runs.
type kubeadmFile struct {
	Path        string `json:"path"`
	Owner       string `json:"owner"`
	Permissions string `json:"permissions"`
	Content     string `json:"content"`
}

// k3sConfiguration holds the keys of k3s's (and RKE2's) config.yaml that
// k3s-config.yaml sets.
type k3sConfiguration struct {
	KubeControllerManagerArg []string `json:"kube-controller-manager-arg"`
}

func TestStaticPodServesItsProbesOnTheSecurePort(t *testing.T) {
	pod := staticPod(t)
	if pod.Namespace != metav1.NamespaceSystem {
		t.Errorf("Static pod in namespace %q, want %s, where kubeadm's control-plane pods are", pod.Namespace, metav1.NamespaceSystem)
	}
	if !pod.Spec.HostNetwork {
		t.Error("Static pod is not on the host's network: it must reach the apiserver without a pod network")
	}
	if pod.Spec.PriorityClassName != "system-node-critical" {
		t.Errorf("Static pod has priority class %q, want system-node-critical, as kube-controller-manager", pod.Spec.PriorityClassName)
	}
	for k, v := range map[string]string{"component": "node-lifecycle-controller", "tier": "control-plane"} {
		if got := pod.Labels[k]; got != v {
			t.Errorf("Static pod has label %s=%q, want %q, as kubeadm labels its control-plane pods", k, got, v)
		}
	}
	if psc := pod.Spec.SecurityContext; psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("Pod securityContext.seccompProfile is not RuntimeDefault, as kubeadm gives its static pods")
	}
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("Static pod has %d containers, want 1", len(pod.Spec.Containers))
	}
	checkRefersToNoAPIObject(t, pod)
	ctr := pod.Spec.Containers[0]
	if ctr.Image != "node-lifecycle-controller:latest" {
		t.Errorf("Image %q, want the placeholder node-lifecycle-controller:latest that docs/control-plane.md tells to pin", ctr.Image)
	}
	if len(ctr.Args) > 0 || len(ctr.Command) < 2 || ctr.Command[0] != "/manager" {
		t.Fatalf("Command %q and args %q, want the flags in the command after /manager, as kubeadm writes them", ctr.Command, ctr.Args)
	}
	args := ctr.Command[1:]
	opts := parseFlags(t, args)

	le := opts.LeaderElection
	if !slices.Contains(args, "--leader-elect=true") || !le.LeaderElect {
		t.Errorf("Args %q, want --leader-elect=true: every control-plane node runs a replica", args)
	}
	// Given, not defaulted: a static pod has no namespace to fall back on.
	if !slices.Contains(args, "--leader-elect-resource-namespace="+metav1.NamespaceSystem) || le.ResourceNamespace != metav1.NamespaceSystem {
		t.Errorf("Leader election Lease in namespace %q (args %q), want --leader-elect-resource-namespace=%s given",
			le.ResourceNamespace, args, metav1.NamespaceSystem)
	}
	for _, flag := range []string{"kubeconfig", "authentication-kubeconfig", "authorization-kubeconfig"} {
		if want := "--" + flag + "=" + staticPodKubeconfig; !slices.Contains(args, want) {
			t.Errorf("Args %q, want %s: the client certificate of %s", args, want, controllerUser)
		}
	}

	checkProbesReachTheSecurePort(t, ctr, opts)
	checkPathFlagsAreMounted(t, pod, args)

	sc := ctr.SecurityContext
	if sc == nil || ptr.Deref(sc.RunAsUser, -1) != 0 {
		t.Error("Container does not run as user 0: the kubeconfig is root's, mode 0600, as kube-controller-manager's, and the image's user is 65532")
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := ctr.Resources.Requests[r]; !ok {
			t.Errorf("No %s request", r)
		}
	}
}

// checkRefersToNoAPIObject checks that pod names no ServiceAccount, Secret,
// ConfigMap or claim: the kubelet runs a static pod from its file alone, and
// the apiserver refuses a mirror pod that names one.
func checkRefersToNoAPIObject(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if pod.Spec.ServiceAccountName != "" || len(pod.Spec.ImagePullSecrets) > 0 {
		t.Errorf("Static pod names ServiceAccount %q and image pull Secrets %v", pod.Spec.ServiceAccountName, pod.Spec.ImagePullSecrets)
	}
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil || v.ConfigMap != nil || v.Projected != nil || v.PersistentVolumeClaim != nil {
			t.Errorf("Static pod volume %s comes from an API object", v.Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, e := range c.Env {
			if from := e.ValueFrom; from != nil && (from.SecretKeyRef != nil || from.ConfigMapKeyRef != nil) {
				t.Errorf("Container %s takes $%s from an API object", c.Name, e.Name)
			}
		}
		if len(c.EnvFrom) > 0 {
			t.Errorf("Container %s takes its environment from API objects", c.Name)
		}
	}
}

// checkProbesReachTheSecurePort checks that the liveness, startup and
// readiness probes get /livez, /livez and /readyz over HTTPS from the
// address and port the secure port of opts listens on, and that the
// container declares that port.
func checkProbesReachTheSecurePort(t *testing.T, ctr corev1.Container, opts cmdline.Options) {
	t.Helper()
	if !opts.Serving.Enabled() {
		t.Fatalf("The flags turn the secure port off, which serves the probes")
	}
	port := int32(opts.Serving.SecureServing.BindPort)
	bind := opts.Serving.SecureServing.BindAddress
	if port == 10257 {
		t.Errorf("--secure-port=%d is kube-controller-manager's, which runs on the same host network", port)
	}
	if len(ctr.Ports) != 1 || ctr.Ports[0].ContainerPort != port {
		t.Errorf("Container ports %v, want one, %d, the secure port", ctr.Ports, port)
	}
	for name, get := range httpsProbes(t, ctr, probeWant{"liveness", ctr.LivenessProbe, "/livez"},
		probeWant{"startup", ctr.StartupProbe, "/livez"}, probeWant{"readiness", ctr.ReadinessProbe, "/readyz"}) {
		if got := resolve(t, ctr, get.Port); got != port {
			t.Errorf("The %s probe gets port %d, but --secure-port is %d", name, got, port)
		}
		// On the host's network the kubelet probes the node's address
		// unless the probe names a host; a port bound to one address
		// answers only there.
		host := net.ParseIP(get.Host)
		if !bind.IsUnspecified() && (host == nil || !host.Equal(bind)) {
			t.Errorf("The %s probe gets host %q, but --bind-address=%s", name, get.Host, bind)
		}
	}
}

// checkPathFlagsAreMounted checks that every file or directory args name is
// under a read-only mount of a host path at the same path, so that what the
// node holds there is what the binary reads.
func checkPathFlagsAreMounted(t *testing.T, pod *corev1.Pod, args []string) {
	t.Helper()
	hostPaths := map[string]*corev1.HostPathVolumeSource{}
	for _, v := range pod.Spec.Volumes {
		hostPaths[v.Name] = v.HostPath
	}
	ctr := pod.Spec.Containers[0]
	var checked []string
	for name, value := range givenFlags(t, args) {
		if !pathFlag.MatchString(name) || value == "" {
			continue
		}
		checked = append(checked, name)
		if !path.IsAbs(value) {
			t.Errorf("--%s=%s is not an absolute path", name, value)
			continue
		}
		// The innermost mount holds the path.
		var m *corev1.VolumeMount
		for i, vm := range ctr.VolumeMounts {
			under := value == vm.MountPath || strings.HasPrefix(value, strings.TrimSuffix(vm.MountPath, "/")+"/")
			if under && (m == nil || len(vm.MountPath) > len(m.MountPath)) {
				m = &ctr.VolumeMounts[i]
			}
		}
		if m == nil {
			t.Errorf("--%s=%s is under no volume mount", name, value)
			continue
		}
		if !m.ReadOnly {
			t.Errorf("--%s=%s is under mount %s, which is not read-only", name, value, m.Name)
		}
		hp := hostPaths[m.Name]
		if hp == nil || hp.Path != m.MountPath {
			t.Errorf("--%s=%s is under mount %s, which is not the host path %s", name, value, m.Name, m.MountPath)
			continue
		}
		if value == m.MountPath && ptr.Deref(hp.Type, "") != corev1.HostPathFile {
			t.Errorf("--%s=%s is host path %s of type %q, want File: the pod must not start without it", name, value, m.Name, ptr.Deref(hp.Type, ""))
		}
	}
	for _, want := range []string{"kubeconfig", "client-ca-file", "requestheader-client-ca-file"} {
		if !slices.Contains(checked, want) {
			t.Errorf("Checked the mounts of %q only, not --%s: the pattern of path flags no longer reads the args", checked, want)
		}
	}
}

func TestStaticPodIsAcceptedByTheAPIServer(t *testing.T) {
	pod := readObjects(t, staticPodManifest)
	rbac := render(t, staticPodRBAC)
	_, c, warnings := startAPIServer(t)
	ctx := t.Context()

	// Every cluster has these; a fresh apiserver may not have made them yet.
	for _, name := range []string{metav1.NamespaceSystem, corev1.NamespaceNodeLease} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("Create namespace %s: %v", name, err)
		}
	}
	for _, obj := range rbac {
		if err := apply(ctx, c, obj.DeepCopy()); err != nil {
			t.Errorf("%s of %s refused: %v", describe(obj), staticPodRBAC, err)
		}
	}
	mirror := mirrorPodOf(t, one(t, pod, "Pod"), "control-plane-1")
	if err := c.Create(ctx, mirror, client.DryRunAll, strict); err != nil {
		t.Errorf("The static pod's mirror pod is refused: %v", err)
	}
	for _, w := range warnings.all() {
		t.Errorf("The apiserver warned: %s", w)
	}
	if t.Failed() {
		return
	}

	// The check above can fail: unknown fields are refused.
	t.Run("an unknown field is refused", func(t *testing.T) {
		bad := mirror.DeepCopy()
		if err := unstructured.SetNestedField(bad.Object, true, "spec", "hostNetworks"); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, bad, client.DryRunAll, strict); !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("Got %v, want an unknown field refusal", err)
		}
	})
}

// mirrorPodOf returns the pod the kubelet of node creates in the apiserver
// for the static pod u: named after the node, bound to it, and annotated as
// its mirror.
func mirrorPodOf(t *testing.T, u *unstructured.Unstructured, node string) *unstructured.Unstructured {
	t.Helper()
	mirror := u.DeepCopy()
	mirror.SetName(u.GetName() + "-" + node)
	annotations := mirror.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[corev1.MirrorPodAnnotationKey] = "0123456789abcdef"
	mirror.SetAnnotations(annotations)
	if err := unstructured.SetNestedField(mirror.Object, node, "spec", "nodeName"); err != nil {
		t.Fatal(err)
	}
	return mirror
}

func TestStaticPodRBACBindsEveryRoleToTheUser(t *testing.T) {
	objs := render(t, staticPodRBAC)
	if sa := find(objs, "ServiceAccount"); len(sa) > 0 {
		t.Errorf("%s renders ServiceAccount %s: a static pod runs as the User %s", staticPodRBAC, sa[0].GetName(), controllerUser)
	}
	if ns := find(objs, "Namespace"); len(ns) > 0 {
		t.Errorf("%s renders Namespace %s: it belongs in kube-system, kube-node-lease and cluster scope", staticPodRBAC, ns[0].GetName())
	}

	// The same roles as the installer's, by kind, namespace and name, with
	// the same rules: the installer's own namespace is kube-system here.
	installer := render(t, "config/default")
	installerNS := one(t, installer, "Namespace").GetName()
	got, want := rolesOf(t, objs, ""), rolesOf(t, installer, installerNS)
	for role, rules := range want {
		if _, ok := got[role]; !ok {
			t.Errorf("%s has no %s, which config/default holds", staticPodRBAC, role)
		} else if !equality.Semantic.DeepEqual(got[role], rules) {
			t.Errorf("%s of %s has other rules than config/default's (-config/default +static pods):\n%s",
				role, staticPodRBAC, diff.Diff(rules, got[role]))
		}
	}
	for role := range got {
		if _, ok := want[role]; !ok {
			t.Errorf("%s has %s, which config/default does not hold", staticPodRBAC, role)
		}
	}

	// Every binding grants its role to the User alone; every role is bound
	// but those for people.
	bound := map[string]bool{}
	for role := range got {
		if name, ok := strings.CutPrefix(role, "ClusterRole "); !ok || !slices.Contains(forPeople, name) {
			bound[role] = false
		}
	}
	for _, role := range builtInRoles {
		bound[role] = false
	}
	user := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: controllerUser}
	check := func(binding string, subjects []rbacv1.Subject, role string) {
		if len(subjects) != 1 || subjects[0] != user {
			t.Errorf("%s binds %v, want the User %s alone", binding, subjects, controllerUser)
		}
		if _, ok := bound[role]; !ok {
			t.Errorf("%s grants %s, which the controller does not hold or need", binding, role)
		}
		bound[role] = true
	}
	for _, u := range find(objs, "ClusterRoleBinding") {
		b := convert[rbacv1.ClusterRoleBinding](t, u)
		check("ClusterRoleBinding "+b.Name, b.Subjects, b.RoleRef.Kind+" "+b.RoleRef.Name)
	}
	for _, u := range find(objs, "RoleBinding") {
		b := convert[rbacv1.RoleBinding](t, u)
		role := b.RoleRef.Kind + " " + b.RoleRef.Name
		if b.RoleRef.Kind == "Role" {
			role = "Role " + b.Namespace + "/" + b.RoleRef.Name
		}
		check("RoleBinding "+b.Namespace+"/"+b.Name, b.Subjects, role)
	}
	for role, ok := range bound {
		if !ok {
			t.Errorf("%s is bound to nothing in %s", role, staticPodRBAC)
		}
	}

	// The Lease the static pods elect their leader on, and node Leases.
	lease := parseFlags(t, staticPod(t).Spec.Containers[0].Command[1:]).LeaderElection.ResourceNamespace
	if !grantsLeases(t, objs, lease, "update") {
		t.Errorf("No Role of %s grants updating Leases in %s, where the static pods keep their leader election Lease", staticPodRBAC, lease)
	}
	if !grantsLeases(t, objs, corev1.NamespaceNodeLease, "watch") {
		t.Errorf("No Role of %s grants watching Leases in %s", staticPodRBAC, corev1.NamespaceNodeLease)
	}
}

// rolesOf returns the rules of the Roles and ClusterRoles of objs by kind,
// namespace and name, with own, the namespace of the installer's own
// objects, read as kube-system.
func rolesOf(t *testing.T, objs []*unstructured.Unstructured, own string) map[string][]rbacv1.PolicyRule {
	t.Helper()
	roles := map[string][]rbacv1.PolicyRule{}
	for _, u := range find(objs, "ClusterRole") {
		roles["ClusterRole "+u.GetName()] = convert[rbacv1.ClusterRole](t, u).Rules
	}
	for _, u := range find(objs, "Role") {
		ns := u.GetNamespace()
		if own != "" && ns == own {
			ns = metav1.NamespaceSystem
		}
		roles["Role "+ns+"/"+u.GetName()] = convert[rbacv1.Role](t, u).Rules
	}
	return roles
}

func TestControlPlaneConfigsDisableExactlyTheReplacedLoops(t *testing.T) {
	values := map[string]string{
		kubeadmPatch:      kubeadmControllersValue(t),
		k3sConfig:         k3sControllersValue(t),
		controlPlanePatch: controlPlaneControllersValue(t),
	}
	value := values[kubeadmPatch]
	for file, v := range values {
		if v != value {
			t.Errorf("%s sets --controllers=%s, but %s sets %s: they must not drift apart", file, v, kubeadmPatch, value)
		}
	}

	items := strings.Split(value, ",")
	var enabled, disabled []string
	for _, item := range items {
		if name, ok := strings.CutPrefix(item, "-"); ok {
			disabled = append(disabled, name)
		} else {
			enabled = append(enabled, item)
		}
	}
	if !slices.Equal(enabled, kubeadmControllers) {
		t.Errorf("--controllers=%s enables %q, want kubeadm's own %q: * keeps the controllers on by default, "+
			"and kubeadm's bootstrap tokens need bootstrapsigner and tokencleaner", value, enabled, kubeadmControllers)
	}
	if !slices.Equal(slices.Sorted(slices.Values(disabled)), slices.Sorted(slices.Values(replacedControllers))) {
		t.Errorf("--controllers=%s disables %q, want exactly the loops this controller replaces, %q", value, disabled, replacedControllers)
	}

	// Every name is one kube-controller-manager knows: an unknown one stops it.
	known := kubeControllerManagerControllers(t)
	for _, item := range items {
		name := strings.TrimPrefix(item, "-")
		if name == "*" {
			continue
		}
		listed := name
		if canonical, ok := controllerAliases[name]; ok {
			listed = canonical
		}
		if !slices.Contains(known, listed) {
			t.Errorf("--controllers=%s names %s, which kube-controller-manager --help does not list", value, listed)
		}
	}
	for _, name := range replacedControllers {
		if !slices.Contains(known, name) {
			t.Errorf("kube-controller-manager --help lists no %s", name)
		}
	}
	if err := kubeControllerManagerAccepts(t, value); err != nil {
		t.Errorf("kube-controller-manager refuses --controllers=%s: %v", value, err)
	}
	t.Run("an unknown controller is refused", func(t *testing.T) {
		if err := kubeControllerManagerAccepts(t, "*,-no-such-controller"); err == nil {
			t.Error("kube-controller-manager accepts --controllers=*,-no-such-controller: the check above proves nothing")
		}
	})
}

func TestControlPlanePatchWritesTheStaticPod(t *testing.T) {
	kcp := readControlPlanePatch(t)
	manifest := readFile(t, staticPodManifest)
	want := path.Join(manifestsDir, path.Base(staticPodManifest))
	files := kcp.Spec.KubeadmConfigSpec.Files
	i := slices.IndexFunc(files, func(f kubeadmFile) bool { return f.Path == want })
	if i < 0 {
		t.Fatalf("%s writes no %s", controlPlanePatch, want)
	}
	f := files[i]
	if f.Content != string(manifest) {
		t.Errorf("%s writes to %s other than %s (-%s +%s):\n%s",
			controlPlanePatch, want, staticPodManifest, staticPodManifest, controlPlanePatch, diff.Diff(string(manifest), f.Content))
	}
	if len(f.Content) > maxFileContent {
		t.Errorf("%s's content is %d characters; Cluster API refuses more than %d", want, len(f.Content), maxFileContent)
	}
	if f.Owner != "root:root" || f.Permissions != "0600" {
		t.Errorf("%s is written with owner %q, permissions %q; want root:root, 0600, as kubeadm writes its manifests", want, f.Owner, f.Permissions)
	}

	// The kubeconfig the static pod reads is made on the machine, for the
	// User the RBAC binds.
	commands := strings.Join(kcp.Spec.KubeadmConfigSpec.PostKubeadmCommands, "\n")
	for _, part := range []string{"kubeadm kubeconfig user", "--client-name=" + controllerUser, "> " + staticPodKubeconfig} {
		if !strings.Contains(commands, part) {
			t.Errorf("%s's postKubeadmCommands do not hold %q:\n%s", controlPlanePatch, part, commands)
		}
	}
}

func TestControlPlaneDocShowsEveryFile(t *testing.T) {
	doc := string(readFile(t, controlPlaneDoc))
	for _, file := range []string{
		staticPodManifest,
		filepath.Join(staticPodRBAC, "kustomization.yaml"),
		kubeadmPatch,
		k3sConfig,
		controlPlanePatch,
	} {
		block := "```yaml\n" + string(readFile(t, file)) + "```\n"
		if !strings.Contains(doc, block) {
			t.Errorf("%s does not show %s as it is, in a yaml block: copy the file's content there", controlPlaneDoc, file)
		}
	}
}

// staticPod returns the static pod of staticPodManifest, refusing fields a
// Pod lacks.
func staticPod(t *testing.T) *corev1.Pod {
	t.Helper()
	return convert[corev1.Pod](t, one(t, readObjects(t, staticPodManifest), "Pod"))
}

// readFile returns the content of file, relative to the module root.
func readFile(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readObjects returns the objects of file, relative to the module root.
func readObjects(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := harness.DecodeObjects(readFile(t, file))
	if err != nil {
		t.Fatalf("Decode %s: %v", file, err)
	}
	return objs
}

// readStrict decodes file into v, refusing fields v lacks.
func readStrict(t *testing.T, file string, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(readFile(t, file), v); err != nil {
		t.Fatalf("Decode %s: %v", file, err)
	}
}

func kubeadmControllersValue(t *testing.T) string {
	t.Helper()
	var cfg clusterConfiguration
	readStrict(t, kubeadmPatch, &cfg)
	if cfg.APIVersion != "kubeadm.k8s.io/v1beta4" || cfg.Kind != "ClusterConfiguration" {
		t.Errorf("%s is a %s %s, want a kubeadm.k8s.io/v1beta4 ClusterConfiguration", kubeadmPatch, cfg.APIVersion, cfg.Kind)
	}
	return controllersArg(t, kubeadmPatch, cfg.ControllerManager.ExtraArgs)
}

func controlPlaneControllersValue(t *testing.T) string {
	t.Helper()
	kcp := readControlPlanePatch(t)
	cfg := kcp.Spec.KubeadmConfigSpec.ClusterConfiguration
	if cfg.APIVersion != "" || cfg.Kind != "" {
		t.Errorf("%s's clusterConfiguration has apiVersion %q and kind %q, which Cluster API sets itself", controlPlanePatch, cfg.APIVersion, cfg.Kind)
	}
	return controllersArg(t, controlPlanePatch, cfg.ControllerManager.ExtraArgs)
}

func readControlPlanePatch(t *testing.T) *kubeadmControlPlane {
	t.Helper()
	var kcp kubeadmControlPlane
	readStrict(t, controlPlanePatch, &kcp)
	if kcp.APIVersion != "controlplane.cluster.x-k8s.io/v1beta2" || kcp.Kind != "KubeadmControlPlane" {
		t.Errorf("%s is a %s %s, want a controlplane.cluster.x-k8s.io/v1beta2 KubeadmControlPlane", controlPlanePatch, kcp.APIVersion, kcp.Kind)
	}
	return &kcp
}

// controllersArg returns the value of the one extraArgs entry of file named
// controllers.
func controllersArg(t *testing.T, file string, args []kubeadmArg) string {
	t.Helper()
	var values []string
	for _, a := range args {
		if a.Name == "controllers" {
			values = append(values, a.Value)
		}
	}
	if len(values) != 1 {
		t.Fatalf("%s has %d extraArgs named controllers, want 1", file, len(values))
	}
	return values[0]
}

func k3sControllersValue(t *testing.T) string {
	t.Helper()
	var cfg k3sConfiguration
	readStrict(t, k3sConfig, &cfg)
	var values []string
	for _, arg := range cfg.KubeControllerManagerArg {
		if v, ok := strings.CutPrefix(arg, "controllers="); ok {
			values = append(values, v)
		}
	}
	if len(values) != 1 {
		t.Fatalf("%s has %d kube-controller-manager-arg entries controllers=, want 1", k3sConfig, len(values))
	}
	return values[0]
}

// kubeControllerManagerControllers returns the controllers that the
// --controllers text of kube-controller-manager --help lists.
func kubeControllerManagerControllers(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(kubeControllerManager); err != nil {
		t.Fatalf("No kube-controller-manager to read the controllers of: run `make envtest-assets` (`make test` does): %v", err)
	}
	help, err := exec.CommandContext(t.Context(), kubeControllerManager, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("kube-controller-manager --help: %v\n%s", err, help)
	}
	m := kcmControllerList.FindSubmatch(help)
	if m == nil {
		t.Fatalf("kube-controller-manager --help has no list of controllers under --controllers; the pattern no longer reads it:\n%s", help)
	}
	var all []string
	for _, name := range strings.Split(string(m[1]), ",") {
		if name = strings.TrimSpace(name); name != "" {
			all = append(all, name)
		}
	}
	if len(all) < 20 || !slices.Contains(all, "node-lifecycle-controller") {
		t.Fatalf("Read %q as kube-controller-manager's controllers; the pattern no longer reads its --help", all)
	}
	return all
}

// kubeControllerManagerAccepts runs kube-controller-manager with
// --controllers=value and a kubeconfig that does not exist: it checks its
// flags, the controllers' names and aliases among them, then stops on the
// kubeconfig. It returns why it refused the flags, or nil if it got as far
// as the kubeconfig.
func kubeControllerManagerAccepts(t *testing.T, value string) error {
	t.Helper()
	if _, err := os.Stat(kubeControllerManager); err != nil {
		t.Fatalf("No kube-controller-manager to check --controllers with: run `make envtest-assets` (`make test` does): %v", err)
	}
	binary, err := filepath.Abs(kubeControllerManager)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	absent := filepath.Join(dir, "absent.conf")
	cmd := exec.CommandContext(t.Context(), binary,
		"--controllers="+value, "--kubeconfig="+absent, "--secure-port=0", "--leader-elect=false")
	cmd.Dir = dir
	cmd.Env = []string{}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("kube-controller-manager ran with a kubeconfig that does not exist:\n%s", out)
	}
	if bytes.Contains(out, []byte("not in the list of known controllers")) {
		return fmt.Errorf("%s", bytes.TrimSpace(out))
	}
	if !bytes.Contains(out, []byte(absent)) {
		t.Fatalf("kube-controller-manager stopped (%v) before it read its kubeconfig, so --controllers=%s was not judged:\n%s", err, value, out)
	}
	return nil
}

// givenFlags parses args with the binary's flag set, as parseFlags does, and
// returns the flags they give, by name, with their values.
func givenFlags(t *testing.T, args []string) map[string]string {
	t.Helper()
	opts := cmdline.Default()
	fs := pflag.NewFlagSet("node-lifecycle-controller", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	opts.AddFlags(fs)
	logFlags := goflag.NewFlagSet("logging", goflag.ContinueOnError)
	(&zap.Options{}).BindFlags(logFlags)
	fs.AddGoFlagSet(logFlags)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("The binary refuses the args %q: %v", args, err)
	}
	given := map[string]string{}
	fs.Visit(func(f *pflag.Flag) { given[f.Name] = f.Value.String() })
	return given
}
