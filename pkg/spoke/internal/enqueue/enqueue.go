// Package enqueue turns listed objects into reconcile requests, for the
// map functions of controllers that re-evaluate every object of a list
// when something they all depend on changes.
//
// This package is a leaf: it imports only controller-runtime.
package enqueue

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Each returns one request for each of items, the Items of a typed list,
// in their order: Each(list.Items).
func Each[T any, P interface {
	*T
	client.Object
}](items []T) []reconcile.Request {
	reqs := make([]reconcile.Request, len(items))
	for i := range items {
		reqs[i].NamespacedName = client.ObjectKeyFromObject(P(&items[i]))
	}
	return reqs
}
