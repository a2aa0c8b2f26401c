package operatorpolicy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
)

const kindInstallPlan = "InstallPlan"

// installPlan is what the evaluator reads of an InstallPlan.
type installPlan struct {
	obj        *unstructured.Unstructured
	csvs       []string
	phase      string
	approved   bool
	generation int64
}

func readInstallPlan(obj *unstructured.Unstructured) installPlan {
	ip := installPlan{obj: obj}
	ip.csvs, _, _ = unstructured.NestedStringSlice(obj.Object, "spec", "clusterServiceVersionNames")
	ip.phase, _, _ = unstructured.NestedString(obj.Object, "status", "phase")
	ip.approved, _, _ = unstructured.NestedBool(obj.Object, "spec", "approved")
	ip.generation, _, _ = unstructured.NestedInt64(obj.Object, "spec", "generation")
	return ip
}

// latestInstallPlan picks the InstallPlan of the Subscription's current or
// installed CSV with the highest spec.generation, or the one installing
// (or having installed) the current CSV: OLM may race and make a newer one
// for the same CSV.
func latestInstallPlan(plans []unstructured.Unstructured, st subscriptionStatus) *installPlan {
	var latest *installPlan
	for i := range plans {
		ip := readInstallPlan(&plans[i])
		current := slices.Contains(ip.csvs, st.CurrentCSV) && st.CurrentCSV != ""
		if !current && (st.InstalledCSV == "" || !slices.Contains(ip.csvs, st.InstalledCSV)) {
			continue
		}
		if current && (ip.phase == "Installing" || ip.phase == "Complete") {
			return &ip
		}
		if latest == nil || ip.generation > latest.generation {
			latest = &ip
		}
	}
	return latest
}

// handleInstallPlan reports the Subscription's latest InstallPlan and,
// under enforce, approves it when every CSV in it is allowed: on the first
// installation, or on an upgrade with upgradeApproval Automatic.
func (e *evaluation) handleInstallPlan(ctx context.Context, sub *unstructured.Unstructured) error {
	if sub == nil {
		e.set(invalidCausingUnknownCond(kindInstallPlan))
		return nil
	}
	st := readSubscriptionStatus(sub)
	none := placeholder(installPlanGVK, sub.GetNamespace(), compliant, "There are no relevant InstallPlans in this namespace")
	if st.CurrentCSV == "" && st.InstalledCSV == "" {
		e.set(noInstallPlansCond, none)
		return nil
	}
	plans, err := e.read.list(installPlanGVK, sub.GetNamespace(), labels.Everything())
	if err != nil {
		return err
	}
	ip := latestInstallPlan(plans, st)
	if ip == nil {
		e.set(noInstallPlansCond, none)
		return nil
	}
	if !e.musthave() {
		e.set(notApplicableCond(kindInstallPlan), foundNotApplicableObj(refOf(ip.obj)))
		return nil
	}
	return e.musthaveInstallPlan(ctx, sub, st, ip)
}

func (e *evaluation) musthaveInstallPlan(ctx context.Context, sub *unstructured.Unstructured, st subscriptionStatus, ip *installPlan) error {
	config := e.policy.Spec.ComplianceConfig.UpgradesAvailable
	rel := installPlanObj(refOf(ip.obj), ip.phase, config)
	switch ip.phase {
	case "RequiresApproval":
		if st.InstalledCSV != "" && st.InstalledCSV == st.CurrentCSV {
			e.set(installPlansNoApprovalsCond)
			return nil
		}
	case "Installing":
		e.set(installPlanInstallingCond, rel)
		return nil
	case "Failed":
		// Note: only the current InstallPlan failing is a reason for
		// NonCompliance; OCM also looks into the steps of a plan of
		// several CSVs, which Canopy reports as failed as a whole.
		e.set(installPlanFailedCond, rel)
		return nil
	default:
		e.set(installPlansNoApprovalsCond, rel)
		return nil
	}
	if ip.approved {
		e.set(installPlanApprovedCond(st.CurrentCSV), rel)
		return nil
	}
	initial, auto := st.InstalledCSV == "", e.policy.Spec.UpgradeApproval == "Automatic"
	if !e.enforce() || (!initial && !auto) {
		e.set(installPlanUpgradeCond(config, ip.csvs, nil), rel)
		return nil
	}
	remaining, err := e.remainingApprovals(ctx, sub, ip)
	if err != nil {
		return err
	}
	if len(remaining) > 0 {
		e.set(installPlanUpgradeCond(config, ip.csvs, remaining), rel)
		return nil
	}
	approved := ip.obj.DeepCopy()
	if err := unstructured.SetNestedField(approved.Object, true, "spec", "approved"); err != nil {
		return err
	}
	if err := e.update(ctx, approved); err != nil {
		return err
	}
	e.set(installPlanApprovedCond(st.CurrentCSV), rel)
	return nil
}

