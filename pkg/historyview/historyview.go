package historyview

import (
	"crypto/sha256"
	"fmt"
	"time"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// Policy names a root policy on a hub.
type Policy struct {
	// Namespace is the root policy's namespace on the hub.
	Namespace string `json:"namespace"`
	// Name is the root policy's name.
	Name string `json:"name"`
}

// String returns "<namespace>/<name>".
func (p Policy) String() string { return p.Namespace + "/" + p.Name }

// Transition is one compliance event an agent reported for one template of
// one replica.
type Transition struct {
	// Hub is the name of the hub that recorded it (--hub-name).
	Hub string `json:"hub"`
	// Cluster is the managed cluster of the replica.
	Cluster string `json:"cluster"`
	// Policy is the root policy the replica copies.
	Policy Policy `json:"policy"`
	// Template is the policy template's name.
	Template string `json:"template"`
	// State is Compliant, NonCompliant or Pending.
	State string `json:"state"`
	// Message is the event message after its state.
	Message string `json:"message"`
	// At is the agent's timestamp of the event.
	At time.Time `json:"at"`
}

// Key returns the content key of t: the hash of everything it says, which
// makes writing t twice write it once.
func (t Transition) Key() []byte {
	h := sha256.New()
	for _, f := range []string{t.Hub, t.Cluster, t.Policy.Namespace, t.Policy.Name, t.Template, t.State, t.Message, t.At.UTC().Format(time.RFC3339Nano)} {
		fmt.Fprintf(h, "%d:%s", len(f), f)
	}
	return h.Sum(nil)
}

// Gap says that more transitions of one template happened between From and
// To than the replica's status history held when the hub read it: the
// history there is incomplete, never compliant.
type Gap struct {
	// Hub is the name of the hub that recorded it.
	Hub string `json:"hub"`
	// Cluster is the managed cluster of the replica.
	Cluster string `json:"cluster"`
	// Policy is the root policy the replica copies.
	Policy Policy `json:"policy"`
	// Template is the policy template's name.
	Template string `json:"template"`
	// From is the newest transition stored before the gap (or when the
	// replica was created, when none was).
	From time.Time `json:"from"`
	// To is the oldest transition the history still held after the gap.
	To time.Time `json:"to"`
}

// HistoryView is the answer of /api/history: the compliance transitions and
// gaps of one policy, or of the members of one policy set, oldest first. A
// gap is "history incomplete" between From and To, never compliant.
type HistoryView struct {
	// Kind is Policy or PolicySet.
	Kind string `json:"kind"`
	// Namespace and Name name the policy or policy set.
	Namespace string `json:"namespace"`
	// Name is the policy's or policy set's name.
	Name string `json:"name"`
	// Policies are the root policies whose history this is.
	Policies []Policy `json:"policies"`
	// Cluster is the cluster asked for; empty means every cluster.
	Cluster string `json:"cluster,omitempty"`
	// Since is the start of the window.
	Since time.Time `json:"since"`
	// Truncated is true when more transitions matched than one answer
	// holds; the newest are shown.
	Truncated bool `json:"truncated,omitempty"`
	// Transitions are the compliance transitions, oldest first.
	Transitions []Transition `json:"transitions"`
	// Gaps are the spans where the history is incomplete.
	Gaps []Gap `json:"gaps"`
}

// How recent a hub's data is in the fleet view (FleetHub.Freshness).
const (
	// FreshnessRecent is a hub that wrote within StaleAfter.
	FreshnessRecent = "recent"
	// FreshnessStale is a hub that has not written for StaleAfter: it may
	// be down or cut off from the database, or nothing changed on its
	// clusters; the database cannot tell which.
	FreshnessStale = "stale"
	// FreshnessUnknown is a hub of which the database holds nothing.
	FreshnessUnknown = "unknown"
)

// FleetView is the answer of /api/fleet: the compliance of every cluster of
// every hub that records to the shared history database, grouped by hub,
// and each policy rolled up across the hubs. Each cluster's compliance is
// the newest its hub recorded, as of the time given; how old each hub's
// data is says how far to trust it.
type FleetView struct {
	// Hub is the hub serving this view.
	Hub string `json:"hub"`
	// ReadAt is when the database was read, by its clock.
	ReadAt time.Time `json:"readAt"`
	// StaleAfter is how long a hub may go without writing before its data
	// is stale, as a Go duration.
	StaleAfter string `json:"staleAfter"`
	// Hubs are every hub that wrote to the database, and this one, by name.
	Hubs []FleetHub `json:"hubs"`
	// Policies are the policies of every hub, one row per namespace/name
	// however many hubs apply it.
	Policies []FleetPolicy `json:"policies"`
}

// FleetHub is one hub of the fleet with its clusters.
type FleetHub struct {
	// Name is the hub's --hub-name.
	Name string `json:"name"`
	// LastWrite is when the hub last wrote to the database (its clock);
	// absent when it never did.
	LastWrite *time.Time `json:"lastWrite,omitempty"`
	// NewestEvent is the agent's time of the newest transition the hub
	// stored; absent when it stored none.
	NewestEvent *time.Time `json:"newestEvent,omitempty"`
	// DataAgeSeconds is how long before ReadAt the hub last wrote; absent
	// when unknown.
	DataAgeSeconds *int64 `json:"dataAgeSeconds,omitempty"`
	// DataAge is DataAgeSeconds as a Go duration, or "unknown".
	DataAge string `json:"dataAge"`
	// Freshness is FreshnessRecent, FreshnessStale or FreshnessUnknown.
	Freshness string `json:"freshness"`
	// Note says in words what Freshness means for this hub.
	Note string `json:"note"`
	// Clusters are the hub's clusters, by name.
	Clusters []FleetCluster `json:"clusters"`
}

// FleetCluster is one managed cluster of one hub.
type FleetCluster struct {
	// Name is the cluster's name on its hub.
	Name string `json:"name"`
	// Compliant aggregates its policies (NonCompliant > Pending > Compliant).
	Compliant policyv1.ComplianceState `json:"compliant"`
	// Policies are its policies, by namespace and name.
	Policies []FleetCell `json:"policies"`
}

// FleetCell is one policy on one cluster of one hub.
type FleetCell struct {
	// Policy names the root policy.
	Policy Policy `json:"policy"`
	// Compliant aggregates the newest recorded state of its templates.
	Compliant policyv1.ComplianceState `json:"compliant"`
	// AsOf is the agent's time of the newest of those states.
	AsOf time.Time `json:"asOf"`
}

// FleetPolicy is one policy (namespace/name) rolled up across every hub
// that applies it.
type FleetPolicy struct {
	// Namespace is the root policy's namespace on each hub.
	Namespace string `json:"namespace"`
	// Name is the root policy's name.
	Name string `json:"name"`
	// Compliant aggregates every cluster's.
	Compliant policyv1.ComplianceState `json:"compliant"`
	// Hubs are the hubs that apply it, by name.
	Hubs []string `json:"hubs"`
	// StaleHubs are those of Hubs whose data is stale.
	StaleHubs []string `json:"staleHubs,omitempty"`
	// Clusters counts its clusters, a cluster being one per hub.
	Clusters int `json:"clusters"`
	// CompliantClusters counts those that are Compliant.
	CompliantClusters int `json:"compliantClusters"`
	// NonCompliantClusters counts those that are NonCompliant.
	NonCompliantClusters int `json:"nonCompliantClusters"`
	// PendingClusters counts those that are Pending.
	PendingClusters int `json:"pendingClusters"`
	// Summary says it in words: "5/6 clusters compliant across 3 hubs (1
	// NonCompliant)", and which hubs' data is stale.
	Summary string `json:"summary"`
}
