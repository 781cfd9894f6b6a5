package docs

import (
	"fmt"
	"path"
	"strings"
	"testing"
)

// docsUnderTest are the docs whose commands are run, in the order they are
// run: a command that two docs show runs where it first appears.
var docsUnderTest = []string{"docs/getting-started.md", "docs/operating.md"}

// controllerCommand is how both docs run the controller.
const controllerCommand = "bin/node-lifecycle-controller --kubeconfig ~/.kube/config --leader-elect=false"

// step is what the test does with a command the docs show: run it, as
// written or by the equivalent its run function says, or leave it, for the
// reason notRun gives.
type step struct {
	run func(t *testing.T, w *workspace, c command)
	// checksOutput is true when run compares what the command prints with
	// the output the doc shows below it.
	checksOutput bool
	notRun       string
}

// steps holds every command of the docs, by its exact text. A command that
// is not here fails the test, and so does an entry no doc shows any more.
var steps = map[string]step{
	"make demo": {notRun: "takes minutes (a 60-node fleet through six acts); the demo checks each act against its apiserver " +
		"itself, and test/demo checks the flags it runs the controller with against getting-started.md"},
	"make test":       {notRun: "it is what runs this test"},
	"make build":      {run: makeBuild},
	controllerCommand: {run: runController},

	"make image IMG=registry.example.com/node-lifecycle-controller:v0.1.0": {run: makeImage},
	`skopeo inspect oci-archive:bin/node-lifecycle-controller.oci.tar | grep -A3 '"Architecture"'`: {
		run: inspectImage, checksOutput: true},
	"skopeo copy oci-archive:bin/node-lifecycle-controller.oci.tar docker://registry.example.com/node-lifecycle-controller:v0.1.0": {
		notRun: "pushes the image to a registry, and there is none here"},

	"make build-installer IMG=registry.example.com/node-lifecycle-controller:v0.1.0": {run: makeBuildInstaller},
	"grep '^kind:' dist/install.yaml | sort | uniq -c":                               {run: printsAsShown, checksOutput: true},
	"kubectl apply -f dist/install.yaml":                                             {run: applyInstaller},

	"make helm-lint": {run: makeHelmLint, checksOutput: true},
	`bin/helm template node-lifecycle dist/chart --namespace node-lifecycle-system \
    --set controllerManager.container.image.repository=registry.example.com/node-lifecycle-controller \
    --set controllerManager.container.image.tag=v0.1.0 | grep '^kind:' | sort | uniq -c`: {run: printsAsShown, checksOutput: true},
	`helm install node-lifecycle dist/chart --namespace node-lifecycle-system --create-namespace \
    --set controllerManager.container.image.repository=registry.example.com/node-lifecycle-controller \
    --set controllerManager.container.image.tag=v0.1.0 \
    --set-json 'controllerManager.container.args=["--leader-elect=true","--node-monitor-grace-period=40s"]'`: {run: helmInstall},

	"bin/node-lifecycle-controller --node-monitor-grace-period=5m --controllers='*,-taint-eviction-controller'": {
		run: refusedAsShown, checksOutput: true},
	"kubectl get events -A --field-selector source=node-controller": {run: getEvents(nodeControllerEvents)},
	"kubectl get events -A --field-selector source=taint-eviction-controller,reason=TaintManagerEviction": {
		run: getEvents(evictionEvents)},
	"bin/node-lifecycle-controller status --kubeconfig ~/.kube/config": {run: status, checksOutput: true},
}

// TestTheDocsCommandsRun runs every command of the docs' shell code blocks
// that steps runs, in the docs' order, each in a subtest named after it; the
// others are skipped, with why.
func TestTheDocsCommandsRun(t *testing.T) {
	var cmds []command
	for _, doc := range docsUnderTest {
		cmds = append(cmds, commandsOf(doc, readDoc(t, doc))...)
	}
	if len(cmds) < len(steps)/2 {
		t.Fatalf("Read %d commands from %v: the docs' code blocks are no longer read", len(cmds), docsUnderTest)
	}
	shown := map[string]bool{}
	var order []command
	for _, c := range cmds {
		s, ok := steps[c.text]
		switch {
		case !ok:
			t.Errorf("%s:%d: `%s` is neither run by this test nor listed as not run, with why: add it to steps", c.doc, c.line, c.text)
		case len(c.output) > 0 && s.run != nil && !s.checksOutput:
			t.Errorf("%s:%d: the doc shows what `%s` prints, and the test does not compare it", c.doc, c.line, c.text)
		}
		if !shown[c.text] {
			shown[c.text] = true
			order = append(order, c)
		}
	}
	for text := range steps {
		if !shown[text] {
			t.Errorf("steps lists `%s`, which neither doc shows any more", text)
		}
	}

	w := newWorkspace(t)
	w.demoFlags = demoFlags(t, readDoc(t, docsUnderTest[0]))
	for _, c := range order {
		s, ok := steps[c.text]
		if !ok {
			continue
		}
		// Named where the command is: a name with a slash in it, as most
		// commands have, would not select it with go test -run.
		t.Run(fmt.Sprintf("%s:%d", path.Base(c.doc), c.line), func(t *testing.T) {
			if s.run == nil {
				t.Skipf("`%s` is not run: %s", c.text, s.notRun)
			}
			t.Logf("`%s`", c.text)
			s.run(t, w, c)
		})
	}
	t.Run("the flags the docs name are the binary's", func(t *testing.T) {
		var flags []string
		for _, doc := range docsUnderTest {
			flags = append(flags, inlineFlags(readDoc(t, doc))...)
		}
		checkFlags(t, w, flags)
	})
}

// demoFlags returns the flags getting-started.md says the demo runs the
// controller with: its text block of flags alone.
func demoFlags(t *testing.T, doc string) []string {
	t.Helper()
	for _, b := range blocksOf(doc) {
		fields := strings.Fields(strings.Join(b.lines, " "))
		allFlags := len(fields) > 0
		for _, f := range fields {
			allFlags = allFlags && strings.HasPrefix(f, "--")
		}
		if b.lang == "text" && allFlags {
			return fields
		}
	}
	t.Errorf("getting-started.md has no text block of the flags the demo runs the controller with")
	return nil
}
