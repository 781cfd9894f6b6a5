package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fixture writes a small repository into a temporary directory and returns
// its root.
func fixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range map[string]string{
		"main.go":                                       "package main\n\nfunc main() {}\n",
		"internal/health/tracker.go":                    "package health\n\ntype Tracker struct{}\n\nfunc (t *Tracker) HeardLease() {}\n\ntype Pulse struct{}\n\nfunc PulseOf() Pulse { return Pulse{} }\n",
		"internal/health/tracker_test.go":               "package health\n\nfunc (t *Tracker) Gone() {}\n",
		"internal/safety/act/act.go":                    "package act\n\ntype Executor[T any] struct{}\n\nfunc (e *Executor[T]) MarkPods() {}\n",
		"internal/sight/sight.go":                       "package sight\n\ntype Sight interface{ Blind() bool }\n",
		"internal/controllers/nodehealth/wake.go":       "package nodehealth\n",
		"internal/controllers/nodehealth/testdata/x.go": "package broken(\n",
	} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// doc is a Markdown map whose lines 9, 14 and 19 each case may fill.
const doc = "# Contributing\n" +
	"\n" +
	"## Layout\n" +
	"\n" +
	"| Path | What it holds |\n" +
	"|---|---|\n" +
	"| `internal/controllers/` | the reconcilers `nodehealth` |\n" +
	"| `internal/health`, `internal/sight` | heartbeats; `internal/safety/act` carries decisions out; `main.go` |\n" +
	"%LAYOUT%\n" +
	"\n" +
	"## A heartbeat's path through the files\n" +
	"\n" +
	"`nodehealth/wake.go`, `internal/health/tracker.go`, `act.Executor.MarkPods`, `Tracker.HeardLease`\n" +
	"%HEARTBEAT%\n" +
	"\n" +
	"## Vocabulary\n" +
	"\n" +
	"- **pulse**: `health.Pulse`, `health.PulseOf(node, lease)`, `Sight.Blind`; not ours: `corev1.Node`, `make test`, `Other.Thing`, `health.unexported`\n" +
	"%VOCABULARY%\n" +
	"```\n" +
	"`Tracker.Fenced` and `fenced.go` in a fence are no map\n" +
	"```\n"

var pkgs = []string{"internal/controllers", "internal/controllers/nodehealth", "internal/health", "internal/safety/act", "internal/sight"}

func TestCheckMarkdownFindsStaleEntries(t *testing.T) {
	root := fixture(t)
	idx, err := loadIndex(root, codeTrees)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                     string
		layout, heartbeat, vocab string
		morePkgs                 []string
		replace                  [2]string
		want                     []string
	}{
		{name: "every entry holds"},
		{
			name:     "a package the table does not list",
			morePkgs: []string{"internal/owners"},
			want:     []string{"d.md:3: package internal/owners is not in the Layout table: add a row for it"},
		},
		{
			name:     "a reconciler its parent's row does not name",
			morePkgs: []string{"internal/controllers/podeviction"},
			want:     []string{"d.md:3: package internal/controllers/podeviction is not in the Layout table: add a row for it"},
		},
		{
			name:   "a row naming a package that is gone",
			layout: "| `internal/old` | what was |",
			want:   []string{"d.md:9: internal/old no longer exists"},
		},
		{
			name:      "a file that is gone",
			layout:    "| `gone.go` | x |",
			heartbeat: "`nodehealth/gone.go` hears",
			want: []string{
				"d.md:9: gone.go: no such file (nor under internal/ or internal/controllers/)",
				"d.md:14: nodehealth/gone.go: no such file (nor under internal/ or internal/controllers/)",
			},
		},
		{
			name:  "a method that is gone, though a test file declares it",
			vocab: "- **gone**: `Tracker.Gone`",
			want:  []string{"d.md:19: Tracker.Gone: no method Gone on any type Tracker of the module"},
		},
		{
			name:      "a package's method, type or function that is gone",
			heartbeat: "`act.Executor.Evict`, `act.Model.Look`, `health.Judge(node)`",
			want: []string{
				"d.md:14: act.Executor.Evict: no method Evict on act.Executor",
				"d.md:14: act.Model.Look: no type Model in package act",
				"d.md:14: health.Judge: no function or type Judge in package health",
			},
		},
		{
			name:    "a section that is gone",
			replace: [2]string{"## Vocabulary", "## Words"},
			want:    []string{`d.md:1: no section "Vocabulary" (## Vocabulary): docmaps checks it`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.NewReplacer("%LAYOUT%", tc.layout, "%HEARTBEAT%", tc.heartbeat, "%VOCABULARY%", tc.vocab).Replace(doc)
			if tc.replace[0] != "" {
				text = strings.Replace(text, tc.replace[0], tc.replace[1], 1)
			}
			got := checkMarkdown(root, "d.md", text, append(slices.Clone(pkgs), tc.morePkgs...), idx)
			if !slices.Equal(got, tc.want) {
				t.Errorf("checkMarkdown found\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestCheckGoDocFindsFilesThatAreGone(t *testing.T) {
	root := fixture(t)
	for _, tc := range []struct {
		name, file, text string
		want             []string
	}{
		{
			name: "every file exists",
			file: "internal/controllers/doc.go",
			text: "// A heartbeat reaches nodehealth/wake.go, which records it\n// (internal/health/tracker.go); see go.dev or x.go.dev/y.go/z.\npackage controllers\n",
		},
		{
			name: "own directory, parent, root",
			file: "internal/controllers/nodehealth/doc.go",
			text: "// Files: wake.go schedules; nodehealth/wake.go too; main.go.\npackage nodehealth\n",
		},
		{
			name: "a file that is gone",
			file: "internal/controllers/nodehealth/doc.go",
			text: "// Files: wake.go schedules;\n// heartbeats.go hears, and internal/health/gone.go.\npackage nodehealth\n\nvar notAComment = \"gone.go\"\n",
			want: []string{
				"internal/controllers/nodehealth/doc.go:2: heartbeats.go: no such file (in internal/controllers/nodehealth/, internal/controllers/ or the repository's root)",
				"internal/controllers/nodehealth/doc.go:2: internal/health/gone.go: no such file (in internal/controllers/nodehealth/, internal/controllers/ or the repository's root)",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := checkGoDoc(root, tc.file, tc.text)
			if !slices.Equal(got, tc.want) {
				t.Errorf("checkGoDoc found\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
