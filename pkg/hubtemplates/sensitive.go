package hubtemplates

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	depclient "github.com/stolostron/kubernetes-dependency-watches/client"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// clearTextAdvice says how to read a Secret's value in a hub template.
const clearTextAdvice = "read Secret values with fromSecret or copySecretData, or pipe them into protect, " +
	"which encrypt them with the managed cluster's key"

// clearTextSecretError is the failure of a template whose result would
// carry what it read from a Secret in clear text. It names the Secret,
// never its value.
type clearTextSecretError struct {
	// secret is the namespace/name of the Secret whose value the result
	// shows, or "" when the template does not encrypt at all.
	secret string
}

func (e *clearTextSecretError) Error() string {
	if e.secret == "" {
		return "the template reads a Secret with lookup, and its result would reach the managed cluster in clear text: " +
			clearTextAdvice
	}
	return fmt.Sprintf("the template writes a value of Secret %s in clear text (read with lookup), which would reach the "+
		"managed cluster: %s", e.secret, clearTextAdvice)
}

// minSubstringLength is the shortest Secret value searched for inside the
// strings of a result; a shorter one counts only as a whole string, as it
// occurs by chance in unrelated text.
const minSubstringLength = 8

// encryptedValue matches the values "protect", fromSecret and
// copySecretData write, which are not clear text.
var encryptedValue = regexp.MustCompile(regexp.QuoteMeta("$ocm_encrypted:") + "[A-Za-z0-9+/=]+")

// checkSensitive fails a result that the library marks as having read a
// Secret when it may carry a value of that Secret in clear text. A
// template that does not encrypt has read the Secret with lookup (the
// library marks fromSecret and copySecretData too, and those encrypt), so
// it fails whatever it kept of it: even a Secret's metadata can quote its
// data (last-applied-configuration). A template that encrypts fails when a
// value of a Secret its replica read shows in clear in the result: a lookup
// beside a fromSecret, not piped into protect.
func (t *templateRun) checkSensitive(res templates.TemplateResult, encrypted bool) error {
	if !res.HasSensitiveData {
		return nil
	}
	if !encrypted {
		return &clearTextSecretError{}
	}
	if t.read == nil {
		return &clearTextSecretError{} // Note: what it read is unknown, so it cannot be shown safe
	}
	read, err := t.read()
	if errors.Is(err, depclient.ErrNoCacheEntry) {
		return &clearTextSecretError{}
	} else if err != nil {
		return &transientError{fmt.Errorf("listing the objects the templates read: %w", err)}
	}
	var out any
	if err := json.Unmarshal(res.ResolvedJSON, &out); err != nil {
		return fmt.Errorf("reading the resolved template: %w", err)
	}
	clear := clearStrings(out, nil)
	for i := range read {
		if read[i].GetKind() != "Secret" {
			continue
		}
		if showsValue(clear, secretValues(&read[i])) {
			return &clearTextSecretError{secret: read[i].GetNamespace() + "/" + read[i].GetName()}
		}
	}
	return nil
}

// clearStrings appends to out every string of v (keys and values), with
// its encrypted values removed.
func clearStrings(v any, out []string) []string {
	switch v := v.(type) {
	case string:
		return append(out, encryptedValue.ReplaceAllString(v, ""))
	case map[string]any:
		for k, e := range v {
			out = append(clearStrings(e, out), k)
		}
	case []any:
		for _, e := range v {
			out = clearStrings(e, out)
		}
	}
	return out
}

// secretValues returns the non-empty values of a Secret's data, as stored
// (base64) and decoded.
func secretValues(secret *unstructured.Unstructured) []string {
	data, _, _ := unstructured.NestedStringMap(secret.Object, "data")
	var values []string
	for _, v := range data {
		if v == "" {
			continue
		}
		values = append(values, v)
		if decoded, err := base64.StdEncoding.DecodeString(v); err == nil && len(decoded) > 0 {
			values = append(values, string(decoded))
		}
	}
	return values
}

// showsValue reports whether one of strs is, or (for values of
// minSubstringLength or more) contains, one of values.
func showsValue(strs, values []string) bool {
	for _, s := range strs {
		for _, v := range values {
			if s == v || (len(v) >= minSubstringLength && strings.Contains(s, v)) {
				return true
			}
		}
	}
	return false
}
