package main

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/pkg/historyview"
)

// TestHistoryRowsGap: a gap is a row of its own, "history incomplete",
// placed at its start among the transitions.
func TestHistoryRowsGap(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	p := historyview.Policy{Namespace: "policies", Name: "p1"}
	a := historyview.HistoryView{Kind: "Policy", Namespace: "policies", Name: "p1",
		Transitions: []historyview.Transition{
			{Hub: "h", Cluster: "c1", Policy: p, Template: "cfg", State: "NonCompliant", Message: "m0", At: t0},
			{Hub: "h", Cluster: "c1", Policy: p, Template: "cfg", State: "Compliant", Message: "m9", At: t0.Add(9 * time.Minute)},
		},
		Gaps: []historyview.Gap{{Hub: "h", Cluster: "c1", Policy: p, Template: "cfg", From: t0, To: t0.Add(9 * time.Minute)}},
	}
	var out bytes.Buffer
	g.Expect(writeHistoryCSV(&out, historyRows(a))).To(Succeed())
	g.Expect(out.String()).To(Equal(`time,hub,cluster,policy,template,state,message
2026-11-20T10:00:00Z,h,c1,policies/p1,cfg,NonCompliant,m0
2026-11-20T10:00:00Z,h,c1,policies/p1,cfg,history incomplete,more happened until 2026-11-20T10:09:00Z than the replica's history held; unknown until then
2026-11-20T10:09:00Z,h,c1,policies/p1,cfg,Compliant,m9
`))
	out.Reset()
	g.Expect(writeHistoryTable(&out, historyview.HistoryView{Kind: "Policy", Namespace: "policies", Name: "p1", Since: t0}, nil)).To(Succeed())
	g.Expect(out.String()).To(Equal("No compliance history of Policy policies/p1 since 2026-11-20T10:00:00Z.\n"))
}
