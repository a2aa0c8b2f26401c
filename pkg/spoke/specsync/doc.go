// Package specsync mirrors the hub replicas of one managed cluster into the
// managed cluster: each Policy in the hub cluster namespace becomes a Policy
// of the same name in the same-named namespace on the managed cluster
// (created, updated and deleted to match; the namespace is created when
// missing).
//
// It reconciles hub replicas and writes only the spec, labels and
// annotations of local Policies, adding the replica's metadata.generation
// (replica.GenerationAnnotation), which statussync reports back as
// status.evaluatedGeneration once the local Policy is evaluated. It never writes status, in either
// direction: statussync is the only writer of Policy status.
//
// While the hub is unreachable nothing is deleted: the hub cache keeps the
// last listed replicas, so the managed cluster keeps enforcing them.
package specsync
