package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// saveProfile takes a CPU profile of length d from a controller's pprof
// endpoint and writes it to path.
func saveProfile(ctx context.Context, s servingFlags, d time.Duration, path string) error {
	if s.profileURL == "" {
		return fmt.Errorf("no profile endpoint")
	}
	return savePprof(ctx, s, s.profileURL+"?seconds="+strconv.Itoa(int(d.Seconds())), d, path)
}

// saveHeapProfile takes a heap profile, after a garbage collection, from
// the controller's pprof endpoint and writes it to path: what the process
// keeps live, by the code that allocated it.
func saveHeapProfile(ctx context.Context, s servingFlags, path string) error {
	if s.profileURL == "" {
		return fmt.Errorf("no profile endpoint")
	}
	return savePprof(ctx, s, strings.TrimSuffix(s.profileURL, "/profile")+"/heap?gc=1", 0, path)
}

// savePprof fetches url, a pprof endpoint that answers within d and some
// slack, into path.
func savePprof(ctx context.Context, s servingFlags, url string, d time.Duration, path string) error {
	ctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("profile request: %w", err)
	}
	// The serving client's timeout is for probes; a profile takes d.
	client := *s.client
	client.Timeout = 0
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("take a profile from %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("take a profile from %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		_ = f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// pprofTop writes what `go tool pprof -top` says of a profile next to it,
// and returns that file's path; extra flags (such as -sample_index) go
// before the binary.
func pprofTop(ctx context.Context, binary, profile string, extra ...string) (string, error) {
	args := append(append([]string{"tool", "pprof", "-top"}, extra...), binary, profile)
	out, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go tool pprof -top %s: %w: %s", profile, err, out)
	}
	path := strings.TrimSuffix(profile, ".pprof") + "-top.txt"
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}
