package configpolicy

import (
	"fmt"
	"math/rand/v2"
	"path"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// TestSelectionChangedModel drives the memory of what each evaluation's
// namespaceSelector chose through seeded random sequences of namespace
// creations, deletions, relabellings and terminations, evaluations,
// namespace events and agent restarts, and checks each event's decision
// (evaluate now or not) against a small model: a namespace event evaluates
// the policy exactly when the namespaces the selector chooses now differ
// from those the last evaluation chose, except right after a restart,
// when nothing is remembered and the interval decides.
func TestSelectionChangedModel(t *testing.T) {
	selectors := []policyv1.NamespaceSelector{
		{Target: policyv1.Target{Include: []policyv1.NonEmptyString{"t-*"}}},
		{Target: policyv1.Target{Include: []policyv1.NonEmptyString{"*"}, Exclude: []policyv1.NonEmptyString{"u-*"}}},
		{Target: policyv1.Target{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}},
		{Target: policyv1.Target{Include: []policyv1.NonEmptyString{"t-*"},
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}, TerminatingInclusion: policyv1.TerminatingNever},
	}
	names := []string{"t-a", "t-b", "u-c", "v-d"}
	key := types.NamespacedName{Namespace: "c", Name: "p"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 0))
		sel := selectors[rng.IntN(len(selectors))]
		parsed, err := parseNamespaceSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		cluster := map[string]*namespace{}
		var mem selections
		var remembered map[string]bool // the model's: nil means nothing known
		for step := range 40 {
			switch op := rng.IntN(6); op {
			case 0, 1: // a namespace created, relabelled or terminating
				n := names[rng.IntN(len(names))]
				ns := &namespace{name: n, labels: map[string]string{"env": []string{"prod", "dev"}[rng.IntN(2)]}}
				ns.terminating = rng.IntN(4) == 0
				cluster[n] = ns
			case 2: // a namespace gone
				delete(cluster, names[rng.IntN(len(names))])
			case 3: // an evaluation
				mem.set(key, parsed.selectNamespaces(list(cluster)))
				remembered = modelChoice(sel, cluster)
			case 4: // the agent restarts: nothing remembered
				mem, remembered = selections{}, nil
			case 5: // a namespace event reaches the policy
				want := remembered != nil && !sameSet(remembered, modelChoice(sel, cluster))
				if remembered == nil {
					remembered = modelChoice(sel, cluster) // the first look remembers
				}
				if got := mem.changed(key, parsed.selectNamespaces(list(cluster))); got != want {
					t.Fatalf("seed %d step %d: evaluate now = %v, the model says %v (selector %+v)", seed, step, got, want, sel)
				}
			}
		}
	}
}

func list(cluster map[string]*namespace) []namespace {
	var out []namespace
	for _, ns := range cluster {
		out = append(out, *ns)
	}
	return out
}

// modelChoice is the model's namespaceSelector: glob patterns on the name,
// env=prod when a label selector is set, terminating namespaces unless
// Never; nothing without include patterns or a label selector.
func modelChoice(sel policyv1.NamespaceSelector, cluster map[string]*namespace) map[string]bool {
	out := map[string]bool{}
	if len(sel.Include) == 0 && sel.LabelSelector == nil {
		return out
	}
	for n, ns := range cluster {
		matches := func(patterns []policyv1.NonEmptyString) bool {
			for _, p := range patterns {
				if ok, _ := path.Match(string(p), n); ok {
					return true
				}
			}
			return false
		}
		switch {
		case ns.terminating && sel.TerminatingInclusion == policyv1.TerminatingNever:
		case len(sel.Include) > 0 && !matches(sel.Include), matches(sel.Exclude):
		case sel.LabelSelector != nil && ns.labels["env"] != "prod":
		default:
			out[n] = true
		}
	}
	return out
}

func sameSet(a, b map[string]bool) bool {
	return fmt.Sprint(a) == fmt.Sprint(b) // fmt sorts map keys
}
