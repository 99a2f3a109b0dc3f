package up

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/chromium"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/private"
)

// findCheckout finds the tabwarden checkout (Options.Repo, else the one at or
// above the working directory), its CRDs, and the roles and admission policies
// of config/rbac and config/admission.
func (r *runner) findCheckout() error {
	var err error
	repo := r.o.Repo
	if repo == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if repo, err = FindRepo(wd); err != nil {
			return err
		}
	} else if repo, err = filepath.Abs(repo); err != nil {
		return err
	}
	r.repo = repo
	r.crds = filepath.Join(repo, "crds")
	if _, err := os.Stat(r.crds); err != nil {
		return fmt.Errorf("the CRDs are missing (%w): is %s a tabwarden checkout? pass --repo", err, repo)
	}
	if r.manifests, err = access.Load(repo); err != nil {
		return fmt.Errorf("the roles and admission policies of config/rbac and config/admission: %w", err)
	}
	return nil
}

// prepareStateDir makes Options.Dir private to this OS user, takes its lock
// (released by r.unlock) and, with Options.Fresh, removes the state kept from
// the last run.
func (r *runner) prepareStateDir() error {
	dir, err := filepath.Abs(r.o.Dir)
	if err != nil {
		return err
	}
	r.dir = dir
	r.info.StateDir = filepath.Join(dir, StateDir)
	// Private to this OS user: it holds the admin's kubeconfig, the roles' keys,
	// etcd's certificates and the pairing; one left open (0755) is closed.
	tightened, err := private.Dir(dir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	for _, t := range tightened {
		r.progress("made private: %s", t)
	}
	if r.unlock, err = lock(filepath.Join(dir, lockFile)); err != nil {
		return err
	}
	if r.o.Fresh {
		removed, err := wipeState(dir)
		if err != nil {
			r.unlock()
			return fmt.Errorf("--fresh: %w", err)
		}
		if len(removed) > 0 {
			r.progress("--fresh: removed the cluster's state kept from the last run (%s)", strings.Join(removed, ", "))
		}
	}
	return nil
}

// checkPrerequisites finds Chromium (unless Options.CDPEndpoint names a
// Chrome), then kube-apiserver and etcd (Options.Assets, $KUBEBUILDER_ASSETS,
// else what hack/envtest.sh builds or finds cached).
func (r *runner) checkPrerequisites(ctx context.Context) error {
	// Chromium first: its absence is the likeliest problem.
	if r.o.CDPEndpoint == "" {
		if _, err := chromium.Find(); err != nil {
			return fmt.Errorf("%w\n(or pass --cdp-endpoint http://127.0.0.1:9222 to drive a Chrome started with --remote-debugging-port=9222)", err)
		}
	}
	assets := r.o.Assets
	if assets == "" {
		assets = os.Getenv("KUBEBUILDER_ASSETS")
	}
	if assets == "" {
		r.progress("finding kube-apiserver and etcd (hack/envtest.sh; the first run builds them from source)")
		var err error
		if assets, err = Assets(ctx, r.repo, r.o.Stderr); err != nil {
			return err
		}
	}
	for _, bin := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return fmt.Errorf("%s is missing from %s: run hack/envtest.sh (make envtest) or fix --assets / KUBEBUILDER_ASSETS", bin, assets)
		}
	}
	r.assets = assets
	if ctx.Err() != nil {
		return errStopped
	}
	return nil
}

// FindRepo walks up from dir to the directory whose go.mod declares Module.
func FindRepo(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if isRepo(d) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no tabwarden checkout at or above %s: run `tabwarden up` inside the repository "+
				"(it needs hack/envtest.sh, crds/ and extension/) or pass --repo", dir)
		}
	}
}

func isRepo(d string) bool {
	f, err := os.Open(filepath.Join(d, "go.mod"))
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose on close
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return fields[1] == Module
		}
	}
	return false
}

// Assets runs hack/envtest.sh in repo (its progress on stderr) and returns the
// directory it prints on its last line.
func Assets(ctx context.Context, repo string, stderr io.Writer) (string, error) {
	script := filepath.Join(repo, "hack", "envtest.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = repo
	cmd.Stderr = stderr
	// The script runs `go build`: end the whole group when ctx ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("building kube-apiserver and etcd with %s: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if dir == "" {
		return "", fmt.Errorf("%s printed no directory", script)
	}
	return dir, nil
}

// wipeState removes the state a run keeps for the next (--fresh): etcd's data
// and the cdp driver's ledgers, which name pages of the last run's browser.
// The extension pairing in StateDir stays. It returns what it removed.
func wipeState(dir string) ([]string, error) {
	paths := []string{filepath.Join(dir, EtcdDataDir)}
	ledgers, err := filepath.Glob(cdp.LedgerFile(filepath.Join(dir, StateDir), "*"))
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, p := range append(paths, ledgers...) {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return removed, err
		}
		removed = append(removed, Rel(p))
	}
	return removed, nil
}

// lock takes an exclusive lock on path so that two `up` never share a directory.
func lock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // best-effort cleanup
		return nil, fmt.Errorf("another `tabwarden up` is running with %s (stop it, or pass --dir for a separate one)", filepath.Dir(path))
	}
	return func() { _ = f.Close() }, nil
}

// writeFile writes path through a temporary file, 0600.
func writeFile(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Rel shows path relative to the working directory when it lies below it.
func Rel(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return path
	}
	r, err := filepath.Rel(wd, path)
	if err != nil || strings.HasPrefix(r, "..") {
		return path
	}
	return r
}
