package configpolicy

import (
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/pkg/compare"
)

// redactedDiff replaces the difference of objects that hold secrets.
const redactedDiff = "# The difference is redacted because it contains sensitive data."

// objectDiff returns a unified diff, in YAML, from the object on the
// cluster to the object that would comply, for recordDiff. Server-managed
// metadata is left out, and Secrets are never shown.
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
		FromFile: id + " : existing", ToFile: id + " : updated", Context: 1,
	})
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(out, "\n")
}

func withoutManagedFields(obj map[string]any) map[string]any {
	out := compare.DeepCopy(obj).(map[string]any)
	if meta, ok := out["metadata"].(map[string]any); ok {
		delete(meta, "managedFields")
		delete(meta, "resourceVersion")
		delete(meta, "generation")
	}
	return out
}
