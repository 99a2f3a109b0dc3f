package controllers_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// columns is the row `kubectl get <resource> <name> -n <ns>` prints, by
// column name, as the API server renders it (the CRD's printer columns, as a
// meta.k8s.io Table).
func columns(g Gomega, ns, resource, name string) map[string]string {
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	u := fmt.Sprintf("%s/apis/tabwarden.dev/v1alpha1/namespaces/%s/%s/%s", strings.TrimSuffix(cfg.Host, "/"), ns, resource, name)
	req, err := http.NewRequest(http.MethodGet, u, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := hc.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }() // read below; a close error changes nothing
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))
	var table metav1.Table
	g.Expect(json.Unmarshal(body, &table)).To(Succeed())
	g.Expect(table.Rows).To(HaveLen(1))
	row := map[string]string{}
	for i, c := range table.ColumnDefinitions {
		row[c.Name] = fmt.Sprint(table.Rows[0].Cells[i])
	}
	return row
}
