package configpolicy

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/compliance"
)

func TestCapMessage(t *testing.T) {
	full := func(msg string) string { return "NonCompliant; " + capMessage(policyv1.NonCompliant, msg) }
	tests := []struct {
		name string
		msg  string
		want string
	}{
		{"short", "violation - a", "NonCompliant; violation - a"},
		{"exactly 4096", strings.Repeat("x", 4096-14), "NonCompliant; " + strings.Repeat("x", 4096-14)},
		{"one more", strings.Repeat("x", 4096-13), "NonCompliant; " + strings.Repeat("x", 4096-14-14) + "...[truncated]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(full(tt.msg)).To(Equal(tt.want))
		})
	}
	t.Run("cut at a character boundary", func(t *testing.T) {
		g := NewWithT(t)
		got := full(strings.Repeat("é", 3000))
		g.Expect(utf8.ValidString(got)).To(BeTrue())
		g.Expect(len(got)).To(BeNumerically("<=", 4096))
		g.Expect(got).To(HaveSuffix("é...[truncated]"))
	})
}

func TestWithHistory(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	entry := func(i int) policyv1.HistoryEvent {
		return policyv1.HistoryEvent{LastTimestamp: metav1.NewMicroTime(t0.Add(-time.Duration(i) * time.Minute)), Message: fmt.Sprint("Compliant; ", i)}
	}
	full := make([]policyv1.HistoryEvent, 10)
	for i := range full {
		full[i] = entry(i + 1)
	}
	sent := &compliance.Sent{Name: "p.x", At: t0, Message: "NonCompliant; new"}
	newest := policyv1.HistoryEvent{LastTimestamp: metav1.NewMicroTime(t0.Truncate(time.Microsecond)), Message: "NonCompliant; new"}
	tests := []struct {
		name      string
		history   []policyv1.HistoryEvent
		hasParent bool
		sent      *compliance.Sent
		message   string
		newSpec   bool
		want      []policyv1.HistoryEvent
	}{
		{"an event sent comes first, at its time to the microsecond", []policyv1.HistoryEvent{entry(1)}, true, sent, "NonCompliant; new", false,
			[]policyv1.HistoryEvent{newest, entry(1)}},
		{"nothing sent: unchanged", []policyv1.HistoryEvent{entry(1)}, true, nil, "NonCompliant; new", true, []policyv1.HistoryEvent{entry(1)}},
		{"at most 10", full, true, sent, "NonCompliant; new", false, append([]policyv1.HistoryEvent{newest}, full[:9]...)},
		{"no parent: a new message comes first", []policyv1.HistoryEvent{entry(1)}, false, nil, "NonCompliant; new", false,
			[]policyv1.HistoryEvent{newest, entry(1)}},
		{"no parent: the same message is not repeated", []policyv1.HistoryEvent{entry(1)}, false, nil, "Compliant; 1", false,
			[]policyv1.HistoryEvent{entry(1)}},
		{"no parent: the same message is repeated for a new generation", []policyv1.HistoryEvent{entry(1)}, false, nil, "Compliant; 1", true,
			[]policyv1.HistoryEvent{{LastTimestamp: newest.LastTimestamp, Message: "Compliant; 1"}, entry(1)}},
		{"no parent, no history", nil, false, nil, "NonCompliant; new", false, []policyv1.HistoryEvent{newest}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(withHistory(tt.history, tt.hasParent, tt.sent, tt.message, tt.newSpec, t0)).To(Equal(tt.want))
		})
	}
}
