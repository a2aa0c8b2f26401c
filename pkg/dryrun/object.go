package dryrun

import "github.com/canopy-policy/canopy/pkg/compare"

// Redacted replaces, in an Action's Object, a value a plan must never
// show: a Secret's, or one resolved from a Secret or an encrypted value.
const Redacted = "[redacted]"

// lastApplied is kubectl's copy of the whole object, a Secret's data
// included; a plan never changes it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Shown returns a copy of obj, an object a plan would write, as a plan
// shows it: its metadata only name, namespace, labels and annotations
// (without kubectl's last-applied configuration), no status, and for a
// Secret every value of data and stringData replaced by Redacted.
func Shown(obj map[string]any) map[string]any {
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		switch k {
		case "status":
		case "metadata":
			out[k] = shownMetadata(v)
		default:
			out[k] = compare.DeepCopy(v)
		}
	}
	if out["kind"] == "Secret" && out["apiVersion"] == "v1" {
		for _, field := range []string{"data", "stringData"} {
			if values, ok := out[field].(map[string]any); ok {
				for key := range values {
					values[key] = Redacted
				}
			}
		}
	}
	return out
}

func shownMetadata(v any) map[string]any {
	meta, _ := v.(map[string]any)
	out := map[string]any{}
	for _, k := range []string{"name", "namespace", "labels", "annotations"} {
		if x, ok := meta[k]; ok && x != nil {
			out[k] = compare.DeepCopy(x)
		}
	}
	if annotations, ok := out["annotations"].(map[string]any); ok {
		delete(annotations, lastApplied)
		if len(annotations) == 0 {
			delete(out, "annotations")
		}
	}
	return out
}
