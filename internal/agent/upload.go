// The files an Upload step sends: read from the directory the profile's admin
// allows (spec.uploadDirectory), never from anywhere else.

package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/browser"
	"github.com/tabwarden/tabwarden/internal/clients/hint"
)

// The driver's bound is the API's (a compile error when they differ: a
// negative constant does not convert to uint).
const _ = uint(twv1.MaxUploadBytes-browser.MaxUploadBytes) + uint(browser.MaxUploadBytes-twv1.MaxUploadBytes)

// maxOfferedFiles bounds the files an upload_not_allowed refusal lists.
const maxOfferedFiles = 20

// uploadFiles reads the files step names from the profile's upload directory,
// through an os.Root opened on it: a name cannot leave the directory, by ".."
// or by a symbolic link that points out of it (os.Root refuses both), and
// only regular files are read, at most twv1.MaxUploadBytes in all. Anything
// else is refused (upload_not_allowed) with a hint that names what the
// directory offers, or the admin's patch when the profile allows no uploads.
// An error is the API server's (the profile could not be read).
func (a *Agent) uploadFiles(ctx context.Context, act *twv1.BrowserAction, step twv1.ActionStep) ([]browser.UploadFile, *refusal, error) {
	p := &twv1.BrowserProfile{}
	if err := a.client.Get(ctx, client.ObjectKey{Name: a.opts.Profile}, p); err != nil {
		return nil, nil, fmt.Errorf("read profile %s for the upload directory: %w", a.opts.Profile, err)
	}
	files, rf := readUploads(a.opts.Profile, p.Spec.UploadDirectory, act, step)
	return files, rf, nil
}

// readUploads reads step's files from dir, profile's upload directory ("":
// the profile allows no uploads).
func readUploads(profile, dir string, act *twv1.BrowserAction, step twv1.ActionStep) ([]browser.UploadFile, *refusal) {
	adminPatch := fmt.Sprintf(`kubectl patch browserprofile %s --type=merge -p '{"spec":{"uploadDirectory":"/srv/tabwarden/uploads"}}'`, profile)
	if dir == "" {
		return nil, refuse(twv1.ReasonUploadNotAllowed, adminPatch,
			"profile %q allows no uploads (it has no spec.uploadDirectory): uploading sends a file to the site the page shows, so only files in a directory the profile's admin names can be sent. An admin names one with", profile)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, refuse(twv1.ReasonUploadNotAllowed, adminPatch,
			"profile %q's upload directory cannot be opened on the agent's machine (%v); an admin fixes it or names another with", profile, rootCause(err))
	}
	defer func() { _ = root.Close() }()

	files := make([]browser.UploadFile, 0, len(step.Files))
	total := int64(0)
	for _, name := range step.Files {
		f, rf := uploadFile(root, act, step, name, twv1.MaxUploadBytes-total)
		if rf != nil {
			return nil, rf
		}
		total += int64(len(f.Data))
		files = append(files, f)
	}
	return files, nil
}

// uploadFile reads name from root: a regular file of at most room bytes.
func uploadFile(root *os.Root, act *twv1.BrowserAction, step twv1.ActionStep, name string, room int64) (browser.UploadFile, *refusal) {
	notAllowed := func(format string, args ...any) (browser.UploadFile, *refusal) {
		offered := offeredFiles(root)
		h := hint.Observe(act)
		msg := fmt.Sprintf(format, args...)
		if len(offered) > 0 {
			fixed := step
			fixed.Files = []string{offered[0]}
			h = hint.Action(act, fixed)
			msg += fmt.Sprintf("; the upload directory offers %s", strings.Join(quoted(offered), ", "))
		} else {
			msg += "; the upload directory holds no file to send"
		}
		return browser.UploadFile{}, refuse(twv1.ReasonUploadNotAllowed, h, "%s", msg)
	}
	// The API server's validation refuses these first; checked again here,
	// where the file is opened.
	if !filepath.IsLocal(name) || strings.Contains(name, `\`) {
		return notAllowed("file %q is not a path inside the profile's upload directory", name)
	}
	// Non-blocking: a FIFO planted in the directory must not hang the agent
	// (it is refused below as not a regular file).
	f, err := root.OpenFile(name, uploadOpenFlags, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return notAllowed("file %q is not in the profile's upload directory", name)
		}
		return notAllowed("file %q cannot be read from the profile's upload directory (%v)", name, rootCause(err))
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return notAllowed("%q is not a regular file in the profile's upload directory", name)
	}
	if linkedElsewhere(st) {
		// A hard link inside the directory to a file outside it (the
		// agent's own key, say) passes os.Root: refuse any file with more
		// than one name.
		return notAllowed("file %q has other hard links (more than one name on the disk): only files that live in the upload directory alone are sent", name)
	}
	if st.Size() > room {
		return notAllowed("file %q is %d bytes: the files of one Upload step are at most %d bytes together", name, st.Size(), twv1.MaxUploadBytes)
	}
	data, err := io.ReadAll(io.LimitReader(f, room+1))
	if err != nil {
		return notAllowed("file %q cannot be read (%v)", name, err)
	}
	if int64(len(data)) > room {
		return notAllowed("file %q grew past %d bytes while it was read", name, twv1.MaxUploadBytes)
	}
	typ, _, _ := strings.Cut(mime.TypeByExtension(path.Ext(name)), ";")
	return browser.UploadFile{Name: path.Base(name), Type: strings.TrimSpace(typ), LastModified: st.ModTime().UnixMilli(), Data: data}, nil
}

// offeredFiles lists up to maxOfferedFiles regular files of root, as the
// names an Upload step gives (slash-separated, relative).
func offeredFiles(root *os.Root) []string {
	var out []string
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(out) >= maxOfferedFiles {
			return fs.SkipAll
		}
		if d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// uploaded is an Upload step's result message: what the page's input now holds.
func uploaded(files []browser.UploadFile) string {
	parts := make([]string, len(files))
	for i, f := range files {
		parts[i] = fmt.Sprintf("%q (%d bytes)", f.Name, len(f.Data))
	}
	return "the file input holds " + strings.Join(parts, ", ")
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// rootCause is err without the path os wraps it in (the agent's own paths stay
// out of the refusal, which the action's reader sees).
func rootCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
