package up

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/private"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// nobody is the other OS user of these tests: uid and gid 65534.
var nobody = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"}

// TestControlPlaneIsPrivate: another OS user on the machine reaches `tabwarden
// up`'s etcd at none of the addresses it listens on, by none of the protocols it
// speaks there, and the API server tells an anonymous caller nothing but that it
// is healthy. The attack of issue 19 first: a /v3/kv/put that rewrites profile
// local's namespaces, past RBAC and every admission policy.
func TestControlPlaneIsPrivate(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test acts as another OS user (setpriv --reuid=65534): run it as root (as the test machines do)")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is the other user's tool here: %v", err)
	}
	assets, err := testenv.Assets()
	if err != nil {
		t.Fatal(err)
	}
	// The state directory, as up makes it, in a directory everyone may enter (as a
	// home directory or a checkout usually is).
	work := t.TempDir()
	if err := os.Chmod(work, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(work, DefaultDir)
	if _, err := private.Dir(dir); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	started := time.Now()
	cp, err := startControlPlane(ctx, dir, assets, filepath.Join(testenv.Root(), "crds"), 2*time.Minute, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
		if _, err := os.Stat(cp.dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there after Stop (%v): its keys must not outlive the run", cp.dir, err)
		}
	}()
	t.Logf("control plane up in %v", time.Since(started).Round(time.Millisecond))

	k8s, err := client.New(cp.Config, client.Options{Scheme: run.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, DesktopProfile(DefaultLocalProfile, twv1.DriverCDP)); err != nil {
		t.Fatal(err)
	}

	// Every address etcd listens on, as the kernel reports them.
	tcp, unix := listening(t, cp.etcd.Pid())
	t.Logf("etcd (pid %d) listens on tcp %v, unix %v", cp.etcd.Pid(), tcp, unix)
	for _, want := range []string{cp.etcd.ClientURL.Host, cp.etcd.PeerURL.Host} {
		if !slices.Contains(tcp, want) {
			t.Fatalf("etcd does not list %s among its listening sockets %v: the probe below would miss it", want, tcp)
		}
	}

	key := "/registry/tabwarden.dev/browserprofiles/" + DefaultLocalProfile
	forged := `{"apiVersion":"tabwarden.dev/v1alpha1","kind":"BrowserProfile","metadata":{"name":"local"},"spec":{"driver":"cdp","namespaces":["default","attacker"]}}`
	b64 := base64.StdEncoding.EncodeToString
	gatewayPut := fmt.Sprintf(`{"key":%q,"value":%q}`, b64([]byte(key)), b64([]byte(forged)))
	gatewayRange := fmt.Sprintf(`{"key":%q}`, b64([]byte(key)))
	grpcPut := grpcFrame(protoBytes(1, []byte(key)), protoBytes(2, []byte(forged)))
	grpcRange := grpcFrame(protoBytes(1, []byte(key)))
	keyFile := filepath.Join(cp.dir, EtcdClientKeyFile)
	certFile := filepath.Join(cp.dir, EtcdClientCertFile)

	type probe struct {
		what  string
		args  []string
		stdin []byte
	}
	var probes []probe
	for _, hostport := range tcp {
		for _, scheme := range []string{"http", "https"} {
			base := scheme + "://" + hostport
			tlsArgs := []string{}
			if scheme == "https" {
				tlsArgs = []string{"-k"}
			}
			h2 := "--http2-prior-knowledge"
			if scheme == "https" {
				h2 = "--http2"
			}
			grpc := []string{h2, "-H", "content-type: application/grpc", "-H", "te: trailers", "--data-binary", "@-"}
			probes = append(probes,
				probe{"put " + base + "/v3/kv/put", append(tlsArgs, "-d", gatewayPut, base+"/v3/kv/put"), nil},
				probe{"range " + base + "/v3/kv/range", append(tlsArgs, "-d", gatewayRange, base+"/v3/kv/range"), nil},
				probe{"gRPC Put " + base, append(append(tlsArgs, grpc...), base+"/etcdserverpb.KV/Put"), grpcPut},
				probe{"gRPC Range " + base, append(append(tlsArgs, grpc...), base+"/etcdserverpb.KV/Range"), grpcRange},
			)
		}
		// With the API server's own etcd certificate, which is in the state directory.
		probes = append(probes, probe{"put https://" + hostport + " with the API server's certificate",
			[]string{"-k", "--cert", certFile, "--key", keyFile, "-d", gatewayPut, "https://" + hostport + "/v3/kv/put"}, nil})
	}
	for _, sock := range unix {
		probes = append(probes,
			probe{"put unix:" + sock, []string{"--unix-socket", sock, "-d", gatewayPut, "http://localhost/v3/kv/put"}, nil},
			probe{"gRPC Put unix:" + sock, []string{"--unix-socket", sock, "--http2-prior-knowledge", "-H", "content-type: application/grpc",
				"-H", "te: trailers", "--data-binary", "@-", "http://localhost/etcdserverpb.KV/Put"}, grpcPut})
	}

	try := func(asNobody bool, p probe) (code int, out string) {
		args := append([]string{curl, "-sS", "--max-time", "5", "-o", "/dev/null", "-w", "%{http_code}"}, p.args...)
		if asNobody {
			args = append(append([]string{}, nobody...), args...)
		}
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Stdin = bytes.NewReader(p.stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code, _ = strconv.Atoi(strings.TrimSpace(stdout.String()))
		return code, fmt.Sprintf("http %s, %v, %s", stdout.String(), err, strings.TrimSpace(stderr.String()))
	}

	// The probe is sound: the same request with the API server's certificate, by
	// its owner, reads profile local from etcd's client port.
	if code, out := try(false, probe{"range with the API server's certificate", []string{
		"--cacert", filepath.Join(cp.dir, EtcdCAFile), "--cert", certFile, "--key", keyFile, "-d", gatewayRange,
		cp.etcd.ClientURL.String() + "/v3/kv/range"}, nil}); code != http.StatusOK {
		t.Fatalf("the API server's own certificate cannot read etcd through the probe (%s): the probe is broken", out)
	}

	for _, p := range probes {
		if code, out := try(true, p); code == http.StatusOK {
			t.Errorf("another OS user: %s: answered 200 (%s)", p.what, out)
		} else {
			t.Logf("another OS user: %s: refused (%s)", p.what, out)
		}
	}

	// What they tried to write is not there: profile local admits default alone.
	got := &twv1.BrowserProfile{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: DefaultLocalProfile}, got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Spec.Namespaces, ",") != SessionNamespace {
		t.Errorf("profile local admits %v after the other user's attempts, want only %s", got.Spec.Namespaces, SessionNamespace)
	}

	// The control plane's files: 0600 in a 0700 directory, none readable by the other user.
	entries, err := os.ReadDir(cp.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]os.FileMode{true: 0o700, false: 0o600}[e.IsDir()]; fi.Mode().Perm() != want {
			t.Errorf("%s has mode %v, want %v", filepath.Join(cp.dir, e.Name()), fi.Mode().Perm(), want)
		}
	}
	for _, f := range []string{keyFile, filepath.Join(cp.dir, etcdServerKeyFile)} {
		if out, err := exec.Command(nobody[0], append(nobody[1:], "cat", f)...).CombinedOutput(); err == nil {
			t.Errorf("another OS user reads %s:\n%s", f, out)
		}
	}

	// The API server: an anonymous caller gets the health endpoints and nothing else.
	anonymous := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // an anonymous caller, not a client to trust the server
	}}
	host := strings.TrimSuffix(cp.Config.Host, "/")
	for path, want := range map[string]int{
		"/healthz": http.StatusOK, "/readyz": http.StatusOK, "/livez": http.StatusOK,
		"/version": http.StatusUnauthorized, "/api": http.StatusUnauthorized, "/apis/tabwarden.dev/v1alpha1/browserprofiles": http.StatusUnauthorized,
		"/api/v1/namespaces/default/secrets": http.StatusUnauthorized, "/metrics": http.StatusUnauthorized,
	} {
		resp, err := anonymous.Get(host + path)
		if err != nil {
			t.Errorf("anonymous GET %s: %v", path, err)
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("anonymous GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

// listening lists the TCP addresses ("ip:port") and unix socket paths that pid
// listens on, from /proc.
func listening(t *testing.T, pid int) (tcp, unix []string) {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] { // 0A: LISTEN
				continue
			}
			tcp = append(tcp, procAddr(t, fields[1]))
		}
		_ = f.Close()
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/net/unix", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	sc := bufio.NewScanner(f)
	sc.Scan()
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path
		fields := strings.Fields(sc.Text())
		if len(fields) >= 8 && inodes[fields[6]] {
			unix = append(unix, fields[7])
		}
	}
	return tcp, unix
}

// procAddr turns /proc/net/tcp's "0100007F:0C38" into "127.0.0.1:3128".
func procAddr(t *testing.T, s string) string {
	t.Helper()
	hexIP, hexPort, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexIP)
	if err != nil {
		t.Fatal(err)
	}
	// The kernel prints each 32-bit word in host (little-endian) order.
	for i := 0; i+4 <= len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(net.IP(raw).String(), strconv.FormatUint(port, 10))
}

// protoBytes is one length-delimited protobuf field.
func protoBytes(field int, b []byte) []byte {
	out := binary.AppendUvarint([]byte{byte(field<<3 | 2)}, uint64(len(b)))
	return append(out, b...)
}

// grpcFrame is one uncompressed gRPC message of the given fields.
func grpcFrame(fields ...[]byte) []byte {
	msg := bytes.Join(fields, nil)
	frame := binary.BigEndian.AppendUint32([]byte{0}, uint32(len(msg)))
	return append(frame, msg...)
}
