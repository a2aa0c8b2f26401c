package dashboard

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/canopy-policy/canopy/pkg/history"
)

var (
	t0      = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	charted = history.Policy{Namespace: "policies", Name: "baseline"}
)

// tr is a transition of charted's template on cluster c1 of hub-a, at t0+after.
func tr(template string, state ChartState, after time.Duration) history.Transition {
	return history.Transition{Hub: "hub-a", Cluster: "c1", Policy: charted, Template: template, State: string(state), At: t0.Add(after)}
}

// gap is a gap of charted's template on c1 of hub-a.
func gap(template string, from, to time.Duration) history.Gap {
	return history.Gap{Hub: "hub-a", Cluster: "c1", Policy: charted, Template: template, From: t0.Add(from), To: t0.Add(to)}
}

// span is a span from t0+from to t0+to.
func span(from, to time.Duration, state ChartState) Span {
	return Span{From: t0.Add(from), To: t0.Add(to), State: state}
}

var c1 = cellKey{Hub: "hub-a", Cluster: "c1", Policy: charted}

func TestCellSpans(t *testing.T) {
	now := t0.Add(2 * time.Hour)
	for name, tc := range map[string]struct {
		res       history.Result
		truncated bool
		want      map[cellKey][]Span
	}{
		"nothing stored": {want: map[cellKey][]Span{}},
		"a state lasts until the next": {
			res:  history.Result{Transitions: []history.Transition{tr("cfg", ChartPending, 0), tr("cfg", ChartCompliant, time.Hour)}},
			want: map[cellKey][]Span{c1: {span(0, time.Hour, ChartPending), span(time.Hour, 2*time.Hour, ChartCompliant)}},
		},
		"the same state again is one span": {
			res:  history.Result{Transitions: []history.Transition{tr("cfg", ChartCompliant, 0), tr("cfg", ChartCompliant, time.Hour)}},
			want: map[cellKey][]Span{c1: {span(0, 2*time.Hour, ChartCompliant)}},
		},
		"the worst template counts": {
			res: history.Result{Transitions: []history.Transition{
				tr("a", ChartCompliant, 0), tr("b", ChartNonCompliant, 10*time.Minute), tr("b", ChartCompliant, 20*time.Minute),
			}},
			want: map[cellKey][]Span{c1: {
				span(0, 10*time.Minute, ChartCompliant), span(10*time.Minute, 20*time.Minute, ChartNonCompliant),
				span(20*time.Minute, 2*time.Hour, ChartCompliant),
			}},
		},
		"two states of one template in one second: Pending, then NonCompliant, then Compliant": {
			res: history.Result{Transitions: []history.Transition{
				tr("a", ChartCompliant, 0), tr("a", ChartPending, 0),
				tr("b", ChartNonCompliant, 0), tr("b", ChartPending, 0),
			}},
			want: map[cellKey][]Span{c1: {span(0, 2*time.Hour, ChartNonCompliant)}},
		},
		"a gap is incomplete until the transition at its end": {
			res: history.Result{
				Transitions: []history.Transition{tr("cfg", ChartCompliant, 0), tr("cfg", ChartNonCompliant, time.Hour)},
				Gaps:        []history.Gap{gap("cfg", 0, time.Hour)},
			},
			want: map[cellKey][]Span{c1: {span(0, time.Hour, ChartIncomplete), span(time.Hour, 2*time.Hour, ChartNonCompliant)}},
		},
		"a gap without a transition after it stays incomplete, never compliant": {
			res: history.Result{
				Transitions: []history.Transition{tr("cfg", ChartPending, 0), tr("cfg", ChartCompliant, 10*time.Minute)},
				Gaps:        []history.Gap{gap("cfg", 10*time.Minute, time.Hour)},
			},
			want: map[cellKey][]Span{c1: {span(0, 10*time.Minute, ChartPending), span(10*time.Minute, 2*time.Hour, ChartIncomplete)}},
		},
		"a gap of a template with no transition read": {
			res:  history.Result{Gaps: []history.Gap{gap("cfg", time.Hour, 90*time.Minute)}},
			want: map[cellKey][]Span{c1: {span(time.Hour, 2*time.Hour, ChartIncomplete)}},
		},
		"NonCompliant beats a gap of another template; a gap beats Pending": {
			res: history.Result{
				Transitions: []history.Transition{
					tr("a", ChartNonCompliant, 0), tr("a", ChartPending, 30*time.Minute),
					tr("b", ChartCompliant, 0), tr("b", ChartCompliant, time.Hour),
				},
				Gaps: []history.Gap{gap("b", 0, time.Hour)},
			},
			want: map[cellKey][]Span{c1: {
				span(0, 30*time.Minute, ChartNonCompliant), span(30*time.Minute, time.Hour, ChartIncomplete),
				span(time.Hour, 2*time.Hour, ChartPending),
			}},
		},
		"truncated: incomplete until each template's first transition read": {
			res:       history.Result{Transitions: []history.Transition{tr("a", ChartCompliant, 0), tr("b", ChartCompliant, time.Hour)}},
			truncated: true,
			want: map[cellKey][]Span{c1: {
				{From: time.Time{}, To: t0.Add(time.Hour), State: ChartIncomplete}, span(time.Hour, 2*time.Hour, ChartCompliant),
			}},
		},
		"a time after now counts as now": {
			res:  history.Result{Transitions: []history.Transition{tr("cfg", ChartPending, 0), tr("cfg", ChartCompliant, 3*time.Hour)}},
			want: map[cellKey][]Span{c1: {span(0, 2*time.Hour, ChartPending)}},
		},
		"clusters, hubs and policies apart": {
			res: history.Result{Transitions: []history.Transition{
				tr("cfg", ChartPending, 0),
				{Hub: "hub-b", Cluster: "c1", Policy: charted, Template: "cfg", State: "Compliant", At: t0},
				{Hub: "hub-a", Cluster: "c2", Policy: charted, Template: "cfg", State: "NonCompliant", At: t0},
				{Hub: "hub-a", Cluster: "c1", Policy: history.Policy{Namespace: "policies", Name: "other"}, Template: "cfg", State: "Compliant", At: t0},
			}},
			want: map[cellKey][]Span{
				c1: {span(0, 2*time.Hour, ChartPending)},
				{Hub: "hub-b", Cluster: "c1", Policy: charted}:                                              {span(0, 2*time.Hour, ChartCompliant)},
				{Hub: "hub-a", Cluster: "c2", Policy: charted}:                                              {span(0, 2*time.Hour, ChartNonCompliant)},
				{Hub: "hub-a", Cluster: "c1", Policy: history.Policy{Namespace: "policies", Name: "other"}}: {span(0, 2*time.Hour, ChartCompliant)},
			},
		},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(cellSpans(tc.res, tc.truncated, now)).To(Equal(tc.want))
		})
	}
}

