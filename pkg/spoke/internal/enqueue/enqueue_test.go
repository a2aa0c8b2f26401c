package enqueue_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/canopy-policy/canopy/pkg/spoke/internal/enqueue"
)

func TestEach(t *testing.T) {
	g := NewWithT(t)
	list := &corev1.ConfigMapList{Items: []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "one"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "cluster-scoped"}},
	}}
	g.Expect(enqueue.Each(list.Items)).To(Equal([]reconcile.Request{
		{NamespacedName: types.NamespacedName{Namespace: "a", Name: "one"}},
		{NamespacedName: types.NamespacedName{Name: "cluster-scoped"}},
	}))
	g.Expect(enqueue.Each([]corev1.ConfigMap{})).To(BeEmpty())
}
