// Package deploy_test proves what ships for a cluster as far as a machine without a
// container engine or a kubelet allows: the Dockerfiles statically (pinned bases,
// non-root users) with their go build run for real; the manifests config/default
// renders (securityContext, probes, resources, flags that must agree); and, on a
// real kube-apiserver, server-side apply of all of it and each role run under its
// ServiceAccount's pod-bound token (deploy_test.go).
package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/tabwarden/tabwarden/internal/browser/cdp"
	"github.com/tabwarden/tabwarden/internal/browser/ledger"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// dockerfile is a parsed Dockerfile: its instructions, continuation lines joined.
type instruction struct{ op, args string }

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur.Len() == 0 && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		op, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(op), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// pinnedRE: a base image named by tag and digest, registry/name:tag@sha256:<64 hex>.
// The digest fixes the bytes pulled; the tag says what they are.
var pinnedRE = regexp.MustCompile(`^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)*:[A-Za-z0-9._-]+@sha256:[a-f0-9]{64}$`)

// checkBases fails for every base that is not pinned (unpinned) and returns the
// last stage's instructions.
func checkBases(t *testing.T, path string, ins []instruction) (final []instruction) {
	t.Helper()
	problems, final := unpinned(ins)
	for _, p := range problems {
		t.Errorf("%s: %s", path, p)
	}
	if final == nil {
		t.Fatalf("%s: no FROM", path)
	}
	return final
}

// unpinned lists every FROM whose image is not an earlier stage and is not
// pinned by digest (a tag alone moves under the build), and returns the last
// stage's instructions.
func unpinned(ins []instruction) (problems []string, final []instruction) {
	stages := map[string]bool{}
	for i, in := range ins {
		if in.op != "FROM" {
			continue
		}
		f := strings.Fields(in.args)
		for len(f) > 0 && strings.HasPrefix(f[0], "--") { // --platform=…
			f = f[1:]
		}
		if len(f) == 0 {
			problems = append(problems, "FROM without an image")
			continue
		}
		img := f[0]
		if !stages[img] && (!pinnedRE.MatchString(img) || strings.Contains(img, ":latest@")) {
			name, _, _ := strings.Cut(img, "@")
			problems = append(problems, fmt.Sprintf("FROM %s: pin the base by tag and digest, FROM %s@sha256:<digest>, the digest from "+
				"`crane digest %s` (a tag, or an image from a build argument, can change under the build)", img, name, name))
		}
		if len(f) == 3 && strings.EqualFold(f[1], "AS") {
			stages[f[2]] = true
		}
		final = ins[i+1:]
	}
	return problems, final
}

// TestUnpinnedBasesRefused: what image-check refuses, and what it lets through.
func TestUnpinnedBasesRefused(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("ab", 32)
	for from, ok := range map[string]bool{
		"golang:1.26-bookworm" + digest + " AS build":                         true,
		"gcr.io/distroless/static-debian12:nonroot" + digest:                  true,
		"--platform=$BUILDPLATFORM registry:5000/team/go:1.26" + digest:       true,
		"golang:1.26-bookworm AS build":                                       false, // a tag moves
		"debian:bookworm-slim":                                                false,
		"debian" + digest:                                                     false, // say what it is
		"debian:latest" + digest:                                              false,
		"debian:bookworm-slim@sha256:abc":                                     false,
		"${BASE}":                                                             false, // whatever the build says
		"gcr.io/distroless/static-debian12@sha256:" + strings.Repeat("A", 64): false,
	} {
		problems, _ := unpinned([]instruction{{"FROM", from}})
		if got := len(problems) == 0; got != ok {
			t.Errorf("FROM %s: accepted %v, want %v (%v)", from, got, ok, problems)
		}
	}
	// A stage built earlier is not a base.
	if problems, _ := unpinned([]instruction{{"FROM", "golang:1.26" + digest + " AS build"}, {"FROM", "build"}}); len(problems) != 0 {
		t.Errorf("FROM an earlier stage refused: %v", problems)
	}
}