func TestBuckets(t *testing.T) {
	// Four buckets of 10 minutes from t0; now is in the fourth.
	now := t0.Add(35 * time.Minute)
	c2, c3 := cellKey{Cluster: "c2"}, cellKey{Cluster: "c3"}
	for name, tc := range map[string]struct {
		cells map[cellKey][]Span
		want  [][4]int // per bucket: compliant, nonCompliant, pending, incomplete
	}{
		"a state carried from before the window": {
			cells: map[cellKey][]Span{c1: {span(-48*time.Hour, now.Sub(t0), ChartCompliant)}},
			want:  [][4]int{{1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}},
		},
		"not counted before its first report": {
			cells: map[cellKey][]Span{c1: {span(15*time.Minute, 35*time.Minute, ChartPending)}},
			want:  [][4]int{{0, 0, 0, 0}, {0, 0, 1, 0}, {0, 0, 1, 0}, {0, 0, 1, 0}},
		},
		"the worst state during a bucket": {
			cells: map[cellKey][]Span{c1: {
				span(0, 12*time.Minute, ChartPending), span(12*time.Minute, 13*time.Minute, ChartNonCompliant),
				span(13*time.Minute, 20*time.Minute, ChartCompliant), span(20*time.Minute, 35*time.Minute, ChartCompliant),
			}},
			want: [][4]int{{0, 0, 1, 0}, {0, 1, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}},
		},
		"a gap is incomplete, never compliant": {
			cells: map[cellKey][]Span{c1: {
				span(0, 15*time.Minute, ChartCompliant), span(15*time.Minute, 25*time.Minute, ChartIncomplete),
				span(25*time.Minute, 35*time.Minute, ChartCompliant),
			}},
			want: [][4]int{{1, 0, 0, 0}, {0, 0, 0, 1}, {0, 0, 0, 1}, {1, 0, 0, 0}},
		},
		"each cluster once": {
			cells: map[cellKey][]Span{
				c1: {span(0, 35*time.Minute, ChartCompliant)},
				c2: {span(0, 20*time.Minute, ChartNonCompliant), span(20*time.Minute, 35*time.Minute, ChartCompliant)},
				c3: {span(5*time.Minute, 35*time.Minute, ChartPending)},
			},
			want: [][4]int{{1, 1, 1, 0}, {1, 1, 1, 0}, {2, 0, 1, 0}, {2, 0, 1, 0}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			var got [][4]int
			for i, b := range buckets(tc.cells, t0, 10*time.Minute, 4, now) {
				NewWithT(t).Expect(b.Start).To(Equal(t0.Add(time.Duration(i) * 10 * time.Minute)))
				got = append(got, [4]int{b.Compliant, b.NonCompliant, b.Pending, b.Incomplete})
			}
			NewWithT(t).Expect(got).To(Equal(tc.want))
		})
	}
}

