package configpolicy

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"

	"github.com/canopy-policy/canopy/pkg/compare"
)

// redactedDiff replaces the difference of objects that hold secrets: a
// Secret's, and those of objects resolved from Secrets or encrypted values,
// whatever recordDiff says.
const redactedDiff = "# The difference is redacted because it contains sensitive data."

// censoredDiff replaces the difference when recordDiff is unset and the
// kind may hold sensitive data, or the template reads Secrets or encrypted
// values. The text is OCM's (config-policy-controller
// controllers/configurationpolicy_controller.go, handleDiff).
const censoredDiff = `# The difference is redacted because it contains sensitive data. To override, the ` +
	`spec["object-templates"][].recordDiff field must be set to "InStatus" for the difference to be recorded ` +
	`in the policy status. Consider existing access to the ConfigurationPolicy objects and the etcd ` +
	`encryption configuration before you proceed with an override.`

// recordDiffCensored is the recordDiff of a template whose recordDiff is
// unset and whose objects may hold sensitive data: the difference is
// replaced by censoredDiff. It is internal, as OCM's RecordDiffCensored; the
// API does not accept it.
const recordDiffCensored policyv1.RecordDiff = "Censored"

// diffContext and maxDiffLines shape a recorded diff as OCM's
// generateDiff does (controllers/configurationpolicy_utils.go): 5 lines of
// context, at most 50 lines after the 3 of the header.
const (
	diffContext  = 5
	maxDiffLines = 50
)

// recordDiffFor returns the recordDiff of a template of kind gvk: rd when
// set; unset, InStatus, except for the kinds OCM considers sensitive
// (ObjectTemplate.RecordDiffWithDefault), which are censored.
func recordDiffFor(rd policyv1.RecordDiff, gvk schema.GroupVersionKind) policyv1.RecordDiff {
	if rd != "" {
		return rd
	}
	switch {
	case gvk.Group == "" && (gvk.Kind == "ConfigMap" || gvk.Kind == "Secret"),
		gvk.Group == "oauth.openshift.io" && (gvk.Kind == "OAuthAccessToken" || gvk.Kind == "OAuthAuthorizeTokens"),
		gvk.Group == "route.openshift.io" && gvk.Kind == "Route":
		return recordDiffCensored
	}
	return policyv1.RecordDiffInStatus
}

// objectDiff returns a unified diff, in YAML, from the object on the
// cluster to the object that would comply, for recordDiff: OCM's format,
// cut after maxDiffLines lines with OCM's "# Truncated" header.
// Server-managed metadata is left out, and Secrets are never shown.
func objectDiff(id string, existing, desired map[string]any) string {
	if kind, _ := existing["kind"].(string); kind == "Secret" {
		return redactedDiff
	}
	a, errA := yaml.Marshal(withoutManagedFields(existing))
	b, errB := yaml.Marshal(withoutManagedFields(desired))
	if errA != nil || errB != nil {
		return ""
	}
	out, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: difflib.SplitLines(string(a)), B: difflib.SplitLines(string(b)),
		FromFile: id + " : existing", ToFile: id + " : updated", Context: diffContext,
	})
	if err != nil {
		return ""
	}
	lines := strings.Split(out, "\n")
	if len(lines) > maxDiffLines+3 {
		return fmt.Sprintf("# Truncated: showing %d/%d diff lines:\n%s", maxDiffLines, len(lines), strings.Join(lines[:maxDiffLines+3], "\n"))
	}
	return out
}

// withoutManagedFields returns obj without what OCM leaves out of a diff:
// managedFields, generation and kubectl's last-applied annotation (and the
// annotations then empty). resourceVersion and uid stay, as in OCM's
// diffs, as context.
func withoutManagedFields(obj map[string]any) map[string]any {
	out := compare.DeepCopy(obj).(map[string]any)
	if meta, ok := out["metadata"].(map[string]any); ok {
		delete(meta, "managedFields")
		delete(meta, "generation")
		if annotations, ok := meta["annotations"].(map[string]any); ok {
			delete(annotations, lastApplied)
			if len(annotations) == 0 {
				delete(meta, "annotations")
			}
		}
	}
	return out
}
