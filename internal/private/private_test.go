package private

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestDirTightensAnExistingDirectory: a state directory left 0755 by an older
// tabwarden, with a 0644 kubeconfig and a 0755 subdirectory, comes out 0700 with
// nothing in it open to group or others; a link's target outside is not touched.
func TestDirTightensAnExistingDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".tabwarden")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{dir, filepath.Join(dir, "state")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, m := range map[string]os.FileMode{
		filepath.Join(dir, "kubeconfig"): 0o644, filepath.Join(dir, "state", "pairing"): 0o640,
		filepath.Join(dir, "up.lock"): 0o600, outside: 0o644,
	} {
		if err := os.WriteFile(path, []byte("x"), m); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, m); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}

	tightened, err := Dir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		dir: 0o700, filepath.Join(dir, "state"): 0o700, filepath.Join(dir, "kubeconfig"): 0o600,
		filepath.Join(dir, "state", "pairing"): 0o600, filepath.Join(dir, "up.lock"): 0o600, outside: 0o644,
	} {
		if got := mode(t, path); got != want {
			t.Errorf("%s: mode %v after Dir, want %v", path, got, want)
		}
	}
	if len(tightened) != 4 || !strings.Contains(tightened[0], dir+": -rwxr-xr-x → -rwx------") {
		t.Errorf("Dir reported %q, want the four paths it tightened, the directory first", tightened)
	}
	// Again: nothing left to tighten.
	if again, err := Dir(dir); err != nil || len(again) != 0 {
		t.Errorf("Dir a second time: %q, %v; want nothing tightened", again, err)
	}
}

func TestDirCreatesAMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", ".tabwarden")
	if _, err := Dir(dir); err != nil {
		t.Fatal(err)
	}
	if got := mode(t, dir); got != 0o700 {
		t.Fatalf("a new directory has mode %v, want 0700", got)
	}
}

// TestDirRefusesWhatAnotherUserOwns: a directory another user made (say, planted
// in a shared working directory), or a file they planted in it, is refused with
// what to do, and left as it was.
func TestDirRefusesWhatAnotherUserOwns(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test gives files to another user: run it as root (as the test machines do)")
	}
	root := t.TempDir()
	theirs := filepath.Join(root, "theirs")
	if err := os.Mkdir(theirs, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(theirs, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(theirs); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") || !strings.Contains(err.Error(), "choose a directory of your own") {
		t.Errorf("Dir on another user's directory: %v, want a refusal naming the owner and the way out", err)
	}
	if got := mode(t, theirs); got != 0o777 {
		t.Errorf("the refused directory's mode changed to %v", got)
	}

	mine := filepath.Join(root, "mine")
	if err := os.Mkdir(mine, 0o700); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(mine, "kubeconfig")
	if err := os.WriteFile(planted, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(planted, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(mine); err == nil || !strings.Contains(err.Error(), planted+" belongs to uid 65534") {
		t.Errorf("Dir with a file another user planted: %v, want a refusal naming it", err)
	}
}

func TestDirRefusesAFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), ".tabwarden")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Dir on a file: %v", err)
	}
}
