//go:build linux

package bench

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// policyNamespace holds the hub's root policies, bindings and placements.
const policyNamespace = "bench-policies"

// clusterName is the name (and cluster namespace) of managed cluster i.
func clusterName(i int) string { return fmt.Sprintf("cluster-%04d", i) }

func namespace(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func managedCluster(name string) *clusterv1.ManagedCluster {
	return &clusterv1.ManagedCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
	}
}

func placement(name string) *clusterv1beta1.Placement {
	return &clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: policyNamespace}}
}

// decision is PlacementDecision number index (from 1) of placement, which
// lists clusters, as OCM's placement controller writes at most 100 per object.
func decision(placement string, index int, clusters []string) *clusterv1beta1.PlacementDecision {
	pd := &clusterv1beta1.PlacementDecision{ObjectMeta: metav1.ObjectMeta{
		Name:      fmt.Sprintf("%s-decision-%d", placement, index),
		Namespace: policyNamespace,
		Labels: map[string]string{
			clusterv1beta1.PlacementLabel:          placement,
			clusterv1beta1.DecisionGroupIndexLabel: "0",
			clusterv1beta1.DecisionGroupNameLabel:  "",
		},
	}}
	for _, c := range clusters {
		pd.Status.Decisions = append(pd.Status.Decisions, clusterv1beta1.ClusterDecision{ClusterName: c, Reason: "bench"})
	}
	return pd
}

func binding(name, placement string, policies []string) *policyv1.PlacementBinding {
	pb := &policyv1.PlacementBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: policyNamespace},
		PlacementRef: policyv1.PlacementSubject{
			APIGroup: clusterv1beta1.GroupName, Kind: "Placement", Name: placement,
		},
	}
	for _, p := range policies {
		pb.Subjects = append(pb.Subjects, policyv1.Subject{APIGroup: policyv1.GroupName, Kind: "Policy", Name: p})
	}
	return pb
}

// policy is a Policy in namespace with one ConfigurationPolicy template,
// which checks (inform) that the namespace "default" exists, so that it is
// Compliant as soon as it is evaluated.
func policy(namespace, name string, dependsOn ...string) *policyv1.Policy {
	return policyWithTemplate(namespace, name, name, dependsOn...)
}

// policyWithTemplate is policy with the template named template.
func policyWithTemplate(namespace, name, template string, dependsOn ...string) *policyv1.Policy {
	p := &policyv1.Policy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: policyv1.PolicySpec{
			RemediationAction: policyv1.Inform,
			PolicyTemplates:   []policyv1.PolicyTemplate{{ObjectDefinition: rawJSON(configurationPolicy(template))}},
		},
	}
	for _, d := range dependsOn {
		p.Spec.Dependencies = append(p.Spec.Dependencies, policyv1.PolicyDependency{
			TypeMeta:   metav1.TypeMeta{APIVersion: policyv1.GroupVersion.String(), Kind: "Policy"},
			Name:       d,
			Compliance: policyv1.Compliant,
		})
	}
	return p
}

// configurationPolicy is the template of policy name.
func configurationPolicy(name string) map[string]any {
	return map[string]any{
		"apiVersion": policyv1.GroupVersion.String(),
		"kind":       "ConfigurationPolicy",
		"metadata":   map[string]any{"name": name},
		"spec": map[string]any{
			"remediationAction": "inform",
			"severity":          "low",
			"object-templates": []any{map[string]any{
				"complianceType": "musthave",
				"objectDefinition": map[string]any{
					"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "default"},
				},
			}},
		},
	}
}

func rawJSON(v any) runtime.RawExtension {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	return runtime.RawExtension{Raw: data}
}
