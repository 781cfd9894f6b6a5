package docs

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/test/harness"
)

// makeBuildInstaller runs `make build-installer` in the workspace, which
// writes dist/ there. Not its prerequisites manifests and generate, which
// need the Go source and rewrite config/ from it (`make verify` fails when
// that would change anything), nor kustomize, which `make test` built.
func makeBuildInstaller(t *testing.T, w *workspace, c command) {
	w.mustShell(t, "", c.text+" -o manifests -o generate -o kustomize")
	img := makeVar(t, c.text, "IMG")
	var images []string
	for _, obj := range installerObjects(t, w) {
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		for _, ctr := range containers {
			image, _ := ctr.(map[string]any)["image"].(string)
			images = append(images, image)
		}
	}
	if !slices.Equal(images, []string{img}) {
		t.Errorf("dist/install.yaml runs the images %v, want %s", images, img)
	}
}

// installerObjects reads the dist/install.yaml `make build-installer`
// wrote.
func installerObjects(t *testing.T, w *workspace) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.dir, "dist", "install.yaml"))
	if err != nil {
		t.Fatalf("No installer: %v", err)
	}
	objs, err := harness.DecodeObjects(data)
	if err != nil {
		t.Fatalf("dist/install.yaml: %v", err)
	}
	return objs
}

// printsAsShown runs the command in the workspace and compares what it
// prints with the doc's output, line for line.
func printsAsShown(t *testing.T, w *workspace, c command) {
	r := w.mustShell(t, "", c.text)
	if got, want := strings.TrimRight(r.stdout, "\n"), strings.Join(c.output, "\n"); got != want {
		t.Errorf("%s printed\n%s\nthe doc shows\n%s", c.text, got, want)
	}
}

// applyInstaller does what `kubectl apply -f <file>` does to a cluster with
// none of the file's objects: applies each, in the file's order, and they
// are there. There is no kubectl among the pinned tools; what could fail,
// the apiserver's admission of each object, is the same from client-go.
func applyInstaller(t *testing.T, w *workspace, c command) {
	words := shellWords(t, c.text)
	if len(words) != 4 || words[1] != "apply" || words[2] != "-f" {
		t.Fatalf("`%s`: the test runs `kubectl apply -f <file>` and no other form", c.text)
	}
	cl := w.controlPlane(t)
	objs := installerObjects(t, w)
	for _, obj := range objs {
		if err := cl.Apply(t.Context(), client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kubectl"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
	}
	for _, obj := range objs {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(obj.GroupVersionKind())
		if err := cl.Get(t.Context(), client.ObjectKeyFromObject(obj), got); err != nil {
			t.Errorf("%s %s: %v", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
	}
}

// makeHelmLint runs `make helm-lint` in the workspace, with the helm
// `make test` built; the doc shows the last of what it prints.
func makeHelmLint(t *testing.T, w *workspace, c command) {
	r := w.mustShell(t, "", c.text+" -o helm")
	lines := strings.Split(strings.TrimRight(r.stdout, "\n"), "\n")
	if got := lines[max(0, len(lines)-len(c.output)):]; !slices.Equal(got, c.output) {
		t.Errorf("%s printed\n%s\nwhich does not end as the doc shows:\n%s", c.text, r.stdout, strings.Join(c.output, "\n"))
	}
}

// helmInstall runs `helm install` against the control plane, and the
// Deployment runs the image and the flags the command sets. Helm takes over
// no object that another tool created: the kustomize installer's go
// first, but for the Namespace, which has no controller here to finish
// deleting it, and which --create-namespace takes as it is.
func helmInstall(t *testing.T, w *workspace, c command) {
	cl := w.controlPlane(t)
	removeInstaller(t, w, cl)
	w.mustShell(t, "", c.text)

	var namespace, repository, tag string
	var args []string
	words := shellWords(t, c.text)
	for i := 0; i+1 < len(words); i++ {
		v := words[i+1]
		switch {
		case words[i] == "--namespace":
			namespace = v
		case words[i] == "--set" && strings.HasPrefix(v, "controllerManager.container.image.repository="):
			_, repository, _ = strings.Cut(v, "=")
		case words[i] == "--set" && strings.HasPrefix(v, "controllerManager.container.image.tag="):
			_, tag, _ = strings.Cut(v, "=")
		case words[i] == "--set-json" && strings.HasPrefix(v, "controllerManager.container.args="):
			_, list, _ := strings.Cut(v, "=")
			if err := json.Unmarshal([]byte(list), &args); err != nil {
				t.Fatalf("--set-json %s: %v", v, err)
			}
		}
	}
	deps := &appsv1.DeploymentList{}
	if err := cl.List(t.Context(), deps, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 1 || len(deps.Items[0].Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("helm install left %d Deployments in %s, want one with one container", len(deps.Items), namespace)
	}
	ctr := deps.Items[0].Spec.Template.Spec.Containers[0]
	if want := repository + ":" + tag; ctr.Image != want {
		t.Errorf("The Deployment runs %s, want %s", ctr.Image, want)
	}
	for _, a := range args {
		if !slices.Contains(ctr.Args, a) {
			t.Errorf("The Deployment's args %q lack %s, which the command sets", ctr.Args, a)
		}
	}
}

// removeInstaller deletes the objects of dist/install.yaml, when `kubectl
// apply` created them, but the Namespace, and waits until they are gone.
func removeInstaller(t *testing.T, w *workspace, cl client.Client) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(w.dir, "dist", "install.yaml")); err != nil {
		return
	}
	objs := installerObjects(t, w)
	var gone []*unstructured.Unstructured
	for _, obj := range slices.Backward(objs) {
		if obj.GetKind() == "Namespace" {
			continue
		}
		if err := cl.Delete(t.Context(), obj); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("delete %s %s: %v", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
		gone = append(gone, obj)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, obj := range gone {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), got); !apierrors.IsNotFound(err) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("The kustomize installer's objects are not gone: %v", err)
	}
}
