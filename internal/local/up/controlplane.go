package up

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	twv1 "github.com/tabwarden/tabwarden/api/v1alpha1"
	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/run"
)

// ControlPlaneDir, under Options.Dir, holds what the control plane of one run
// needs and nobody else may read: the certificate authority that admits etcd's
// clients, its keys, and the API server's authentication configuration. It is
// created afresh by every run and removed when up stops.
const ControlPlaneDir = "controlplane"

// EtcdDataDir, under Options.Dir (0700, like everything there), is etcd's data:
// the cluster's state (sessions, windows, profiles, actions), kept across runs
// as kind and minikube keep theirs. Options.Fresh (`tabwarden up --fresh`)
// removes it first. etcd starts on it with new ports and new certificates each
// run: its one member's stored peer URL (the first run's) is never dialled by
// a single-member cluster, so it may name a port long gone.
const EtcdDataDir = "etcd-data"

// Files under ControlPlaneDir.
const (
	EtcdCAFile           = "etcd-ca.crt"
	etcdServerCertFile   = "etcd-server.crt"
	etcdServerKeyFile    = "etcd-server.key"
	EtcdClientCertFile   = "apiserver-etcd-client.crt"
	EtcdClientKeyFile    = "apiserver-etcd-client.key"
	authenticationConfig = "authentication.yaml"
)

// anonymousHealthOnly is the API server's authentication configuration: client
// certificates (envtest's, per run) authenticate; an anonymous request is
// admitted only to the health endpoints, so a caller without credentials
// learns that the server is up and nothing else (not even its version).
const anonymousHealthOnly = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /healthz
  - path: /livez
  - path: /readyz