func seconds(s float64) *float64 { return &s }

func TestRemediation(t *testing.T) {
	start := t0
	for name, tc := range map[string]struct {
		spans [][]Span // one list per cluster
		want  Remediation
	}{
		"none": {spans: [][]Span{{span(0, time.Hour, ChartCompliant)}}, want: Remediation{}},
		"NonCompliant to Compliant, through Pending": {
			spans: [][]Span{{
				span(-time.Hour, 0, ChartCompliant), span(0, 10*time.Minute, ChartNonCompliant),
				span(10*time.Minute, 15*time.Minute, ChartPending), span(15*time.Minute, time.Hour, ChartCompliant),
			}},
			want: Remediation{Count: 1, P50Seconds: seconds(900), P90Seconds: seconds(900)},
		},
		"Pending to Compliant is no remediation": {
			spans: [][]Span{{span(0, time.Minute, ChartPending), span(time.Minute, time.Hour, ChartCompliant)}},
			want:  Remediation{},
		},
		"begun before the window, ended in it": {
			spans: [][]Span{{span(-2*time.Hour, 10*time.Minute, ChartNonCompliant), span(10*time.Minute, time.Hour, ChartCompliant)}},
			want:  Remediation{Count: 1, P50Seconds: seconds(7800), P90Seconds: seconds(7800)},
		},
		"ended before the window": {
			spans: [][]Span{{span(-2*time.Hour, -time.Hour, ChartNonCompliant), span(-time.Hour, time.Hour, ChartCompliant)}},
			want:  Remediation{},
		},
		"a gap hides its length": {
			spans: [][]Span{
				{span(0, 10*time.Minute, ChartNonCompliant), span(10*time.Minute, 20*time.Minute, ChartIncomplete),
					span(20*time.Minute, time.Hour, ChartCompliant)},
				{span(0, 10*time.Minute, ChartIncomplete), span(10*time.Minute, 20*time.Minute, ChartNonCompliant),
					span(20*time.Minute, time.Hour, ChartCompliant)},
			},
			want: Remediation{Unmeasured: 2},
		},
		"not remediated yet": {
			spans: [][]Span{
				{span(0, 10*time.Minute, ChartNonCompliant), span(10*time.Minute, time.Hour, ChartPending)},
				{span(0, time.Hour, ChartNonCompliant)},
			},
			want: Remediation{Open: 2},
		},
		"percentiles by nearest rank over clusters and episodes": {
			spans: [][]Span{
				{span(0, time.Minute, ChartNonCompliant), span(time.Minute, 2*time.Minute, ChartCompliant),
					span(2*time.Minute, 12*time.Minute, ChartNonCompliant), span(12*time.Minute, time.Hour, ChartCompliant)},
				{span(0, 3*time.Minute, ChartNonCompliant), span(3*time.Minute, time.Hour, ChartCompliant)},
			},
			want: Remediation{Count: 3, P50Seconds: seconds(180), P90Seconds: seconds(600)},
		},
	} {
		t.Run(name, func(t *testing.T) {
			cells := map[cellKey][]Span{}
			for i, s := range tc.spans {
				cells[cellKey{Cluster: string(rune('a' + i))}] = s
			}
			NewWithT(t).Expect(remediation(cells, start)).To(Equal(tc.want))
		})
	}
}

