package dashboard

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/canopy-policy/canopy/pkg/history"
)

// ChartState is the compliance of a policy on a cluster in the charts:
// Compliant, NonCompliant, Pending, or Incomplete where the history has a
// gap.
type ChartState string

// The chart states, from best to worst.
const (
	// ChartCompliant: every template reported so far is Compliant.
	ChartCompliant ChartState = "Compliant"
	// ChartPending: a template is Pending, none NonCompliant or incomplete.
	ChartPending ChartState = "Pending"
	// ChartIncomplete: the store recorded a gap for a template ("history
	// incomplete"); never counted as compliant.
	ChartIncomplete ChartState = "Incomplete"
	// ChartNonCompliant: a template is NonCompliant.
	ChartNonCompliant ChartState = "NonCompliant"
)

// worse reports whether a is worse than b (an empty state is the best:
// nothing known).
func worse(a, b ChartState) bool { return severity(a) > severity(b) }

func severity(s ChartState) int {
	return map[ChartState]int{ChartCompliant: 1, ChartPending: 2, ChartIncomplete: 3, ChartNonCompliant: 4}[s]
}

// progress orders the states one template reports in the same second,
// which the store keeps in no order (agents stamp events to the second):
// the order a template usually goes through them, Pending (waiting on a
// dependency), then NonCompliant (evaluated), then Compliant.
func progress(s string) int {
	return map[string]int{string(ChartPending): 1, string(ChartNonCompliant): 2, string(ChartCompliant): 3}[s]
}

// ChartWindow is a span of time a chart shows, cut into buckets of Step.
type ChartWindow struct {
	// Name is how requests name it: 1h, 24h, 7d or 30d.
	Name string
	// Span is how far back it reaches.
	Span time.Duration
	// Step is the length of one bucket.
	Step time.Duration
}

// ChartWindows are the windows the charts offer, shortest first.
var ChartWindows = []ChartWindow{
	{Name: "1h", Span: time.Hour, Step: time.Minute},
	{Name: "24h", Span: 24 * time.Hour, Step: 15 * time.Minute},
	{Name: "7d", Span: 7 * 24 * time.Hour, Step: 2 * time.Hour},
	{Name: "30d", Span: 30 * 24 * time.Hour, Step: 6 * time.Hour},
}

// chartWindow returns the window named name; without a name, the shortest
// that holds everything since earliest (the longest when even that does
// not; 24h when nothing is stored). ok is false for an unknown name.
func chartWindow(name string, earliest, now time.Time) (ChartWindow, bool) {
	if name != "" {
		i := slices.IndexFunc(ChartWindows, func(w ChartWindow) bool { return w.Name == name })
		if i < 0 {
			return ChartWindow{}, false
		}
		return ChartWindows[i], true
	}
	if earliest.IsZero() {
		return ChartWindows[1], true
	}
	for _, w := range ChartWindows {
		if !earliest.Before(now.Add(-w.Span + w.Step)) {
			return w, true
		}
	}
	return ChartWindows[len(ChartWindows)-1], true
}

// bounds returns the start of w's first bucket and the number of buckets
// when it ends with the bucket holding now. Buckets start at multiples of
// Step (UTC), so that they stay put from one read to the next.
func (w ChartWindow) bounds(now time.Time) (time.Time, int) {
	end := now.UTC().Truncate(w.Step).Add(w.Step)
	return end.Add(-w.Span), int(w.Span / w.Step)
}

// Span is a state of a policy on a cluster from From until To.
type Span struct {
	// From is when the state began.
	From time.Time `json:"from"`
	// To is when it ended; the time of the answer for the current state.
	To time.Time `json:"to"`
	// State is the state.
	State ChartState `json:"state"`
}

// cellKey names a policy on a cluster of a hub.
type cellKey struct {
	Hub, Cluster string
	Policy       history.Policy
}

// templateKey names a template of a cell.
type templateKey struct {
	cellKey
	Template string
}

// cellSpans returns the compliance of each policy on each cluster in res
// until now, as spans: from its first report on, the worst state of its
// templates reported so far, each template in the state of its newest
// transition, and Incomplete from a gap's start until the template's first
// transition at or after the gap's end. With truncated (res lost its
// oldest transitions to a limit), each template is Incomplete until its
// first transition in res. A time after now (an agent's clock ahead of
// the hub's) counts as now.
func cellSpans(res history.Result, truncated bool, now time.Time) map[cellKey][]Span {
	transitions := map[templateKey][]history.Transition{}
	gaps := map[templateKey][]history.Gap{}
	for _, t := range res.Transitions {
		k := templateKey{cellKey{t.Hub, t.Cluster, t.Policy}, t.Template}
		transitions[k] = append(transitions[k], t)
	}
	for _, g := range res.Gaps {
		k := templateKey{cellKey{g.Hub, g.Cluster, g.Policy}, g.Template}
		gaps[k] = append(gaps[k], g)
	}
	byCell := map[cellKey][][]Span{}
	for k, ts := range transitions {
		byCell[k.cellKey] = append(byCell[k.cellKey], templateSpans(ts, gaps[k], truncated, now))
	}
	for k, gs := range gaps {
		if _, ok := transitions[k]; !ok {
			byCell[k.cellKey] = append(byCell[k.cellKey], templateSpans(nil, gs, truncated, now))
		}
	}
	out := make(map[cellKey][]Span, len(byCell))
	for k, templates := range byCell {
		if spans := worstOf(templates); len(spans) > 0 {
			out[k] = spans
		}
	}
	return out
}

