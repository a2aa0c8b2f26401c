// Package compare is Canopy's one comparison of Kubernetes objects held as
// JSON values (what unstructured.Unstructured holds: maps, lists, strings,
// numbers, bools and nil). configpolicy compares object templates with the
// objects on the cluster, the hierarchical syncer compares declared objects
// with observed ones, and templatesync compares the policy templates it
// writes with what the API server returns; all three use Matches with a
// Mode, so a number or a quantity compares the same everywhere.
//
// The rules every Mode shares:
//
//   - Numbers compare by value whatever their Go type: int64 1, float64 1.0
//     and json.Number "1" are equal (integers exactly, others as float64).
//   - Unless the Mode is Literal, two strings that are both resource
//     quantities compare as quantities: "1Gi" matches "1024Mi".
//   - A map or a list never matches a scalar, nor a map a list.
//
// The Mode then says whether actual may hold more than the template
// (NoExtra), whether lists are bags or sequences (InOrder), and whether a
// zero value in the template matches a missing field (Present). Subset and
// Exact are a ConfigurationPolicy's musthave and mustonlyhave; Ordered is
// the syncer's rule for declared fields; Equal is plain equality with
// numbers by value.
//
// Merge computes the value that complies under a Mode changing actual as
// little as possible, and DeepCopy and MapLeaves copy JSON values.
//
// This package is a leaf: it imports only apimachinery.
package compare
