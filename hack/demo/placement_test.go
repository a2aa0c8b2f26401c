package main

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	clusterv1beta2 "open-cluster-management.io/api/cluster/v1beta2"
)

func TestDecide(t *testing.T) {
	cluster := func(name string, l map[string]string) clusterv1.ManagedCluster {
		return clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	clusters := []clusterv1.ManagedCluster{
		cluster("c3", map[string]string{"environment": "dev"}),
		cluster("c1", map[string]string{"environment": "dev", "canary": "true"}),
		cluster("c2", map[string]string{"environment": "prod", clusterv1beta2.ClusterSetLabel: "prod"}),
	}
	byLabel := func(k, v string) clusterv1beta1.ClusterPredicate {
		return clusterv1beta1.ClusterPredicate{RequiredClusterSelector: clusterv1beta1.ClusterSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{k: v}}}}
	}
	tests := []struct {
		name string
		spec clusterv1beta1.PlacementSpec
		want []string
	}{
		{name: "everything", want: []string{"c1", "c2", "c3"}},
		{name: "default set", spec: clusterv1beta1.PlacementSpec{ClusterSets: []string{"default"}}, want: []string{"c1", "c3"}},
		{name: "label", spec: clusterv1beta1.PlacementSpec{Predicates: []clusterv1beta1.ClusterPredicate{byLabel("canary", "true")}},
			want: []string{"c1"}},
		{name: "predicates are alternatives", spec: clusterv1beta1.PlacementSpec{
			Predicates: []clusterv1beta1.ClusterPredicate{byLabel("canary", "true"), byLabel("environment", "prod")}},
			want: []string{"c1", "c2"}},
		{name: "number of clusters", spec: clusterv1beta1.PlacementSpec{NumberOfClusters: ptr.To[int32](2)},
			want: []string{"c1", "c2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decide(&clusterv1beta1.Placement{Spec: tt.spec}, clusters)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}