// remainingApprovals are the CSVs of the InstallPlan that neither this
// policy nor the enforced policies managing the other Subscriptions of the
// namespace allow.
func (e *evaluation) remainingApprovals(ctx context.Context, sub *unstructured.Unstructured, ip *installPlan) ([]string, error) {
	required := sets.New(ip.csvs...)
	approved := approvedCSVs(e.policy, e.versions, sub, ip)
	if approved.IsSuperset(required) {
		return nil, nil
	}
	managed, err := labels.NewRequirement(ManagedByLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	subs, err := e.read.list(subscriptionGVK, sub.GetNamespace(), labels.NewSelector().Add(*managed))
	if err != nil {
		return nil, err
	}
	for i := range subs {
		other, err := e.managingPolicy(ctx, &subs[i], sub)
		if err != nil || other == nil {
			if err != nil {
				return nil, err
			}
			continue
		}
		// Note: as in OCM, the other policy's versions are taken as
		// written, templates unresolved.
		approved = approved.Union(approvedCSVs(other, canonicalVersions(other.Spec.Versions), &subs[i], ip))
	}
	return sets.List(required.Difference(approved)), nil
}

// managingPolicy is the OperatorPolicy the annotation of the Subscription
// other names, nil for sub itself or when there is none.
func (e *evaluation) managingPolicy(ctx context.Context, other, sub *unstructured.Unstructured) (*policyv1beta1.OperatorPolicy, error) {
	if other.GetUID() == sub.GetUID() || e.policies == nil {
		return nil, nil
	}
	ns, name, ok := strings.Cut(other.GetAnnotations()[ManagedByAnnotation], ".")
	if !ok {
		return nil, nil
	}
	policy := &policyv1beta1.OperatorPolicy{}
	if err := e.policies.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, policy); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return policy, nil
}

// approvedCSVs are the CSVs policy may approve for sub in the InstallPlan
// ip: its current CSV and the CSVs of the packages it requires
// (transitively, read from ip's bundle lookups), when the policy is
// enforced, the installation is the first or upgradeApproval is Automatic,
// and the current CSV's version is allowed.
func approvedCSVs(policy *policyv1beta1.OperatorPolicy, versions []string, sub *unstructured.Unstructured, ip *installPlan) sets.Set[string] {
	st := readSubscriptionStatus(sub)
	if !policy.Spec.RemediationAction.IsEnforce() || st.CurrentCSV == "" ||
		(st.InstalledCSV != "" && policy.Spec.UpgradeApproval != "Automatic") {
		return sets.New[string]()
	}
	starting, _, _ := unstructured.NestedString(sub.Object, "spec", "startingCSV")
	if !versionAllowed(versions, starting, st.CurrentCSV) {
		return sets.New[string]()
	}
	return bundleDependencies(ip.obj, st.CurrentCSV).Insert(st.CurrentCSV)
}

// bundleDependencies are the CSVs the InstallPlan ip resolves for the
// packages csv requires, transitively: each bundle lookup names its CSV
// (identifier), its package (an olm.package property) and the packages it
// requires (olm.package.required properties). Bundle properties that do
// not parse end the search, as in OCM.
func bundleDependencies(ip *unstructured.Unstructured, csv string) sets.Set[string] {
	lookups, _, _ := unstructured.NestedSlice(ip.Object, "status", "bundleLookups")
	packageCSV := map[string]string{}
	requires := map[string][]string{}
	for _, l := range lookups {
		lookup, _ := l.(map[string]any)
		id, _ := lookup["identifier"].(string)
		raw, _ := lookup["properties"].(string)
		if raw == "" {
			continue
		}
		var props struct {
			Properties []struct {
				Type  string         `json:"type"`
				Value map[string]any `json:"value"`
			} `json:"properties"`
		}
		if err := json.Unmarshal([]byte(raw), &props); err != nil {
			break
		}
		for _, p := range props.Properties {
			pkg, _ := p.Value["packageName"].(string)
			switch {
			case pkg == "":
			case p.Type == "olm.package":
				packageCSV[pkg] = id
			case p.Type == "olm.package.required":
				requires[id] = append(requires[id], pkg)
			}
		}
	}
	deps := sets.New[string]()
	for next := []string{csv}; len(next) > 0; {
		cur := next[0]
		next = next[1:]
		for _, pkg := range requires[cur] {
			if dep, ok := packageCSV[pkg]; ok && !deps.Has(dep) && dep != csv {
				deps.Insert(dep)
				next = append(next, dep)
			}
		}
	}
	return deps
}