`

// bootControlPlane starts kube-apiserver and etcd with the CRDs, writes the
// admin's kubeconfig (KubeconfigFile) and connects as the admin.
func (r *runner) bootControlPlane(ctx context.Context) error {
	r.progress("starting kube-apiserver and etcd from %s", r.assets)
	var err error
	r.cp, err = startControlPlane(ctx, r.dir, r.assets, r.crds, 2*time.Minute, 30*time.Second)
	if err != nil {
		return orStopped(ctx, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", r.assets, err))
	}
	cfg := r.cp.Config
	r.info.APIServer = strings.TrimSuffix(cfg.Host, "/")
	r.info.DataDir = filepath.Join(r.dir, EtcdDataDir)
	r.progress("control plane up at %s after %.1fs", r.info.APIServer, time.Since(r.began).Seconds())

	user, err := r.cp.AddUser(envtest.User{Name: "tabwarden-admin", Groups: []string{"system:masters"}})
	if err != nil {
		return fmt.Errorf("creating the admin user: %w", err)
	}
	kc, err := user.KubeConfig()
	if err == nil {
		kc, err = localKubeconfig(kc, SessionNamespace)
	}
	if err != nil {
		return fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	r.info.Kubeconfig = filepath.Join(r.dir, KubeconfigFile)
	if err := writeFile(r.info.Kubeconfig, kc); err != nil {
		return err
	}
	r.k8s, err = client.New(cfg, client.Options{Scheme: run.Scheme()})
	return err
}

// installAccess creates the system namespace, installs who may write what, as
// in a cluster (the roles of config/rbac bound to the roles' certificate
// groups, and the admission policies of config/admission, which bind the admin
// too), waits until they are enforced, and creates the desktop profiles.
func (r *runner) installAccess(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := r.k8s.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return orStopped(ctx, fmt.Errorf("creating namespace %s: %w", Namespace, err))
	}
	if err := r.manifests.Install(ctx, r.k8s); err != nil {
		return orStopped(ctx, fmt.Errorf("installing config/rbac and config/admission: %w", err))
	}
	if err := access.WaitEnforced(ctx, r.cp.Config, run.Scheme()); err != nil {
		return orStopped(ctx, err)
	}
	for _, p := range []struct {
		name   string
		driver twv1.DriverType
	}{{r.o.LocalProfile, twv1.DriverCDP}, {r.o.ExtensionProfile, twv1.DriverExtension}} {
		if p.driver == twv1.DriverExtension && r.host == nil {
			continue
		}
		if err := ensureDesktopProfile(ctx, r.k8s, p.name, p.driver); err != nil {
			return orStopped(ctx, err)
		}
	}
	return nil
}

// controlPlane is the kube-apiserver and etcd of `tabwarden up`, private to the
// OS user that runs it. etcd serves its clients and its peer port over TLS only
// and admits only a client certificate of a CA made for this run, whose one
// client certificate is the API server's: mutual TLS between the API server and
// etcd, as in a kubeadm cluster. The CA, the keys and etcd's data are files
// (0600) in ControlPlaneDir (0700) under the state directory (0700). So another
// local user, who can connect to every loopback port, can neither read nor
// write etcd, and must pass the API server's authentication and authorization
// (RBAC, the admission policies) like everybody else.
type controlPlane struct {
	dir   string
	etcd  *etcdProcess
	api   *envtest.APIServer
	plane *envtest.ControlPlane
	// Config is the admin's (system:masters).
	Config *rest.Config
}

// startControlPlane starts etcd and kube-apiserver from assets, with the CRDs of
// crds installed (created, or updated on a kept cluster), its private files in
// stateDir/ControlPlaneDir and etcd's data in stateDir/EtcdDataDir. Stop ends
// them and removes ControlPlaneDir, also after a failed start; the data stays.
func startControlPlane(ctx context.Context, stateDir, assets, crds string, startTimeout, stopTimeout time.Duration) (_ *controlPlane, retErr error) {
	cp := &controlPlane{dir: filepath.Join(stateDir, ControlPlaneDir)}
	defer func() {
		if retErr != nil {
			_ = cp.Stop()
		}
	}()
	// A run killed before it could clean up left its files: they are stale.
	if err := os.RemoveAll(cp.dir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(cp.dir, 0o700); err != nil {
		return nil, err
	}
	data := filepath.Join(stateDir, EtcdDataDir)
	if err := os.Mkdir(data, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	if err := writeEtcdPKI(cp.dir); err != nil {
		return nil, fmt.Errorf("making etcd's certificates: %w", err)
	}
	if err := writeFile(filepath.Join(cp.dir, authenticationConfig), []byte(anonymousHealthOnly)); err != nil {
		return nil, err
	}

	var err error
	if cp.etcd, err = startEtcd(ctx, filepath.Join(assets, "etcd"), cp.dir, data, startTimeout, stopTimeout); err != nil {
		return nil, err
	}

	cp.api = &envtest.APIServer{
		Path: filepath.Join(assets, "kube-apiserver"), EtcdURL: cp.etcd.ClientURL,
		StartTimeout: startTimeout, StopTimeout: stopTimeout,
	}
	cp.api.Configure().
		Set("etcd-cafile", filepath.Join(cp.dir, EtcdCAFile)).
		Set("etcd-certfile", filepath.Join(cp.dir, EtcdClientCertFile)).
		Set("etcd-keyfile", filepath.Join(cp.dir, EtcdClientKeyFile)).
		Set("authentication-config", filepath.Join(cp.dir, authenticationConfig))
	if err := cp.api.Start(); err != nil {
		return nil, fmt.Errorf("kube-apiserver: %w", err)
	}
	cp.plane = &envtest.ControlPlane{APIServer: cp.api}
	admin, err := cp.AddUser(envtest.User{Name: "tabwarden-up", Groups: []string{"system:masters"}})
	if err != nil {
		return nil, err
	}
	cp.Config = admin.Config()
	if err := waitDefaultNamespace(ctx, cp.Config); err != nil {
		return nil, err
	}
	if _, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true}); err != nil {
		return nil, fmt.Errorf("installing the CRDs of %s: %w", crds, err)
	}
	return cp, nil
}

// AddUser provisions an identity: a client certificate of the API server's
// client CA, for user.Name in user.Groups.
func (cp *controlPlane) AddUser(user envtest.User) (*envtest.AuthenticatedUser, error) {
	return cp.plane.AddUser(user, &rest.Config{QPS: 100, Burst: 200})
}

// Stop ends kube-apiserver, then etcd, and removes ControlPlaneDir (the
// certificates of this run); etcd's data stays for the next.
func (cp *controlPlane) Stop() error {
	var errs []error
	if cp.api != nil {
		errs = append(errs, cp.api.Stop())
	}
	if cp.etcd != nil {
		errs = append(errs, cp.etcd.Stop())
	}
	errs = append(errs, os.RemoveAll(cp.dir))
	return errors.Join(errs...)
}

func waitDefaultNamespace(ctx context.Context, cfg *rest.Config) error {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		err := c.Get(ctx, client.ObjectKey{Name: "default"}, &corev1.Namespace{})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the API server did not create namespace default: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// etcdProcess is etcd serving clients and peers on loopback, over mutual TLS.
type etcdProcess struct {
	ClientURL, PeerURL *url.URL
	cmd                *exec.Cmd
	exited             chan struct{}
	stopTimeout        time.Duration
	stderr             *tailBuffer
}

// startEtcd starts etcd on data (a new member there, or the one a run before
// left), its certificates from dir.
func startEtcd(ctx context.Context, bin, dir, data string, startTimeout, stopTimeout time.Duration) (*etcdProcess, error) {
	var ports [2]int
	for i := range ports {
		p, err := freeLoopbackPort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	e := &etcdProcess{
		ClientURL:   &url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))},
		PeerURL:     &url.URL{Scheme: "https", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))},
		exited:      make(chan struct{}),
		stopTimeout: stopTimeout,
		stderr:      &tailBuffer{max: 8 << 10},
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	const name = "tabwarden-up"
	e.cmd = exec.Command(bin,
		"--name="+name,
		"--data-dir="+data,
		"--listen-client-urls="+e.ClientURL.String(),
		"--advertise-client-urls="+e.ClientURL.String(),
		"--listen-peer-urls="+e.PeerURL.String(),
		"--initial-advertise-peer-urls="+e.PeerURL.String(),
		"--initial-cluster="+name+"="+e.PeerURL.String(),
		// Clients: TLS, and a certificate of this run's CA (the API server's) or nothing.
		"--cert-file="+f(etcdServerCertFile), "--key-file="+f(etcdServerKeyFile),
		"--client-cert-auth=true", "--trusted-ca-file="+f(EtcdCAFile),
		// The peer port serves the same data (gRPC too): the same rule.
		"--peer-cert-file="+f(etcdServerCertFile), "--peer-key-file="+f(etcdServerKeyFile),
		"--peer-client-cert-auth=true", "--peer-trusted-ca-file="+f(EtcdCAFile),
		// The state outlives the run, yet etcd need not wait for the disk:
		// what it wrote is in the kernel's page cache once written, so any stop
		// of up or etcd (Ctrl-C, kill -9) keeps it; only a crash of the OS or a
		// power loss can lose the last writes or corrupt the data (then
		// `tabwarden up --fresh`). Measured on a loaded 2-core machine, fsync
		// cost about 3 s of a 10 s control plane start (CRDs, RBAC, policies
		// are many writes) and every write after: a laptop's cluster for
		// browser sessions, not a bank's.
		"--unsafe-no-fsync=true",
		"--log-level=warn",
	)
	e.cmd.Stderr = e.stderr
	// Its own process group: a Ctrl-C at the terminal reaches up, which stops
	// etcd after the API server.
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	go func() { _ = e.cmd.Wait(); close(e.exited) }()

	// Ready when /health answers to the API server's certificate.
	c, err := etcdClient(dir)
	if err != nil {
		_ = e.Stop()
		return nil, err
	}
	health := e.ClientURL.JoinPath("health").String()
	deadline := time.NewTimer(startTimeout)
	defer deadline.Stop()
	for {
		resp, err := c.Get(health)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return e, nil
			}
		}
		select {
		case <-e.exited:
			return nil, fmt.Errorf("etcd exited at start (%v):\n%s\n(its data, kept across runs, is %s: `tabwarden up --fresh` starts with an empty cluster)", e.cmd.ProcessState, e.stderr, data)
		case <-deadline.C:
			_ = e.Stop()
			return nil, fmt.Errorf("etcd did not become healthy at %s within %v:\n%s", health, startTimeout, e.stderr)
		case <-ctx.Done():
			_ = e.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Pid is etcd's process id.
func (e *etcdProcess) Pid() int { return e.cmd.Process.Pid }

// Stop ends etcd: SIGTERM, then SIGKILL after the stop timeout.
func (e *etcdProcess) Stop() error {
	select {
	case <-e.exited:
		return nil
	default:
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-e.exited:
		return nil
	case <-time.After(e.stopTimeout):
		_ = e.cmd.Process.Kill()
		<-e.exited
		return fmt.Errorf("etcd did not stop within %v of SIGTERM; killed", e.stopTimeout)
	}
}

// etcdClient is an HTTPS client that presents the API server's etcd client
// certificate from dir: what up itself uses to ask etcd whether it is healthy.
func etcdClient(dir string) (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, EtcdClientCertFile), filepath.Join(dir, EtcdClientKeyFile))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, EtcdCAFile))
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no certificate", filepath.Join(dir, EtcdCAFile))
	}
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{
			Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12,
		}},
	}, nil
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeEtcdPKI writes, into dir, a CA made for this run, etcd's serving (and
// peer) certificate for 127.0.0.1, and the API server's client certificate.
// The CA's key is never written: no other certificate can be made.
func writeEtcdPKI(dir string) error {
	now := time.Now()
	newKey := func() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) }
	serial := func() (*big.Int, error) { return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) }

	caKey, err := newKey()
	if err != nil {
		return err
	}
	sn, err := serial()
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: sn, Subject: pkix.Name{CommonName: "tabwarden up etcd CA"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.AddDate(1, 0, 0),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, EtcdCAFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})); err != nil {
		return err
	}

	leaf := func(certFile, keyFile, cn string, usage []x509.ExtKeyUsage, ips []net.IP, dns []string) error {
		key, err := newKey()
		if err != nil {
			return err
		}
		sn, err := serial()
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: sn, Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Minute), NotAfter: now.AddDate(1, 0, 0),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage, IPAddresses: ips, DNSNames: dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, keyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})); err != nil {
			return err
		}
		return writeFile(filepath.Join(dir, certFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	}
	// etcd presents it to clients and, as the peer port's server and client, to peers.
	if err := leaf(etcdServerCertFile, etcdServerKeyFile, "etcd", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		[]net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}); err != nil {
		return err
	}
	return leaf(EtcdClientCertFile, EtcdClientKeyFile, "kube-apiserver-etcd-client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}
