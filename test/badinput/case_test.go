package badinput_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Places a case's expectation can name.
const (
	placeRejected            = "rejected"
	placeRoot                = "root"
	placeReplica             = "replica"
	placePolicySet           = "policyset"
	placeConfigurationPolicy = "configurationpolicy"
	placeHierarchyPolicy     = "hierarchypolicy"
)

// clusterAnnotation sends an object of a case to the managed cluster.
const clusterAnnotation = "badinput.canopy.io/cluster"

// afterAnnotation, set to "settled", holds an object of a case back until
// every case has settled (its expectations met): input that arrives late,
// such as a stale compliance event. Its strings may hold the late tokens
// (lateToken).
const afterAnnotation = "badinput.canopy.io/after"

// expectation is one "# expect:" or "# expect-late:" line of a case.
type expectation struct {
	place string
	name  string
	re    *regexp.Regexp
}

func (e expectation) String() string { return e.place + " " + e.name + ": " + e.re.String() }

// testCase is one file of the corpus.
type testCase struct {
	name   string
	expect []expectation
	// expectLate, when not empty, is what the case's late input must
	// bring about (in order), instead of its expectations holding on.
	expectLate []expectation
	nobind     bool
	hub        []*unstructured.Unstructured
	managed    []*unstructured.Unstructured
	// lateHub and lateManaged are applied once every case has settled.
	lateHub, lateManaged []*unstructured.Unstructured
}

// rejected tells whether the case expects the hub API server to refuse it.
func (tc testCase) rejected() bool {
	return slices.ContainsFunc(tc.expect, func(e expectation) bool { return e.place == placeRejected })
}

var (
	expectLine = regexp.MustCompile(`^#\s*expect(-late)?:\s*(\w+)(?:\s+([^:\s]+))?:\s*(.+)$`)
	padToken   = regexp.MustCompile(`\$PAD\((\d+)\)`)
)

// loadCases reads every case of dir.
func loadCases(dir, cluster string) ([]testCase, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var cases []testCase
	for _, f := range files {
		tc, err := loadCase(f, cluster)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		cases = append(cases, tc)
	}
	return cases, nil
}

func loadCase(file, cluster string) (testCase, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return testCase{}, err
	}
	tc := testCase{name: strings.TrimSuffix(filepath.Base(file), ".yaml")}
	text := expand(string(raw), tc.name, cluster)
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "# nobind" {
			tc.nobind = true
		}
		m := expectLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		re, err := regexp.Compile(m[4])
		if err != nil {
			return tc, fmt.Errorf("expectation %q: %w", line, err)
		}
		e := expectation{place: m[2], name: m[3], re: re}
		if m[1] != "" {
			tc.expectLate = append(tc.expectLate, e)
		} else {
			tc.expect = append(tc.expect, e)
		}
	}
	if len(tc.expect) == 0 {
		return tc, errors.New("no '# expect:' line")
	}
	objs, err := decodeAll(text)
	if err != nil {
		return tc, err
	}
	for _, o := range objs {
		late := o.GetAnnotations()[afterAnnotation] == "settled"
		unstructured.RemoveNestedField(o.Object, "metadata", "annotations", afterAnnotation)
		if o.GetAnnotations()[clusterAnnotation] == "managed" {
			unstructured.RemoveNestedField(o.Object, "metadata", "annotations", clusterAnnotation)
			tc.managed, tc.lateManaged = appendTo(tc.managed, tc.lateManaged, late, o)
			continue
		}
		if o.GetNamespace() == "" && o.GetKind() != "Namespace" {
			o.SetNamespace(tc.name)
		}
		tc.hub, tc.lateHub = appendTo(tc.hub, tc.lateHub, late, o)
	}
	if len(tc.expectLate) > 0 && len(tc.lateHub)+len(tc.lateManaged) == 0 {
		return tc, errors.New("'# expect-late:' without late input")
	}
	return tc, nil
}

// appendTo appends o to late when it is late, to now otherwise.
func appendTo(now, late []*unstructured.Unstructured, isLate bool, o *unstructured.Unstructured) ([]*unstructured.Unstructured, []*unstructured.Unstructured) {
	if isLate {
		return now, append(late, o)
	}
	return append(now, o), late
}

// lateToken is a token of a late object's strings, resolved when the
// object is applied: $NOW (the time, RFC 3339) and $LOCALUID(<name>) (the
// UID of the local Policy <name> in the managed cluster's cluster
// namespace, which the agent creates: a compliance event names its Policy
// by UID).
var lateToken = regexp.MustCompile(`\$NOW|\$LOCALUID\(([^)]+)\)`)

// resolveLate returns obj with the late tokens of its strings replaced by
// resolve's answer for each match (the token and its argument).
func resolveLate(obj *unstructured.Unstructured, resolve func(token, arg string) (string, error)) (*unstructured.Unstructured, error) {
	var errs []error
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case string:
			return lateToken.ReplaceAllStringFunc(v, func(tok string) string {
				out, err := resolve(tok, lateToken.FindStringSubmatch(tok)[1])
				errs = append(errs, err)
				return out
			})
		case map[string]any:
			for k, item := range v {
				v[k] = walk(item)
			}
		case []any:
			for i, item := range v {
				v[i] = walk(item)
			}
		}
		return v
	}
	out := obj.DeepCopy()
	walk(out.Object)
	return out, errors.Join(errs...)
}

// expand replaces the tokens of a case.
func expand(text, name, cluster string) string {
	text = strings.NewReplacer("$CASE", name, "$CLUSTER", cluster).Replace(text)
	return padToken.ReplaceAllStringFunc(text, func(tok string) string {
		n, _ := strconv.Atoi(padToken.FindStringSubmatch(tok)[1])
		return strings.Repeat("x", n)
	})
}

func decodeAll(text string) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader([]byte(text)), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}
