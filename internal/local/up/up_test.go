package up

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindRepo(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := FindRepo(wd)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Clean(filepath.Join(wd, "..", "..", "..")); root != want {
		t.Fatalf("FindRepo(%s) = %s, want %s", wd, root, want)
	}
	// A go.mod of another module is not the repository.
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := FindRepo(other); err == nil || !strings.Contains(err.Error(), "--repo") {
		t.Fatalf("FindRepo outside a checkout: %v, want an error that names --repo", err)
	}
}

func TestDescendantsAndAlive(t *testing.T) {
	// sh → sleep: a child and a grandchild.
	cmd := exec.Command("sh", "-c", "sleep 60 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var procs []Proc
	for range 100 {
		if procs = Descendants(os.Getpid()); len(procs) >= 2 {
			break
		}
		_ = exec.Command("sleep", "0.05").Run() // a pause; how sleep exits does not matter
	}
	var names []string
	for _, p := range procs {
		names = append(names, p.Comm)
		if !Alive(p) {
			t.Errorf("%v is listed but not alive", p)
		}
	}
	if strings.Join(names, ",") != "sh,sleep" {
		t.Fatalf("descendants %v, want sh and sleep", procs)
	}
	for _, p := range procs {
		_ = syscallKill(p.PID)
	}
	_ = cmd.Wait()
	if Alive(procs[0]) {
		t.Fatalf("%v still alive after kill and wait", procs[0])
	}
	if p := (Proc{PID: procs[0].PID, Start: procs[0].Start + 1}); Alive(p) {
		t.Fatalf("a pid with another start time counts as the same process")
	}
}

func syscallKill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
