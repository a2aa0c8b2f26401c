// Package replica names and builds the replicas of root policies: the
// Policy "<root namespace>.<root name>" the hub's propagator writes in each
// selected cluster's namespace, its labels and annotations, and the
// canonical form of the dependencies it carries.
//
// It is a leaf: the propagator writes replicas with Build; rootstatus, the
// hub template library (pkg/hubtemplates), pkg/report and the CLI read them
// back with RootOf and IsReplica. It is pure and reads nothing.
package replica