// user returns the last USER of a stage, failing when it is missing or root.
func nonRootUser(t *testing.T, stage []instruction) string {
	t.Helper()
	user := ""
	for _, in := range stage {
		if in.op == "USER" {
			user = in.args
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	n, err := strconv.Atoi(uid)
	if err != nil || n == 0 {
		t.Errorf("the runtime stage's USER is %q: want a numeric non-root uid (runAsNonRoot can check only a number)", user)
	}
	return uid
}

// TestDockerfile: the tabwarden image builds the binary with a command that builds
// here (run for real), on bases pinned by digest, into a runtime stage without a shell as
// user 65532; the Chromium image runs as a non-root user too.
func TestDockerfile(t *testing.T) {
	root := testenv.Root()
	ins := parseDockerfile(t, filepath.Join(root, "Dockerfile"))
	final := checkBases(t, "Dockerfile", ins)
	if uid := nonRootUser(t, final); uid != "65532" {
		t.Errorf("the tabwarden image runs as %s, want 65532 (config/manager and config/agent say so)", uid)
	}
	var build, entry string
	copied := false
	for _, in := range ins {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			build = in.args
		}
	}
	for _, in := range final {
		switch in.op {
		case "RUN":
			t.Errorf("the runtime stage runs %q: it has no shell; build everything in the builder", in.args)
		case "ENTRYPOINT":
			entry = in.args
		case "COPY":
			copied = copied || strings.HasSuffix(in.args, " /tabwarden")
		}
	}
	if !copied || entry != `["/tabwarden"]` {
		t.Errorf("the runtime stage must hold the binary at /tabwarden and run it (ENTRYPOINT %q): the manifests run command /tabwarden", entry)
	}
	if !strings.Contains(build, "CGO_ENABLED=0 go build -trimpath") || !strings.HasSuffix(build, " ./cmd/tabwarden") {
		t.Fatalf("the builder's go build is %q: want CGO_ENABLED=0 go build -trimpath … ./cmd/tabwarden (a static binary for a base without libc)", build)
	}

	// What the build reads is in the build context.
	ignored, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	list := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{range .GoFiles}}{{$.Dir}}/{{.}} {{end}}{{range .EmbedFiles}}{{$.Dir}}/{{.}} {{end}}{{end}}`, "./cmd/tabwarden")
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, file := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, file)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue // a module dependency
		}
		if dockerIgnores(string(ignored), filepath.ToSlash(rel)) {
			t.Errorf(".dockerignore leaves out %s, which ./cmd/tabwarden builds from", rel)
		}
	}

	// The exact build command, here (into a temporary directory instead of /out).
	bin := filepath.Join(t.TempDir(), "tabwarden")
	cmd := exec.Command("bash", "-c", strings.ReplaceAll(build, "/out/tabwarden", bin))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-imagecheck")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build, %q, fails here: %v\n%s", build, err, out)
	}
	got, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(got), "tabwarden v0.0.0-imagecheck") {
		t.Errorf("the built binary's version: %q, %v", got, err)
	}

	// The Chromium image: non-root, with /tabwarden (the cdp-bridge the manifest runs)
	// built by the same command as the tabwarden image's.
	chromium := parseDockerfile(t, filepath.Join(root, "hack", "chromium-image", "Dockerfile"))
	final = checkBases(t, "hack/chromium-image/Dockerfile", chromium)
	nonRootUser(t, final)
	var chromiumBuild string
	for _, in := range chromium {
		if in.op == "RUN" && strings.Contains(in.args, "go build") {
			chromiumBuild = in.args
		}
	}
	if chromiumBuild != build {
		t.Errorf("hack/chromium-image/Dockerfile builds tabwarden with %q, the root Dockerfile with %q: want the same build", chromiumBuild, build)
	}
	bridged := false
	for _, in := range final {
		bridged = bridged || (in.op == "COPY" && strings.HasPrefix(in.args, "--from=build ") && strings.HasSuffix(in.args, " /tabwarden"))
	}
	if !bridged {
		t.Error("hack/chromium-image/Dockerfile: its runtime stage must COPY --from=build … /tabwarden (config/agent runs /tabwarden cdp-bridge)")
	}
}

// render is `kubectl kustomize config/default`, decoded.
func render(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	out, err := exec.Command("kubectl", "kustomize", filepath.Join(testenv.Root(), "config", "default")).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("kubectl kustomize config/default: %v\n%s", err, stderr)
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func convert[T any](t *testing.T, u *unstructured.Unstructured, into *T) *T {
	t.Helper()
	if u == nil {
		t.Fatal("missing from config/default")
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return into
}

// flagValue is the value of --name=value in args ("" when absent).
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func container(t *testing.T, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("no container %s", name)
	return nil
}

// controllerPod and agentPod are the pod templates config/default ships.
func workloads(t *testing.T, objs []*unstructured.Unstructured) (*appsv1.Deployment, *appsv1.StatefulSet) {
	return convert(t, find(objs, "Deployment", "tabwarden-controller"), &appsv1.Deployment{}),
		convert(t, find(objs, "StatefulSet", "remote-chrome"), &appsv1.StatefulSet{})
}

// TestManifests: every container of config/default is locked down (non-root,
// read-only root, no privilege escalation, no capabilities), has requests and a
// memory limit, is probed where it serves probes; the flags of the roles agree with
// each other and with the volumes; the agent's ledger can live where its
// --state-dir points (an emptyDir is writable by everyone; the ledger refuses that).
func TestManifests(t *testing.T) {
	objs := render(t)
	dep, sts := workloads(t, objs)
	for _, pod := range []struct {
		name string
		spec *corev1.PodSpec
	}{{"Deployment tabwarden-controller", &dep.Spec.Template.Spec}, {"StatefulSet remote-chrome", &sts.Spec.Template.Spec}} {
		psc := pod.spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil {
			t.Errorf("%s: the pod's securityContext wants runAsNonRoot: true and a seccompProfile", pod.name)
		}
		for _, c := range pod.spec.Containers {
			where := pod.name + " container " + c.Name
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
				t.Errorf("%s: want readOnlyRootFilesystem, allowPrivilegeEscalation: false, capabilities drop ALL", where)
			}
			if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
				t.Errorf("%s: want cpu and memory requests and a memory limit", where)
			}
			if addr, ok := flagValue(c.Args, "health-probe-bind-address"); ok {
				_, port, _ := strings.Cut(addr, ":")
				if c.LivenessProbe == nil || c.ReadinessProbe == nil {
					t.Errorf("%s serves probes on %s but has no liveness or readiness probe", where, addr)
				}
				for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
					if p == nil || p.HTTPGet == nil {
						continue
					}
					named := false
					for _, cp := range c.Ports {
						if cp.Name == p.HTTPGet.Port.String() && strconv.Itoa(int(cp.ContainerPort)) == port {
							named = true
						}
					}
					if !named {
						t.Errorf("%s: a probe on port %s, which is not the container port of --health-probe-bind-address %s", where, p.HTTPGet.Port.String(), addr)
					}
				}
			}
		}
	}

	ctl := container(t, &dep.Spec.Template.Spec, "controller")
	agt := container(t, &sts.Spec.Template.Spec, "agent")
	ns, _ := flagValue(agt.Args, "lease-namespace")
	if cns, _ := flagValue(ctl.Args, "lease-namespace"); ns == "" || ns != cns {
		t.Errorf("the agent renews its Lease in %q and the controller watches %q", ns, cns)
	}
	if v, _ := flagValue(ctl.Args, "leader-election-namespace"); v != "tabwarden-system" {
		t.Errorf("--leader-election-namespace=%q: the leader election Role is in tabwarden-system", v)
	}
	if v, _ := flagValue(agt.Args, "profile"); v != "$(POD_NAME)" {
		t.Errorf("the agent's --profile=%q: the admission policies allow it only the profile named after its pod", v)
	}
	if len(agt.Env) == 0 || agt.Env[0].Name != "POD_NAME" || agt.Env[0].ValueFrom == nil || agt.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("the agent's POD_NAME must come from metadata.name")
	}

	// The ledger: --state-dir on a volume of the agent, in a directory the agent
	// makes its own (an emptyDir is mode 0777, which the ledger refuses).
	stateDir, _ := flagValue(agt.Args, "state-dir")
	var mount string
	for _, m := range agt.VolumeMounts {
		if stateDir == m.MountPath || strings.HasPrefix(stateDir, m.MountPath+"/") {
			mount = m.MountPath
			if m.ReadOnly {
				t.Errorf("--state-dir %s is on a read-only mount", stateDir)
			}
		}
	}
	if mount == "" {
		t.Fatalf("--state-dir %s is on no volume: the root filesystem is read-only", stateDir)
	}
	emptyDir := t.TempDir()
	if err := os.Chmod(emptyDir, 0o777); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(emptyDir, strings.TrimPrefix(stateDir, mount))
	if _, err := ledger.New(cdp.LedgerFile(dir, "remote-chrome-0")); err != nil {
		t.Errorf("the agent's ledger at --state-dir %s on an emptyDir (mode 0777) at %s: %v", stateDir, mount, err)
	}
	// Chromium writes its profile, HOME and temporary files to volumes.
	chr := container(t, &sts.Spec.Template.Spec, "chromium")
	mounts := map[string]bool{}
	for _, m := range chr.VolumeMounts {
		mounts[m.MountPath] = !m.ReadOnly
	}
	udd, _ := flagValue(chr.Args, "user-data-dir")
	if !mounts["/tmp"] || !mounts[filepath.Dir(udd)] {
		t.Errorf("chromium needs writable /tmp and %s (--user-data-dir %s): mounts %v", filepath.Dir(udd), udd, mounts)
	}
	checkBridge(t, &sts.Spec.Template.Spec, chr, agt)
}

// checkBridge: the pool's Chromium has no DevTools port. The chromium container
// runs it under `tabwarden cdp-bridge`, whose socket the agent's --cdp-endpoint
// names, on a volume both mount writable, in a subdirectory of it (the emptyDir
// is writable by everyone; the bridge refuses that), and both containers run as
// one uid (the socket is 0600). The agent blocks its own ports to the pages.
func checkBridge(t *testing.T, spec *corev1.PodSpec, chr, agt *corev1.Container) {
	t.Helper()
	cmd := append(append([]string{}, chr.Command...), chr.Args...)
	dash := slices.Index(cmd, "--")
	if len(cmd) < 2 || cmd[0] != "/tabwarden" || cmd[1] != "cdp-bridge" || dash < 0 || dash+1 >= len(cmd) {
		t.Fatalf("the chromium container runs %q: want /tabwarden cdp-bridge --socket=PATH -- CHROMIUM ARGS", cmd)
	}
	socket, _ := flagValue(cmd[2:dash], "socket")
	for _, a := range cmd[dash+1:] {
		if strings.HasPrefix(a, "--remote-debugging-port") || strings.HasPrefix(a, "--remote-debugging-address") ||
			strings.HasPrefix(a, "--remote-allow-origins") || a == "--no-sandbox" {
			t.Errorf("Chromium runs with %s: the bridge drives it over a pipe, sandboxed, with no port", a)
		}
	}
	endpoint, _ := flagValue(agt.Args, "cdp-endpoint")
	if endpoint != "unix:"+socket || socket == "" {
		t.Errorf("the agent's --cdp-endpoint=%s, the bridge's --socket=%s: want --cdp-endpoint=unix:<the socket>", endpoint, socket)
	}
	volumeAt := func(c *corev1.Container) string {
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(socket, m.MountPath+"/") && !m.ReadOnly {
				if rel := strings.TrimPrefix(filepath.Dir(socket), m.MountPath); rel == "" {
					t.Errorf("the socket %s sits in the root of volume %s (mode 0777): the bridge refuses it; use a subdirectory", socket, m.Name)
				}
				return m.Name
			}
		}
		return ""
	}
	if v, a := volumeAt(chr), volumeAt(agt); v == "" || v != a {
		t.Errorf("the socket %s is on volume %q for chromium and %q for the agent: want one volume both mount writable", socket, v, a)
	}
	uid := func(c *corev1.Container) int64 {
		if c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
			return *c.SecurityContext.RunAsUser
		}
		if spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil {
			return *spec.SecurityContext.RunAsUser
		}
		return -1
	}
	if uid(chr) != uid(agt) || uid(chr) <= 0 {
		t.Errorf("chromium runs as uid %d, the agent as %d: the bridge's socket (0600) admits its own uid alone", uid(chr), uid(agt))
	}
	blocked := map[string]bool{}
	for _, a := range agt.Args {
		if v, ok := strings.CutPrefix(a, "--block-port="); ok {
			blocked[v] = true
		}
	}
	for _, p := range agt.Ports {
		if !blocked[strconv.Itoa(int(p.ContainerPort))] {
			t.Errorf("the agent serves port %d (%s) on the pod's loopback, which the pages share, and does not --block-port it", p.ContainerPort, p.Name)
		}
	}
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if c.Name == "chromium" {
				t.Errorf("the chromium container declares port %d: it serves none", p.ContainerPort)
			}
		}
	}
}

// dockerIgnores reports whether .dockerignore rules leave path out of the build
// context: the last rule that matches wins, a "!" rule lets a path back in, and a
// rule matches the path itself, a directory above it, or a glob of it.
func dockerIgnores(rules, path string) bool {
	ignored := false
	for _, line := range strings.Split(rules, "\n") {
		rule := strings.TrimSpace(line)
		if rule == "" || strings.HasPrefix(rule, "#") {
			continue
		}
		keep := strings.HasPrefix(rule, "!")
		rule = strings.TrimPrefix(rule, "!")
		matched := path == rule || strings.HasPrefix(path, rule+"/")
		if !matched {
			if ok, _ := filepath.Match(rule, path); ok {
				matched = true
			}
		}
		if !matched && strings.HasPrefix(rule, "**/") {
			ok, _ := filepath.Match(strings.TrimPrefix(rule, "**/"), filepath.Base(path))
			matched = ok
		}
		if matched {
			ignored = !keep
		}
	}
	return ignored
}

// TestSandboxShipped: nothing shipped runs Chromium with --no-sandbox, and the
// pool's Chromium container gets the Localhost seccomp profile its sandbox needs,
// which is shipped and allows the namespace calls. Static: no container runtime
// enforces the profile here.
func TestSandboxShipped(t *testing.T) {
	root := testenv.Root()
	for _, f := range []string{"Dockerfile", "hack/chromium-image/Dockerfile"} {
		for _, in := range parseDockerfile(t, filepath.Join(root, f)) {
			if strings.Contains(in.args, "--no-sandbox") {
				t.Errorf("%s: %s %s: the pool's Chromium runs with its sandbox", f, in.op, in.args)
			}
		}
	}
	_, sts := workloads(t, render(t))
	for _, c := range sts.Spec.Template.Spec.Containers {
		for _, a := range append(append([]string{}, c.Command...), c.Args...) {
			if a == "--no-sandbox" || strings.HasPrefix(a, "--no-sandbox=") {
				t.Errorf("container %s runs with %s", c.Name, a)
			}
		}
	}
	chr := container(t, &sts.Spec.Template.Spec, "chromium")
	sp := chr.SecurityContext.SeccompProfile
	if sp == nil || sp.Type != corev1.SeccompProfileTypeLocalhost || sp.LocalhostProfile == nil || *sp.LocalhostProfile != "tabwarden/chromium.json" {
		t.Fatalf("the chromium container's seccompProfile is %+v, want Localhost tabwarden/chromium.json (config/agent/seccomp/chromium.json)", sp)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "agent", "seccomp", "chromium.json"))
	if err != nil {
		t.Fatal(err)
	}
	var profile struct {
		DefaultAction string `json:"defaultAction"`
		Syscalls      []struct {
			Names    []string        `json:"names"`
			Action   string          `json:"action"`
			Args     []any           `json:"args"`
			Includes json.RawMessage `json:"includes"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal(b, &profile); err != nil {
		t.Fatalf("config/agent/seccomp/chromium.json: %v", err)
	}
	if profile.DefaultAction != "SCMP_ACT_ERRNO" || len(profile.Syscalls) < 50 {
		t.Errorf("the profile denies nothing by default (%s, %d rules): it must be the runtime default plus additions", profile.DefaultAction, len(profile.Syscalls))
	}
	allowed := map[string]bool{}
	for _, r := range profile.Syscalls {
		if r.Action == "SCMP_ACT_ALLOW" && len(r.Args) == 0 && (len(r.Includes) == 0 || string(r.Includes) == "{}") {
			for _, n := range r.Names {
				allowed[n] = true
			}
		}
	}
	for _, n := range []string{"clone", "unshare", "chroot", "read", "mmap"} {
		if !allowed[n] {
			t.Errorf("the profile does not allow %s unconditionally: Chromium's sandbox (or Chromium) cannot run", n)
		}
	}
	for _, n := range []string{"mount", "bpf", "ptrace", "kexec_load", "init_module"} {
		if allowed[n] {
			t.Errorf("the profile allows %s: only the namespace calls are added to the runtime default", n)
		}
	}
}
