package vet

import (
	"cmp"
	"fmt"
	"slices"
)

// Severity says whether a Finding fails vet.
type Severity string

// Severities.
const (
	// SeverityError fails vet.
	SeverityError Severity = "error"
	// SeverityWarning is reported but does not fail vet.
	SeverityWarning Severity = "warning"
)

// Checks, the Check of a Finding.
const (
	// CheckParse: the file is not YAML, or a document is not an object.
	CheckParse = "parse"
	// CheckSchema: the object does not match its CRD's schema.
	CheckSchema = "schema"
	// CheckNameLength: a root Policy's namespace and name are too long.
	CheckNameLength = "name-length"
	// CheckDependencyCycle: policies or templates wait for each other.
	CheckDependencyCycle = "dependency-cycle"
	// CheckHierarchy: a HierarchyPolicy's tree, or SubNamespaces, are
	// invalid.
	CheckHierarchy = "hierarchy"
	// CheckCollision: two objects have the same identity.
	CheckCollision = "collision"
	// CheckTemplate: a Go template does not parse with the delimiters and
	// functions of the resolver that reads it, calls a function or reads a
	// context field that resolver does not have, or is where nothing
	// resolves it.
	CheckTemplate = "template"
	// CheckUnsupported: something Canopy does not evaluate (a policy
	// template kind, a PlacementRule).
	CheckUnsupported = "unsupported"
	// CheckName: a name or namespace the API server would refuse.
	CheckName = "name"
)

// Finding is one problem, at a file and line.
type Finding struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Severity Severity `json:"severity"`
	Check    string   `json:"check"`
	// Object names the object, "Kind ns/name"; empty for parse errors.
	Object  string `json:"object,omitempty"`
	Message string `json:"message"`
}

// String formats f as "file:line: severity: [check] object: message".
func (f Finding) String() string {
	obj := ""
	if f.Object != "" {
		obj = f.Object + ": "
	}
	return fmt.Sprintf("%s:%d: %s: [%s] %s%s", f.File, f.Line, f.Severity, f.Check, obj, f.Message)
}

// HasErrors reports whether any finding is an error.
func HasErrors(findings []Finding) bool {
	return slices.ContainsFunc(findings, func(f Finding) bool { return f.Severity == SeverityError })
}

// Sort orders findings by file, line, check and message, without
// repeats.
func Sort(fs []Finding) []Finding {
	slices.SortFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Check, b.Check),
			cmp.Compare(a.Object, b.Object), cmp.Compare(a.Message, b.Message))
	})
	return slices.Compact(fs)
}

// at returns a finding about doc at path.
func at(doc Document, path string, sev Severity, check, msg string) Finding {
	return Finding{File: doc.File, Line: doc.LineOf(path), Severity: sev, Check: check, Object: doc.String(), Message: msg}
}
