package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/options"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/status"
)

// statusTimeout bounds the reads of the status subcommand.
const statusTimeout = time.Minute

// runStatus is the status subcommand: why nodes are not ready, and when
// their pods will go.
func runStatus(args []string, out io.Writer) error {
	opts := options.Default()
	fs := pflag.NewFlagSet("node-lifecycle-controller status", pflag.ContinueOnError)
	fs.SortFlags = false
	output := fs.StringP("output", "o", "text", "Output format: text or json.")
	opts.AddFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage: node-lifecycle-controller status [flags]\n\n"+
			"Shows, per zone, its state and counts, and for each node that is not Ready or carries\n"+
			"a node lifecycle taint: its verdict and why, its heartbeat age, its taints, and for each\n"+
			"of its pods the time left before eviction and what decides it (a toleration,\n"+
			"--pod-eviction-timeout, or a hold: partition freeze, every zone down, a policy's breaker,\n"+
			"pause or halted zone). Pass the timing flags the controller runs with: nodes no\n"+
			"NodeHealthPolicy selects follow them.\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return configError{err}
	}
	if *output != "text" && *output != "json" {
		return configError{fmt.Errorf("invalid --output=%s: must be text or json", *output)}
	}
	if fs.NArg() > 0 {
		return configError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	if err := opts.Validate(); err != nil {
		return configError{err}
	}
	cfg, err := restConfig(opts.Kubeconfig)
	if err != nil {
		return configError{err}
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), statusTimeout)
	defer cancel()
	in, err := status.Gather(ctx, c, controllerOptions(opts).PoolDefaults(), time.Now())
	if err != nil {
		return err
	}
	report := status.Build(in)
	if *output == "json" {
		return status.WriteJSON(out, report)
	}
	return status.WriteText(out, report)
}
