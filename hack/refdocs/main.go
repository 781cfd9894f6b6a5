// Command refdocs writes the reference pages of docs/reference from the
// code (package internal/refdocs); make docs runs it, and make verify fails
// when what it writes differs from what is committed.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/buildinfo"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/cmdline"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/nodehealth"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/podscope"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/probes"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/refdocs"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/shadow"
)

func main() {
	dir := flag.String("dir", filepath.Join("docs", "reference"), "the directory the pages are written to")
	crd := flag.String("crd", filepath.Join("config", "crd", "bases", "health.nodelifecycle.io_nodehealthpolicies.yaml"),
		"the NodeHealthPolicy CustomResourceDefinition")
	flag.Parse()
	if err := run(*dir, *crd); err != nil {
		fmt.Fprintln(os.Stderr, "refdocs:", err)
		os.Exit(1)
	}
}

func run(dir, crd string) error {
	fs := pflag.NewFlagSet("node-lifecycle-controller", pflag.ContinueOnError)
	fs.SortFlags = false
	o := cmdline.Default()
	o.AddFlags(fs)
	metrics, err := refdocs.Metrics(slices.Concat(nodehealth.Metrics(), podeviction.Metrics(), podscope.Metrics(),
		shadow.Metrics(), probes.Metrics(), buildinfo.Metrics()))
	if err != nil {
		return err
	}
	schema, err := os.ReadFile(crd)
	if err != nil {
		return fmt.Errorf("read %s: %w", crd, err)
	}
	api, err := refdocs.API(schema)
	if err != nil {
		return err
	}
	pages := map[string]string{
		"flags.md":   refdocs.Flags(fs),
		"metrics.md": metrics,
		"events.md":  refdocs.Events(controllers.Events()),
		"api.md":     api,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for name, text := range pages {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}
