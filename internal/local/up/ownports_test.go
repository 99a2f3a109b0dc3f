package up

import (
	"net/url"
	"slices"
	"testing"

	"k8s.io/client-go/rest"
)

// TestOwnPortsNameEveryServerOfUp: the ports the cdp driver keeps every page of
// up's Chromium from (cdp.Options.BlockPorts) are all of up's own servers: the
// API server, etcd's client and peer ports (TLS with client certificates, yet
// a page's https request still reached them with its handshake), the metrics
// endpoint.
func TestOwnPortsNameEveryServerOfUp(t *testing.T) {
	r := &runner{cp: &controlPlane{
		Config: &rest.Config{Host: "https://127.0.0.1:40001"},
		etcd: &etcdProcess{
			ClientURL: &url.URL{Scheme: "https", Host: "127.0.0.1:40002"},
			PeerURL:   &url.URL{Scheme: "https", Host: "127.0.0.1:40003"},
		},
	}}
	r.info.MetricsURL = "http://127.0.0.1:40004/metrics"
	got := r.ownPorts()
	for _, p := range []int{40001, 40002, 40003, 40004} {
		if !slices.Contains(got, p) {
			t.Errorf("ownPorts() = %v: port %d is missing", got, p)
		}
	}
}
