package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/pkg/hubrbac"
)

// stepKind is what a request on the rolled-out root or one of its replicas
// was, in the hub's audit log.
type stepKind int

const (
	// rootWrite: the test created or changed the root; a phase begins.
	rootWrite stepKind = iota
	// replicaWrite: the hub wrote a replica (not its status).
	replicaWrite
	// report: a cluster's agent wrote its replica's status.
	report
)

// auditStep is one request of the audit log that the rollout check reads.
type auditStep struct {
	kind    stepKind
	cluster string // for replicaWrite and report
	at      string // the request's time, for messages
}

func (s auditStep) String() string {
	return fmt.Sprintf("%s %s at %s", [...]string{"root write", "replica write", "report"}[s.kind], s.cluster, s.at)
}

// rolloutSteps returns, in the audit log's order, the test's writes of
// the root, the hub's writes of the root's replicas (a write cut short by
// the hub's SIGKILL, answered with a server error, may have been
// committed, and counts), and the agents' successful writes of their
// replica's status.
func rolloutSteps(events []controlplane.AuditEvent, clusters []string) []auditStep {
	replicaName := rolloutNS + "." + rolloutRoot
	var steps []auditStep
	for i := range events {
		ev := &events[i]
		ref := ev.ObjectRef
		if ref == nil || ref.Resource != "policies" || ev.Verb == "delete" || ev.Verb == "deletecollection" {
			continue
		}
		at := ev.StageTimestamp.Format("15:04:05.000000")
		switch {
		case ref.Namespace == rolloutNS && ref.Name == rolloutRoot && ref.Subresource == "" && ev.User.Username != hubUser && ev.Succeeded():
			steps = append(steps, auditStep{kind: rootWrite, at: at})
		case !slices.Contains(clusters, ref.Namespace) || ref.Name != replicaName:
		case ref.Subresource == "" && ev.User.Username == hubUser && mayHaveDeleted(ev): // Note: "may have written", the same test
			steps = append(steps, auditStep{kind: replicaWrite, cluster: ref.Namespace, at: at})
		case ref.Subresource == "status" && ev.User.Username == hubrbac.User(ref.Namespace) && ev.Succeeded():
			steps = append(steps, auditStep{kind: report, cluster: ref.Namespace, at: at})
		}
	}
	return steps
}

// earlyWrites returns the writes of a replica of a later decision group
// made, in a phase (from one root write to the next), before every cluster
// of the earlier groups had its replica written in that phase and had
// reported on it after the write that gave it its current generation.
// groups are the decision groups' clusters, in rollout order; changed[k]
// says which clusters' replica generation phase k changed (the phase's
// write of it carries a new spec, which needs a new report).
func earlyWrites(steps []auditStep, groups [][]string, changed []map[string]bool) []string {
	groupOf := map[string]int{}
	for i, g := range groups {
		for _, c := range g {
			groupOf[c] = i
		}
	}
	var (
		violations []string
		phase      = -1
		written    map[string]bool // written in this phase
		reported   = map[string]bool{}
		lastWrite  = map[string]auditStep{}
	)
	for _, s := range steps {
		switch s.kind {
		case rootWrite:
			phase++
			written = map[string]bool{}
		case report:
			reported[s.cluster] = true
		case replicaWrite:
			if phase < 0 || phase >= len(changed) {
				violations = append(violations, fmt.Sprintf("%v outside the test's phases", s))
				continue
			}
			for _, earlier := range groups[:groupOf[s.cluster]] {
				for _, e := range earlier {
					switch {
					case !written[e]:
						violations = append(violations, fmt.Sprintf("phase %d: %v before %s of an earlier group was written", phase, s, e))
					case !reported[e]:
						violations = append(violations, fmt.Sprintf("phase %d: %v before %s of an earlier group reported after its %v",
							phase, s, e, lastWrite[e]))
					}
				}
			}
			written[s.cluster] = true
			if changed[phase][s.cluster] {
				reported[s.cluster], lastWrite[s.cluster] = false, s
			}
		}
	}
	return violations
}

// expectNoEarlyWrite checks earlyWrites on the hub's audit log.
func (f *rolloutFixture) expectNoEarlyWrite() {
	g := f.soft()
	events, err := f.env.Hub.ReadAuditLog()
	g.Expect(err).NotTo(HaveOccurred())
	var groups [][]string
	var clusters []string
	for _, group := range rolloutGroups {
		groups = append(groups, group.Clusters)
		clusters = append(clusters, group.Clusters...)
	}
	changed := make([]map[string]bool, len(f.generations))
	for k, gens := range f.generations {
		changed[k] = map[string]bool{}
		for c, gen := range gens {
			changed[k][c] = k == 0 || gen != f.generations[k-1][c]
		}
	}
	steps := rolloutSteps(events, clusters)
	counts := map[stepKind]int{}
	for _, s := range steps {
		counts[s.kind]++
	}
	f.t.Logf("audit: %d root writes, %d replica writes by the hub, %d reports by the agents; replica generation changed per phase: %v",
		counts[rootWrite], counts[replicaWrite], counts[report], changed)
	g.Expect(counts[rootWrite]).To(Equal(len(f.generations)), "the audit log must hold the test's writes of the root")
	g.Expect(counts[replicaWrite]).To(BeNumerically(">=", len(clusters)), "the audit log must hold the hub's writes of the replicas")
	g.Expect(earlyWrites(steps, groups, changed)).To(BeEmpty(), "replicas of a later group written early")
}

// auditTail reads the hub API server's audit log as it grows.
type auditTail struct {
	path   string
	offset int64
}

// skip moves past what the log holds now.
func (a *auditTail) skip(t *testing.T) { a.replicaWrites(t) }

// replicaWrites counts the hub's writes of replicas logged since the last
// call.
func (a *auditTail) replicaWrites(t *testing.T) int {
	f, err := os.Open(a.path)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	_, err = f.Seek(a.offset, io.SeekStart)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	r := bufio.NewReaderSize(f, 1<<20)
	n := 0
	for {
		line, err := r.ReadBytes('\n')
		if err != nil { // Note: a line cut short is read again next time
			return n
		}
		a.offset += int64(len(line))
		var ev controlplane.AuditEvent
		if json.Unmarshal(line, &ev) != nil || ev.ObjectRef == nil {
			continue
		}
		if ev.User.Username == hubUser && ev.ObjectRef.Resource == "policies" && ev.ObjectRef.Subresource == "" &&
			ev.ObjectRef.Namespace != rolloutNS && ev.Verb != "delete" {
			n++
		}
	}
}

// olmsimObject returns an empty object of one of OLM's kinds.
func olmsimObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}
