package authz_test

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/tabwarden/tabwarden/internal/k8s/access"
	"github.com/tabwarden/tabwarden/internal/run"
	"github.com/tabwarden/tabwarden/internal/testenv"
)

// TestMetricsDefaultLoopback: without a flag, the controller and the agent
// serve their metrics on loopback only: nobody on the pod network or the LAN
// reads them.
func TestMetricsDefaultLoopback(t *testing.T) {
	for role, addr := range map[string]string{"controller": run.ControllerMetricsAddr, "agent": run.AgentMetricsAddr} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatalf("%s: default metrics address %q: %v", role, addr, err)
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			t.Errorf("%s: default metrics address %q is not loopback", role, addr)
		}
	}
}

// TestMetricsSecureServing: the controller serving its metrics on the network
// with --metrics-secure (as config/manager runs it) answers only callers the
// API server authenticates and authorizes: no token 401, a token without
// tabwarden-metrics-reader 403, plain HTTP nothing; a ServiceAccount bound to
// the shipped ClusterRole reads them.
func TestMetricsSecureServing(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // free the port for the controller's metrics server
	opts := run.ControllerOptions{}
	opts.MetricsAddr, opts.MetricsSecure = addr, true
	testenv.StartControllerWith(t, admin, opts)

	ns := testenv.NewNamespace(t, as[asAdmin], "metrics-")
	kube := kubernetes.NewForConfigOrDie(admin)
	token := func(name string) string {
		t.Helper()
		if _, err := kube.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, stranger := token("prometheus"), token("stranger")
	if err := access.Apply(ctx, as[asAdmin], append(shipped(t, "rbac", "metrics_reader.yaml"),
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "authz-test-metrics-reader-" + ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "tabwarden-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
		})...); err != nil {
		t.Fatal(err)
	}

	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's self-signed serving certificate
	scrape := func(scheme, token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, scheme+"://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }() // read below; nothing to report
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	// The bound reader gets the metrics (once the server is up and RBAC applies).
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body, err := scrape("https", reader)
		if err == nil && code == http.StatusOK && strings.Contains(body, "controller_runtime_") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the metrics reader's scrape: %d %v %.200s; want 200 with the metrics", code, err, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"nobody (no token)", "", http.StatusUnauthorized},
		// controller-runtime answers an invalid token with 500 "Authentication failed".
		{"a forged token", "not-a-token", http.StatusInternalServerError},
		{"a ServiceAccount without tabwarden-metrics-reader", stranger, http.StatusForbidden},
	} {
		code, body, err := scrape("https", tc.token)
		if err != nil || code != tc.want || strings.Contains(body, "controller_runtime_") {
			t.Errorf("%s scrapes: %d %v %.200s; want %d and no metrics", tc.who, code, err, body, tc.want)
		}
	}
	if code, body, err := scrape("http", ""); err == nil && (code == http.StatusOK || strings.Contains(body, "controller_runtime_")) {
		t.Errorf("plain HTTP scrape: %d %.200s; want no metrics", code, body)
	}
}
