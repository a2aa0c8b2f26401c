package faults

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"

	. "github.com/onsi/gomega"
)

// metrics are the samples of a Prometheus text exposition, one line each.
type metrics []string

// scrape reads the metrics served at address.
func scrape(g Gomega, address string) metrics {
	resp, err := http.Get("http://" + address + "/metrics") //nolint:gosec,noctx // the test's own process
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var m metrics
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			m = append(m, line)
		}
	}
	g.Expect(sc.Err()).NotTo(HaveOccurred())
	return m
}

// sum adds the values of the samples of name whose labels contain label.
func (m metrics) sum(name, label string) float64 {
	var total float64
	for _, line := range m {
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, label) {
			continue
		}
		fields := strings.Fields(line)
		if v, err := strconv.ParseFloat(fields[len(fields)-1], 64); err == nil {
			total += v
		}
	}
	return total
}
