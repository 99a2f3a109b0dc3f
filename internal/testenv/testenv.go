// Package testenv starts a real kube-apiserver and etcd (built from source by
// hack/envtest.sh) with tabwarden's CRDs installed, for tests and benchmarks.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Assets returns the directory holding kube-apiserver and etcd: KUBEBUILDER_ASSETS
// when set, else what hack/envtest.sh builds (or finds cached).
func Assets() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cmd := exec.Command("bash", filepath.Join(Root(), "hack", "envtest.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the envtest binaries with hack/envtest.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// Start starts the control plane with the CRDs from crds/.
func Start() (*envtest.Environment, *rest.Config, error) {
	assets, err := Assets()
	if err != nil {
		return nil, nil, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(Root(), "crds")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assets,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	return env, cfg, nil
}
