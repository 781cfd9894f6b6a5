package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nodelifecycle/node-lifecycle-controller/api/v1alpha1"
	"github.com/nodelifecycle/node-lifecycle-controller/controllers"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/controllers/podeviction"
	"github.com/nodelifecycle/node-lifecycle-controller/internal/safety"
	"github.com/nodelifecycle/node-lifecycle-controller/pkg/options"
)

// Short timings, so that a deadline passes in seconds.
const (
	grace         = 2 * time.Second
	startupGrace  = 3 * time.Second
	monitorPeriod = time.Second
	heartbeat     = 300 * time.Millisecond
	evictTimeout  = 4 * time.Second
	evictionRate  = 2 // NoExecute taints per second in a healthy zone
)

var (
	cfg     *rest.Config
	k8s     client.Client
	testEnv *envtest.Environment
	certDir string
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	// Every spec in a random order, not only the top-level containers: a
	// spec that passes only after another is a bug this finds. The seed is
	// printed at the top of the run; --seed (ginkgo) or -ginkgo.seed (go
	// test) repeats an order.
	suite, reporter := GinkgoConfiguration()
	suite.RandomizeAllSpecs = true
	RunSpecs(t, "e2e suite", suite, reporter)
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(10 * time.Second)
	SetDefaultEventuallyPollingInterval(25 * time.Millisecond)

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		Fail("KUBEBUILDER_ASSETS is not set: run the suite with `make test`, which builds kube-apiserver and etcd into bin/")
	}
	_, err := os.Stat(filepath.Join(assets, "kube-apiserver"))
	Expect(err).NotTo(HaveOccurred(), "kube-apiserver missing from KUBEBUILDER_ASSETS; run `make envtest-assets`")

	testEnv = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	// Without DefaultTolerationSeconds, a pod created without tolerations
	// keeps none, so the suite can reach --pod-eviction-timeout; pods that
	// carry the 300s tolerations that admission would add behave as their
	// tolerations say either way.
	testEnv.ControlPlane.GetAPIServer().Configure().
		Set("disable-admission-plugins", "ServiceAccount", "DefaultTolerationSeconds")
	// The outage specs stop and start the apiserver. A certificate
	// directory of the suite's own survives Stop, so the restarted
	// apiserver serves with the CA that cfg already trusts; envtest's own
	// would be deleted and made anew.
	certDir, err = os.MkdirTemp("", "e2e-apiserver-certs-")
	Expect(err).NotTo(HaveOccurred())
	testEnv.ControlPlane.GetAPIServer().CertDir = certDir
	cfg, err = testEnv.Start()
	Expect(err).NotTo(HaveOccurred())
	Expect(v1alpha1.AddToScheme(clientgoscheme.Scheme)).To(Succeed())
	k8s, err = client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	Expect(err).NotTo(HaveOccurred())
})

