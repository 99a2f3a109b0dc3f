package agent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
)

// TestReadUploads: an Upload reads regular files inside the profile's upload
// directory and nothing else: not without a directory, not by "..", not an
// absolute path, not through a symbolic link that leaves the directory, not a
// directory, not a FIFO (without blocking on it), not past the size bound. Each refusal is upload_not_allowed and
// teaches the corrected call (the files the directory offers, or the admin's
// patch).
func TestReadUploads(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "id_ed25519")
	if err := os.WriteFile(secret, []byte("PRIVATE KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("resume.txt", []byte("Ada Lovelace\n"))
	write("2026/receipt.png", []byte("\x89PNG"))
	write("big.bin", bytes.Repeat([]byte{1}, twv1.MaxUploadBytes+1))
	write("half.bin", bytes.Repeat([]byte{2}, twv1.MaxUploadBytes/2+1))
	if err := os.Symlink(secret, filepath.Join(dir, "key")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("resume.txt", filepath.Join(dir, "cv.txt")); err != nil {
		t.Fatal(err)
	}
	// A hard link inside the directory to the secret outside it.
	if err := os.Link(secret, filepath.Join(dir, "hard")); err != nil {
		t.Fatal(err)
	}
	// A FIFO nobody writes: opening it for reading would block for ever.
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name   string
		dir    string
		files  []string
		reason string
		// hint and msg are parts the refusal's hint and message contain.
		hint, msg string
		// got are the base names read, in order.
		got []string
	}{
		{name: "a file", dir: dir, files: []string{"resume.txt"}, got: []string{"resume.txt"}},
		{name: "a file in a subdirectory, and two at once", dir: dir, files: []string{"2026/receipt.png", "resume.txt"}, got: []string{"receipt.png", "resume.txt"}},
		{name: "a link inside the directory", dir: dir, files: []string{"cv.txt"}, got: []string{"cv.txt"}},
		{name: "no directory", dir: "", files: []string{"resume.txt"}, reason: twv1.ReasonUploadNotAllowed,
			hint: `kubectl patch browserprofile p1 --type=merge -p '{"spec":{"uploadDirectory":`, msg: "allows no uploads"},
		{name: "a directory that is not there", dir: filepath.Join(dir, "nope"), files: []string{"resume.txt"}, reason: twv1.ReasonUploadNotAllowed,
			hint: "kubectl patch browserprofile p1", msg: "cannot be opened"},
		{name: "a missing file", dir: dir, files: []string{"resume.pdf"}, reason: twv1.ReasonUploadNotAllowed,
			hint: `"files":["`, msg: `file "resume.pdf" is not in the profile's upload directory; the upload directory offers`},
		{name: "dot-dot", dir: dir, files: []string{"../" + filepath.Base(outside) + "/id_ed25519"}, reason: twv1.ReasonUploadNotAllowed, msg: "is not a path inside"},
		{name: "an absolute path", dir: dir, files: []string{secret}, reason: twv1.ReasonUploadNotAllowed, msg: "is not a path inside"},
		{name: "a backslash", dir: dir, files: []string{`..\key`}, reason: twv1.ReasonUploadNotAllowed, msg: "is not a path inside"},
		{name: "a link to a file outside", dir: dir, files: []string{"key"}, reason: twv1.ReasonUploadNotAllowed, msg: `file "key" cannot be read`},
		{name: "through a link to a directory outside", dir: dir, files: []string{"out/id_ed25519"}, reason: twv1.ReasonUploadNotAllowed, msg: "cannot be read"},
		{name: "a directory", dir: dir, files: []string{"2026"}, reason: twv1.ReasonUploadNotAllowed, msg: "is not a regular file"},
		{name: "a hard link to a file outside", dir: dir, files: []string{"hard"}, reason: twv1.ReasonUploadNotAllowed, msg: "has other hard links"},
		{name: "a FIFO, without blocking", dir: dir, files: []string{"pipe"}, reason: twv1.ReasonUploadNotAllowed, msg: "is not a regular file"},
		{name: "too large", dir: dir, files: []string{"big.bin"}, reason: twv1.ReasonUploadNotAllowed, msg: "at most 10485760 bytes together"},
		{name: "too large together", dir: dir, files: []string{"half.bin", "half.bin"}, reason: twv1.ReasonUploadNotAllowed, msg: "at most 10485760 bytes together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := twv1.ActionStep{Type: twv1.StepUpload, Target: &twv1.ActionTarget{Text: "Attach"}, Files: tc.files}
			got, rf := readUploads("p1", tc.dir, guardAction(step), step)
			checkRefusal(t, tc.name, rf, tc.reason, "")
			if rf != nil {
				if !strings.Contains(rf.hint, tc.hint) || rf.hint == "" {
					t.Errorf("hint %q, want it to contain %q", rf.hint, tc.hint)
				}
				if !strings.Contains(rf.message, tc.msg) {
					t.Errorf("message %q, want it to contain %q", rf.message, tc.msg)
				}
				if strings.Contains(rf.message, "PRIVATE") || (strings.Contains(rf.message, outside) && !strings.Contains(strings.Join(tc.files, " "), outside)) {
					t.Errorf("the refusal shows what is outside the directory: %q", rf.message)
				}
				return
			}
			var names []string
			for _, f := range got {
				names = append(names, f.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.got, ",") {
				t.Fatalf("read %v, want %v", names, tc.got)
			}
		})
	}

	// What is read: the content, the media type from the extension, the
	// modification time.
	step := twv1.ActionStep{Type: twv1.StepUpload, Target: &twv1.ActionTarget{Text: "Attach"}, Files: []string{"resume.txt", "2026/receipt.png"}}
	got, rf := readUploads("p1", dir, guardAction(step), step)
	if rf != nil {
		t.Fatal(rf)
	}
	st, _ := os.Stat(filepath.Join(dir, "resume.txt"))
	if string(got[0].Data) != "Ada Lovelace\n" || got[0].Type != "text/plain" || got[0].LastModified != st.ModTime().UnixMilli() {
		t.Errorf("resume.txt read as %+v", got[0])
	}
	if got[1].Type != "image/png" {
		t.Errorf("receipt.png has type %q", got[1].Type)
	}
	// A missing file's hint is the same call with a file the directory offers.
	step.Files = []string{"nope.txt"}
	_, rf = readUploads("p1", dir, guardAction(step), step)
	if rf == nil || !strings.Contains(rf.hint, `"type":"Upload"`) || !strings.Contains(rf.message, `"resume.txt"`) {
		t.Errorf("a missing file's refusal: %+v", rf)
	}
}
