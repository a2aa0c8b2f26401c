package templatesync

import (
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// templateComplianceChanged passes an update of a Policy whose templates'
// compliance in status changed: the status may then show something other
// than what templatesync reports for a template (a stale event, a status
// written by an older agent), which record puts right. Other status
// updates (every compliance event writes one) are left out.
var templateComplianceChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*policyv1.Policy)
		updated, okNew := e.ObjectNew.(*policyv1.Policy)
		return okOld && okNew && !maps.Equal(templateCompliance(old), templateCompliance(updated))
	},
}

// templateCompliance returns the compliance of each template in p's status.
func templateCompliance(p *policyv1.Policy) map[string]policyv1.ComplianceState {
	out := make(map[string]policyv1.ComplianceState, len(p.Status.Details))
	for _, d := range p.Status.Details {
		out[d.TemplateMeta.Name] = d.ComplianceState
	}
	return out
}
