package replica

import (
	"strconv"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// A replica's status.evaluatedGeneration says which generation of the
// replica the managed cluster's agent has fully evaluated. The agent's
// controllers pass that generation along with these annotations and
// versions, from the hub replica down to the compliance events:
//
//   - specsync copies the replica to a local Policy on the managed cluster,
//     with the replica's metadata.generation in GenerationAnnotation (the
//     local Policy has a generation of its own);
//   - templatesync writes every template object of a local Policy with the
//     Policy's metadata.generation in PolicyGenerationAnnotation, part of
//     the hash the evaluators report as the version they evaluated, so that
//     every change of the Policy, also one that reaches no template object,
//     is evaluated and reported again; its own compliance events (a
//     template without an object: Pending, an error) carry
//     TemplateSyncVersion of that generation;
//   - statussync sets status.evaluatedGeneration of the local Policy, which
//     it copies to the replica, to GenerationAnnotation once the newest
//     compliance event of every template is about the Policy's current
//     generation.

// GenerationAnnotation holds, on a managed cluster's local copy of a
// replica, the metadata.generation of the hub replica it was copied from.
const GenerationAnnotation = "specsync.canopy.io/replica-generation"

// PolicyGenerationAnnotation holds, on a policy template object, the
// metadata.generation of the local Policy it was written from.
const PolicyGenerationAnnotation = "templatesync.canopy.io/policy-generation"

// CopiedGeneration returns the hub replica generation a local Policy was
// copied from (GenerationAnnotation), and whether it has a valid one.
func CopiedGeneration(local *policyv1.Policy) (int64, bool) {
	gen, err := strconv.ParseInt(local.Annotations[GenerationAnnotation], 10, 64)
	return gen, err == nil && gen > 0
}

// TemplateSyncVersion is the version on templatesync's compliance events
// about a template of the local Policy at generation: the version of the
// template it reported on, which has no object of its own.
func TemplateSyncVersion(generation int64) string {
	return "policy-generation-" + strconv.FormatInt(generation, 10)
}
