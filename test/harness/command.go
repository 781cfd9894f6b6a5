package harness

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/testenv"
)

// Main runs a command's run function and exits: 0 when it returns nil, 1
// when it returns an error, 2 when it panics. Until run returns, Ctrl-C and
// SIGTERM cancel its context instead of killing the process, and a panic
// still unwinds through run's deferred cleanup before it is reported, so
// that the child processes and the control plane are always stopped. name
// prefixes the messages.
func Main(name string, run func(ctx context.Context) error) {
	code := 0
	func() {
		ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stopSignals()
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintf(os.Stderr, "%s: panic: %v\n", name, r)
				code = 2
			}
		}()
		if err := run(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			code = 1
		}
	}()
	os.Exit(code)
}

// Prepare finds the control plane's binaries (see testenv.AssetsDir),
// creates outDir, and sends the logs of this process's own clients to
// outDir/fleet.log.
func Prepare(command, outDir string) (assets string, closeLog func(), err error) {
	assets, err = testenv.AssetsDir(command)
	if err != nil {
		return "", nil, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", nil, fmt.Errorf("create %s: %w", outDir, err)
	}
	closeLog, err = logTo(filepath.Join(outDir, "fleet.log"))
	if err != nil {
		return "", nil, err
	}
	return assets, closeLog, nil
}

// StopControlPlane stops env, saying so, and reports a failure on stderr
// under name: there is nothing left to do about it.
func StopControlPlane(env *envtest.Environment, name string) {
	fmt.Println("Stopping the control plane ...")
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: stop control plane: %v\n", name, err)
	}
}

// WriteFile writes what content renders, such as a drawn canvas, to path.
func WriteFile(path string, content io.WriterTo) error {
	var b bytes.Buffer
	if _, err := content.WriteTo(&b); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