// step is a state reported at a time.
type step struct {
	at    time.Time
	state ChartState
}

// templateSpans returns the spans of one template from its transitions and
// gaps, until now.
func templateSpans(ts []history.Transition, gaps []history.Gap, truncated bool, now time.Time) []Span {
	steps := stepsOf(ts, now)
	incomplete := incompleteSpans(steps, gaps, truncated, now)
	bounds := []time.Time{now}
	for _, s := range steps {
		bounds = append(bounds, s.at)
	}
	for _, s := range incomplete {
		bounds = append(bounds, s.from, s.to)
	}
	slices.SortFunc(bounds, time.Time.Compare)
	bounds = slices.CompactFunc(bounds, time.Time.Equal)
	var out []Span
	next := 0 // the first step after the current bound
	var state ChartState
	for i := 0; i+1 < len(bounds) && bounds[i].Before(now); i++ {
		from, to := bounds[i], bounds[i+1]
		for next < len(steps) && !steps[next].at.After(from) {
			state = steps[next].state
			next++
		}
		s := state
		if slices.ContainsFunc(incomplete, func(in timeSpan) bool { return !from.Before(in.from) && from.Before(in.to) }) {
			s = ChartIncomplete
		}
		out = appendSpan(out, Span{From: from, To: to, State: s})
	}
	return out
}

// clampTo returns t, or now when t is after it.
func clampTo(t, now time.Time) time.Time {
	if t.After(now) {
		return now
	}
	return t
}

// stepsOf returns the state changes of one template's transitions ts, in
// order, none after now: of two in one second, the later in a template's
// usual progress.
func stepsOf(ts []history.Transition, now time.Time) []step {
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(a, b history.Transition) int {
		return cmp.Or(a.At.Compare(b.At), cmp.Compare(progress(a.State), progress(b.State)))
	})
	var steps []step
	for _, t := range ts {
		at := clampTo(t.At, now)
		if n := len(steps); n > 0 && steps[n-1].at.Equal(at) {
			steps[n-1].state = ChartState(t.State) // the later of two in one second
			continue
		}
		steps = append(steps, step{at: at, state: ChartState(t.State)})
	}
	return steps
}

// timeSpan is the time from one instant until another.
type timeSpan struct{ from, to time.Time }

// incompleteSpans returns when the history of one template is incomplete:
// each gap until the first step at or after its end, and, when the rows
// read were truncated, everything before the first step.
func incompleteSpans(steps []step, gaps []history.Gap, truncated bool, now time.Time) []timeSpan {
	resume := func(after time.Time) time.Time {
		i, _ := slices.BinarySearchFunc(steps, after, func(s step, t time.Time) int { return s.at.Compare(t) })
		if i < len(steps) {
			return steps[i].at
		}
		return now
	}
	var incomplete []timeSpan
	if truncated {
		incomplete = append(incomplete, timeSpan{time.Time{}, resume(time.Time{})})
	}
	for _, g := range gaps {
		incomplete = append(incomplete, timeSpan{clampTo(g.From, now), resume(clampTo(g.To, now))})
	}
	return incomplete
}

// appendSpan appends s to spans, merging it into the last span when they
// meet and have one state; a span without a state is dropped.
func appendSpan(spans []Span, s Span) []Span {
	if s.State == "" || !s.From.Before(s.To) {
		return spans
	}
	if n := len(spans); n > 0 && spans[n-1].State == s.State && spans[n-1].To.Equal(s.From) {
		spans[n-1].To = s.To
		return spans
	}
	return append(spans, s)
}

// worstOf returns, over time, the worst state of the templates' spans that
// cover each moment.
func worstOf(templates [][]Span) []Span {
	var bounds []time.Time
	for _, spans := range templates {
		for _, s := range spans {
			bounds = append(bounds, s.From, s.To)
		}
	}
	slices.SortFunc(bounds, time.Time.Compare)
	bounds = slices.CompactFunc(bounds, time.Time.Equal)
	next := make([]int, len(templates)) // per template, its first span not ended
	var out []Span
	for i := 0; i+1 < len(bounds); i++ {
		from, to := bounds[i], bounds[i+1]
		var state ChartState
		for t, spans := range templates {
			for next[t] < len(spans) && !spans[next[t]].To.After(from) {
				next[t]++
			}
			if next[t] < len(spans) && !spans[next[t]].From.After(from) && worse(spans[next[t]].State, state) {
				state = spans[next[t]].State
			}
		}
		out = appendSpan(out, Span{From: from, To: to, State: state})
	}
	return out
}

