package configpolicy

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"strconv"
	"strings"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
)

// redactedValue replaces a resolved value in messages about objects whose
// templates read a Secret or decrypted a value.
const redactedValue = "[redacted]"

// plainMaskLength is the least length of a resolved value masked where it
// appears unquoted; shorter ones are masked only in quotes, as API errors
// quote values, so that they do not mask ordinary words.
const plainMaskLength = 8

// sensitively runs evaluate, the evaluation of objects resolved from
// Secrets or encrypted values, and keeps those values out of what it
// reports: diffs are replaced by redactedDiff (recordDiff Log records that
// notice in the status instead of logging; unset, OCM's censoredDiff), and the values resolution put
// in the objects — those not in written, the definition as written — are
// masked in messages and in the errors that are retried or logged. Names,
// namespaces and kinds stay: messages name objects. customMessage does not
// see these objects.
func (e *evaluation) sensitively(written []byte, objects []*objectTemplate, evaluate func() templateOutcome) templateOutcome {
	values := map[string]bool{}
	for _, d := range objects {
		switch d.recordDiff {
		case policyv1.RecordDiffLog:
			d.recordDiff = policyv1.RecordDiffInStatus
		case "":
			d.recordDiff = recordDiffCensored // as OCM, unset on a template that reads sensitive data
		}
		collectValues(d.object, values)
		delete(values, d.name)
		delete(values, d.namespace)
	}
	for v := range values {
		if bytes.Contains(written, []byte(v)) {
			delete(values, v)
		}
	}
	invalid, transient := len(e.invalid), len(e.transient)
	out := evaluate()
	out.objects = nil // a customMessage never shows what these objects hold
	mask := masker(values)
	for i := range out.results {
		out.results[i].message = mask.Replace(out.results[i].message)
	}
	for i := range out.related {
		out.related[i].Reason = mask.Replace(out.related[i].Reason)
		if p := out.related[i].Properties; p != nil && p.Diff != "" && p.Diff != censoredDiff {
			p.Diff = redactedDiff
		}
	}
	for i := invalid; i < len(e.invalid); i++ {
		e.invalid[i] = mask.Replace(e.invalid[i])
	}
	for i := transient; i < len(e.transient); i++ {
		e.transient[i] = errors.New(mask.Replace(e.transient[i].Error()))
	}
	return out
}

// collectValues adds the string values of obj, but its kind and
// apiVersion, to values.
func collectValues(obj map[string]any, values map[string]bool) {
	for k, v := range obj {
		if k == "kind" || k == "apiVersion" {
			continue
		}
		collectValue(v, values)
	}
}

func collectValue(v any, values map[string]bool) {
	switch v := v.(type) {
	case string:
		if v != "" {
			values[v] = true
		}
	case map[string]any:
		for _, x := range v {
			collectValue(x, values)
		}
	case []any:
		for _, x := range v {
			collectValue(x, values)
		}
	}
}

// masker replaces each value, quoted (as Go and the API server quote
// values in errors) or, when long enough, as it is, longest first.
func masker(values map[string]bool) *strings.Replacer {
	keys := make([]string, 0, len(values))
	for v := range values {
		keys = append(keys, v)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	var pairs []string
	for _, v := range keys {
		pairs = append(pairs, strconv.Quote(v), strconv.Quote(redactedValue))
	}
	for _, v := range keys {
		if len(v) >= plainMaskLength {
			pairs = append(pairs, v, redactedValue)
		}
	}
	return strings.NewReplacer(pairs...)
}
