// Command fleet runs simulated nodes against a cluster until interrupted:
// each registers its Node, renews its Lease and reports its status as a
// kubelet would. Use it for demos and scale tests:
//
//	go run ./pkg/fleet/cmd/fleet --kubeconfig K --nodes 1000 --zones 3
package main

import (
	"errors"
	goflag "flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/nodelifecycle/node-lifecycle-controller/pkg/fleet"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "fleet: %v\n", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	var kubeconfig string
	opts := fleet.Options{}
	fs := pflag.NewFlagSet("fleet", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "Path to the kubeconfig of the cluster to join.")
	fs.IntVar(&opts.Nodes, "nodes", 10, "Number of simulated nodes.")
	fs.IntVar(&opts.Zones, "zones", 3, "Number of zones the nodes are spread over.")
	fs.StringVar(&opts.Region, "region", "fleet", "Region of every node.")
	fs.StringVar(&opts.NamePrefix, "name-prefix", "fleet-", "Prefix of the node names.")
	fs.IntVar(&opts.PodsPerNode, "pods-per-node", 0, "Running pods bound to each node.")
	fs.IntVar(&opts.ImagesPerNode, "images-per-node", 0, "Container images each node's status lists, as a kubelet lists up to 50 by default; 0 lists none.")
	fs.DurationVar(&opts.PodStatusEvery, "pod-status-every", 0, "How often each pod's status is written, as a kubelet reports a container restart; 0 writes none.")
	fs.Int32Var(&opts.LeaseDurationSeconds, "node-lease-duration-seconds", 40, "Lease duration written to each node's Lease.")
	fs.Float64Var(&opts.RenewIntervalFraction, "lease-renew-interval-fraction", 0.25, "Share of the lease duration between renewals.")
	fs.DurationVar(&opts.NodeStatusUpdateFrequency, "node-status-update-frequency", 10*time.Second, "How often each node computes its status.")
	fs.DurationVar(&opts.NodeStatusReportFrequency, "node-status-report-frequency", 5*time.Minute, "Interval between reports of an unchanged status; a report of a change shifts the next one at random by up to half of it, as the kubelet does.")
	zapOpts := zap.Options{}
	logFlags := goflag.NewFlagSet("logging", goflag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	fs.AddGoFlagSet(logFlags)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if kubeconfig == "" {
		return errors.New("--kubeconfig (or $KUBECONFIG) is required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("invalid --kubeconfig=%s: %w", kubeconfig, err)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	ctx := ctrl.LoggerInto(ctrl.SetupSignalHandler(), ctrl.Log.WithName("fleet"))
	start := time.Now()
	f, err := fleet.Start(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Printf("fleet: %d nodes in %d zones registered in %v; running until interrupted\n",
		len(f.Nodes()), len(f.Zones()), time.Since(start).Round(time.Millisecond))
	<-ctx.Done()
	return nil
}