// Each spec starts from a cluster that keeps no partition freeze and no
// apiserver outage: what a controller of an earlier spec kept on the
// kube-node-lease Namespace when it stopped would be carried on by the next,
// as a new leader carries it on.
var _ = BeforeEach(func() {
	ns := &corev1.Namespace{}
	err := k8s.Get(context.Background(), client.ObjectKey{Name: corev1.NamespaceNodeLease}, ns)
	if apierrors.IsNotFound(err) {
		return
	}
	Expect(err).NotTo(HaveOccurred())
	_, freeze := ns.Annotations[safety.AnnotationFreeze]
	_, outages := ns.Annotations[safety.AnnotationUnwatched]
	if !freeze && !outages {
		return
	}
	forget := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null,%q:null}}}`, safety.AnnotationFreeze, safety.AnnotationUnwatched)
	Expect(k8s.Patch(context.Background(), ns, client.RawPatch(types.MergePatchType, forget))).To(Succeed())
})

var _ = AfterSuite(func() {
	for what, h := range map[string]*dto.Histogram{"deadline-to-mark": markDelays(), "deadline-to-eviction": evictionDelays()} {
		if h.GetSampleCount() > 0 {
			GinkgoWriter.Printf("%s delay over %d samples: mean %.1fms, all within %vs\n",
				what, h.GetSampleCount(), 1000*h.GetSampleSum()/float64(h.GetSampleCount()), maxDelayBound(h))
		}
	}
	if testEnv != nil {
		Expect(testEnv.Stop()).To(Succeed())
	}
	if certDir != "" {
		Expect(os.RemoveAll(certDir)).To(Succeed())
	}
	removeControllerBinary()
})

// startController runs the controllers in a manager of their own until the
// spec ends, or until the returned function is called. Options start from
// the suite's short timings; tune changes them further.
func startController(tune ...func(*options.Options)) (stop func()) {
	_, stop = runManager(nil, tune...)
	return stop
}

// runManager runs the controllers with the suite's short timings, changed
// by tune, in a manager of their own whose options mgrOpts may change. The
// returned stop cancels it and waits for it to end; it runs at the end of
// the spec too.
func runManager(mgrOpts func(*ctrl.Options), tune ...func(*options.Options)) (ctrl.Manager, func()) {
	return runManagerOn(cfg, mgrOpts, tune...)
}

// runManagerOn is runManager with the manager reaching the apiserver by
// restCfg.
func runManagerOn(restCfg *rest.Config, mgrOpts func(*ctrl.Options), tune ...func(*options.Options)) (ctrl.Manager, func()) {
	return runManagerBuilt(func(restCfg *rest.Config, o ctrl.Options, opts options.Options) (ctrl.Manager, error) {
		return controllers.NewManager(restCfg, o, opts)
	}, restCfg, mgrOpts, tune...)
}

// startControllerSetUpElsewhere is startController with the controllers
// added by controllers.SetupWithManager to a manager the suite builds, as
// an operator adds them to its own.
func startControllerSetUpElsewhere() {
	runManagerBuilt(func(restCfg *rest.Config, o ctrl.Options, opts options.Options) (ctrl.Manager, error) {
		o.Cache = controllers.CacheOptions()
		mgr, err := ctrl.NewManager(restCfg, o)
		if err != nil {
			return nil, err
		}
		return mgr, controllers.SetupWithManager(mgr, opts)
	}, cfg, nil)
}

// runManagerBuilt is runManagerOn with the manager and its controllers made
// by build.
func runManagerBuilt(build func(*rest.Config, ctrl.Options, options.Options) (ctrl.Manager, error),
	restCfg *rest.Config, mgrOpts func(*ctrl.Options), tune ...func(*options.Options)) (ctrl.Manager, func()) {
	o := ctrl.Options{
		Scheme:                 clientgoscheme.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Each spec starts a fresh manager in the same process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	}
	if mgrOpts != nil {
		mgrOpts(&o)
	}
	opts := options.Default()
	opts.NodeMonitorGracePeriod = grace
	opts.NodeStartupGracePeriod = startupGrace
	opts.NodeMonitorPeriod = monitorPeriod
	opts.PodEvictionTimeout = evictTimeout
	opts.NodeEvictionRate = evictionRate
	opts.PartitionFreezeCooldown = grace
	for _, t := range tune {
		t(&opts)
	}
	mgr, err := build(restCfg, o, opts)
	Expect(err).NotTo(HaveOccurred())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(done)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			Eventually(done).Should(BeClosed())
		})
	}
	DeferCleanup(stop)
	return mgr, stop
}

// markDelays returns the histogram of delays between a deadline and its mark,
// as the controller measured them on its own clock.
func markDelays() *dto.Histogram { return histogram("node_lifecycle_mark_delay_seconds") }

// evictionDelays returns the histogram of delays between a pod's eviction
// deadline and its deletion.
func evictionDelays() *dto.Histogram { return histogram("node_lifecycle_pod_eviction_delay_seconds") }

// metricSum adds up the counters and gauges of the metric name, over every
// manager in the process, keeping the series whose labels include each
// name and value pair of labelPairs.
func metricSum(name string, labelPairs ...string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	total := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labelPairs) {
				total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return total
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// transitionsTo reads how many times judged nodes entered the state.
func transitionsTo(state string) float64 {
	return metricSum("node_lifecycle_node_transitions_total", "to", state)
}

// freezeGauge reads the partition freeze gauge: 1 while a freeze holds.
func freezeGauge() float64 { return metricSum("node_lifecycle_partition_freeze") }

// evictionErrors reads how many pod eviction reconciles returned an error.
func evictionErrors() float64 {
	return metricSum("controller_runtime_reconcile_errors_total", "controller", podeviction.ControllerName)
}

// reconcilePanics reads how many reconciles have panicked, over every
// controller. controller-runtime recovers them, so a panicking reconciler
// would otherwise go on looking alive.
func reconcilePanics() float64 { return metricSum("controller_runtime_reconcile_panics_total") }

// podDeletions reads the controllers' count of evicted pods.
func podDeletions() float64 { return metricSum("taint_eviction_controller_pod_deletions_total") }

func histogram(name string) *dto.Histogram {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetHistogram()
		}
	}
	return &dto.Histogram{}
}

// maxDelayBoundSince is maxDelayBound over the observations made after
// before was taken: what one spec caused, whatever the others did.
func maxDelayBoundSince(before, after *dto.Histogram) float64 {
	total := after.GetSampleCount() - before.GetSampleCount()
	prev := before.GetBucket()
	for i, b := range after.GetBucket() {
		var was uint64
		if i < len(prev) {
			was = prev[i].GetCumulativeCount()
		}
		if b.GetCumulativeCount()-was == total {
			return b.GetUpperBound()
		}
	}
	return math.Inf(1)
}

// maxDelayBound returns the smallest histogram bound that holds every
// observation, or +Inf when some fall past the last bound.
func maxDelayBound(h *dto.Histogram) float64 {
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() == h.GetSampleCount() {
			return b.GetUpperBound()
		}
	}
	return math.Inf(1)
}