func TestPercentile(t *testing.T) {
	g := NewWithT(t)
	var ten []time.Duration
	for i := 1; i <= 10; i++ {
		ten = append(ten, time.Duration(i)*time.Second)
	}
	g.Expect(*percentile(ten, 50)).To(Equal(5.0))
	g.Expect(*percentile(ten, 90)).To(Equal(9.0))
	g.Expect(*percentile(ten[:1], 50)).To(Equal(1.0))
	g.Expect(*percentile(ten[:1], 90)).To(Equal(1.0))
}

func TestChartWindow(t *testing.T) {
	now := t0
	for _, tc := range []struct {
		name     string
		earliest time.Time
		want     string
		ok       bool
	}{
		{name: "7d", want: "7d", ok: true},
		{name: "2h"},
		{earliest: time.Time{}, want: "24h", ok: true},
		{earliest: now.Add(-10 * time.Minute), want: "1h", ok: true},
		{earliest: now.Add(-3 * time.Hour), want: "24h", ok: true},
		{earliest: now.Add(-48 * time.Hour), want: "7d", ok: true},
		{earliest: now.Add(-60 * 24 * time.Hour), want: "30d", ok: true},
	} {
		w, ok := chartWindow(tc.name, tc.earliest, now)
		NewWithT(t).Expect(ok).To(Equal(tc.ok), "%s %s", tc.name, tc.earliest)
		NewWithT(t).Expect(w.Name).To(Equal(tc.want), "%s %s", tc.name, tc.earliest)
	}
}

func TestWindowBounds(t *testing.T) {
	g := NewWithT(t)
	now := t0.Add(7*time.Minute + 30*time.Second)
	start, n := ChartWindows[0].bounds(now)
	g.Expect(n).To(Equal(60))
	g.Expect(start).To(Equal(t0.Add(8*time.Minute-time.Hour)), "the last bucket holds now")
	start, n = ChartWindows[3].bounds(now)
	g.Expect(n).To(Equal(120))
	g.Expect(start).To(Equal(t0.Add(6*time.Hour-30*24*time.Hour)), "buckets start at multiples of the step")
}

// TestNewPolicyChart draws the chart of three clusters over 24 hours: a
// Pending cluster turning Compliant, a remediation, a gap.
func TestNewPolicyChart(t *testing.T) {
	g := NewWithT(t)
	at := func(cluster, state string, after time.Duration) history.Transition {
		return history.Transition{Hub: "hub-a", Cluster: cluster, Policy: charted, Template: "cfg", State: state, At: t0.Add(after)}
	}
	res := history.Result{
		Transitions: []history.Transition{
			at("c1", "Pending", 0), at("c1", "Compliant", time.Hour),
			at("c2", "NonCompliant", 0), at("c2", "Compliant", 2*time.Hour),
			at("c3", "Compliant", 30*time.Minute), at("c3", "NonCompliant", 4*time.Hour), at("c3", "Compliant", 5*time.Hour),
		},
		Gaps: []history.Gap{{Hub: "hub-a", Cluster: "c3", Policy: charted, Template: "cfg", From: t0.Add(3 * time.Hour), To: t0.Add(4 * time.Hour)}},
	}
	now := t0.Add(6*time.Hour + 5*time.Minute)
	chart := newPolicyChart(charted, "", res, false, ChartWindows[1], now)
	g.Expect(chart.Start).To(Equal(t0.Add(6*time.Hour + 15*time.Minute - 24*time.Hour)))
	g.Expect(chart.Buckets).To(HaveLen(96))
	g.Expect(chart.StepSeconds).To(Equal(int64(900)))
	g.Expect(chart.Clusters).To(Equal(3))
	byStart := map[time.Duration]Bucket{}
	for _, b := range chart.Buckets {
		byStart[b.Start.Sub(t0)] = b
	}
	g.Expect(byStart[-15*time.Minute]).To(Equal(Bucket{Start: t0.Add(-15 * time.Minute)}), "nothing reported yet")
	g.Expect(byStart[0]).To(Equal(Bucket{Start: t0, NonCompliant: 1, Pending: 1}))
	g.Expect(byStart[30*time.Minute]).To(Equal(Bucket{Start: t0.Add(30 * time.Minute), Compliant: 1, NonCompliant: 1, Pending: 1}))
	g.Expect(byStart[time.Hour]).To(Equal(Bucket{Start: t0.Add(time.Hour), Compliant: 2, NonCompliant: 1}))
	g.Expect(byStart[2*time.Hour]).To(Equal(Bucket{Start: t0.Add(2 * time.Hour), Compliant: 3}))
	g.Expect(byStart[3*time.Hour]).To(Equal(Bucket{Start: t0.Add(3 * time.Hour), Compliant: 2, Incomplete: 1}))
	g.Expect(byStart[4*time.Hour]).To(Equal(Bucket{Start: t0.Add(4 * time.Hour), Compliant: 2, NonCompliant: 1}))
	g.Expect(byStart[6*time.Hour]).To(Equal(Bucket{Start: t0.Add(6 * time.Hour), Compliant: 3}), "the bucket of now")
	g.Expect(chart.Remediation).To(Equal(Remediation{Count: 1, P50Seconds: seconds(7200), P90Seconds: seconds(7200), Unmeasured: 1}),
		"c2 in two hours; c3's began in a gap")

	timeline := newClusterTimeline("c3", "", res, false, ChartWindows[0], now)
	g.Expect(timeline.Start).To(Equal(t0.Add(6*time.Hour + 6*time.Minute - time.Hour)))
	g.Expect(timeline.Policies).To(Equal([]PolicyTimeline{{Hub: "hub-a", Namespace: "policies", Name: "baseline", Spans: []Span{
		{From: timeline.Start, To: now, State: ChartCompliant},
	}}}), "the state at the window's start, carried")
	timeline = newClusterTimeline("c3", "", res, false, ChartWindows[1], now)
	g.Expect(timeline.Policies[0].Spans).To(Equal([]Span{
		span(30*time.Minute, 3*time.Hour, ChartCompliant), span(3*time.Hour, 4*time.Hour, ChartIncomplete),
		span(4*time.Hour, 5*time.Hour, ChartNonCompliant), {From: t0.Add(5 * time.Hour), To: now, State: ChartCompliant},
	}))
}