// Bucket counts the clusters of a policy in each state during one bucket
// of a chart: each cluster once, in the worst state it was in during the
// bucket. A cluster that had reported nothing yet is not counted.
type Bucket struct {
	// Start is when the bucket begins; it lasts the window's step.
	Start time.Time `json:"start"`
	// Compliant counts the clusters Compliant throughout the bucket.
	Compliant int `json:"compliant"`
	// NonCompliant counts the clusters NonCompliant at some time in it.
	NonCompliant int `json:"nonCompliant"`
	// Pending counts the clusters Pending at some time in it, and at
	// none NonCompliant or incomplete.
	Pending int `json:"pending"`
	// Incomplete counts the clusters whose history has a gap in it, and
	// that were NonCompliant at no time in it.
	Incomplete int `json:"incomplete"`
}

// buckets counts cells in each of n buckets of step from start, until now.
func buckets(cells map[cellKey][]Span, start time.Time, step time.Duration, n int, now time.Time) []Bucket {
	out := make([]Bucket, n)
	for i := range out {
		out[i].Start = start.Add(time.Duration(i) * step)
	}
	worst := make([]ChartState, n)
	for _, spans := range cells {
		clear(worst)
		for _, s := range spans {
			from, to := s.From, s.To
			if to.After(now) {
				to = now
			}
			if !from.Before(to) || !to.After(start) {
				continue
			}
			first := max(0, int(from.Sub(start)/step))
			last := min(n-1, int((to.Sub(start)-1)/step))
			for i := first; i <= last; i++ {
				if worse(s.State, worst[i]) {
					worst[i] = s.State
				}
			}
		}
		for i, s := range worst {
			switch s {
			case ChartCompliant:
				out[i].Compliant++
			case ChartNonCompliant:
				out[i].NonCompliant++
			case ChartPending:
				out[i].Pending++
			case ChartIncomplete:
				out[i].Incomplete++
			}
		}
	}
	return out
}

// Remediation is how long a policy took to turn from NonCompliant back to
// Compliant on its clusters. A remediation begins when a cluster turns
// NonCompliant and ends when it is next Compliant (Pending on the way
// counts as not remediated); it counts in the window it ends in.
type Remediation struct {
	// Count is how many remediations ended in the window and were
	// measured.
	Count int `json:"count"`
	// P50Seconds is their median length in seconds (nearest rank); null
	// when Count is 0.
	P50Seconds *float64 `json:"p50Seconds"`
	// P90Seconds is their 90th percentile in seconds (nearest rank);
	// null when Count is 0.
	P90Seconds *float64 `json:"p90Seconds"`
	// Unmeasured counts the remediations that ended in the window but
	// whose length a gap in the history hides.
	Unmeasured int `json:"unmeasured"`
	// Open counts the clusters not remediated yet: NonCompliant, or
	// Pending or incomplete since, at the end of the window.
	Open int `json:"open"`
}

// remediation measures the remediations of cells that ended at or after
// start.
func remediation(cells map[cellKey][]Span, start time.Time) Remediation {
	var r Remediation
	var lengths []time.Duration
	for _, spans := range cells {
		open, tainted := false, false
		var began time.Time
		var previous ChartState
		for _, s := range spans {
			switch s.State {
			case ChartNonCompliant:
				if !open {
					open, began, tainted = true, s.From, previous == ChartIncomplete
				}
			case ChartIncomplete:
				tainted = tainted || open
			case ChartCompliant:
				if open && !s.From.Before(start) {
					if tainted {
						r.Unmeasured++
					} else {
						lengths = append(lengths, s.From.Sub(began))
					}
				}
				open = false
			}
			previous = s.State
		}
		if open {
			r.Open++
		}
	}
	r.Count = len(lengths)
	if r.Count > 0 {
		slices.Sort(lengths)
		r.P50Seconds, r.P90Seconds = percentile(lengths, 50), percentile(lengths, 90)
	}
	return r
}

// percentile returns the p-th percentile of sorted, not empty, by nearest
// rank, in seconds.
func percentile(sorted []time.Duration, p int) *float64 {
	rank := int(math.Ceil(float64(p) / 100 * float64(len(sorted))))
	s := sorted[max(rank, 1)-1].Seconds()
	return &s
}

// clip returns the parts of spans between from and to.
func clip(spans []Span, from, to time.Time) []Span {
	out := []Span{}
	for _, s := range spans {
		if s.From.Before(from) {
			s.From = from
		}
		if s.To.After(to) {
			s.To = to
		}
		if s.From.Before(s.To) {
			out = append(out, s)
		}
	}
	return out
}

// earliest returns the time of the oldest transition or gap in res.
func earliest(res history.Result) time.Time {
	var first time.Time
	for _, t := range res.Transitions {
		if first.IsZero() || t.At.Before(first) {
			first = t.At
		}
	}
	for _, g := range res.Gaps {
		if first.IsZero() || g.From.Before(first) {
			first = g.From
		}
	}
	return first
}
