package main

import (
	"bufio"
	"debug/buildinfo"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// machine describes where the bench ran.
type machine struct {
	CPUs       int    `json:"cpus"`
	CPUModel   string `json:"cpuModel"`
	Kernel     string `json:"kernel"`
	GoVersion  string `json:"goVersion"`
	Kubernetes string `json:"kubernetes"`
}

func describeMachine(c config) machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), CPUModel: "unknown", Kubernetes: "unknown"}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		_ = f.Close()
	}
	// kube-controller-manager built from the test/tools module reports
	// v0.0.0-master as its version; the module it was built from knows.
	if info, err := buildinfo.ReadFile(c.upstream); err == nil {
		for _, mod := range append([]*debug.Module{&info.Main}, info.Deps...) {
			if mod.Path == "k8s.io/kubernetes" {
				m.Kubernetes = mod.Version
			}
		}
	}
	return m
}