// FuzzCellSpans checks, for any history, that each cell's spans are in
// order, not empty and end now, that no moment of a gap is Compliant, and
// that each bucket counts each cell at most once.
func FuzzCellSpans(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 1, 1, 30, 1, 0, 3, 10, 20, 2, 0, 2, 90})
	f.Add([]byte{0, 0, 3, 0, 200, 0, 0, 2, 5, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		now := t0.Add(4 * time.Hour)
		var res history.Result
		for i := 0; i+4 < len(data); i += 5 {
			cluster, template := string(rune('a'+data[i]%3)), string(rune('x'+data[i+1]%2))
			at := t0.Add(time.Duration(data[i+3]) * time.Minute)
			if data[i+2]%4 == 3 {
				res.Gaps = append(res.Gaps, history.Gap{Hub: "h", Cluster: cluster, Policy: charted, Template: template,
					From: at, To: at.Add(time.Duration(data[i+4]) * time.Minute)})
				continue
			}
			state := []ChartState{ChartCompliant, ChartNonCompliant, ChartPending}[data[i+2]%4]
			res.Transitions = append(res.Transitions, history.Transition{Hub: "h", Cluster: cluster, Policy: charted,
				Template: template, State: string(state), At: at})
		}
		for _, truncated := range []bool{false, true} {
			cells := cellSpans(res, truncated, now)
			for k, spans := range cells {
				if len(spans) == 0 || !spans[len(spans)-1].To.Equal(now) {
					t.Fatalf("%v: spans %v do not end now", k, spans)
				}
				for i, s := range spans {
					if s.State == "" || !s.From.Before(s.To) || (i > 0 && (!spans[i-1].To.Equal(s.From) || spans[i-1].State == s.State)) {
						t.Fatalf("%v: span %d of %v", k, i, spans)
					}
				}
			}
			for _, g := range res.Gaps {
				for _, s := range cells[cellKey{g.Hub, g.Cluster, g.Policy}] {
					if s.State == ChartCompliant && s.From.Before(g.To) && s.To.After(g.From) && g.From.Before(now) && g.From.Before(g.To) {
						t.Fatalf("Compliant %v during gap %v", s, g)
					}
				}
			}
			for _, b := range buckets(cells, t0, 30*time.Minute, 8, now) {
				if b.Compliant+b.NonCompliant+b.Pending+b.Incomplete > len(cells) {
					t.Fatalf("bucket %v counts more than %d cells", b, len(cells))
				}
			}
		}
	})
}
