package vet

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestParseFindings checks the findings of files that are not YAML
// objects: each at its line, the documents before a syntax error kept.
func TestParseFindings(t *testing.T) {
	tests := []struct {
		name     string
		yaml     string
		docs     int
		findings []string
	}{
		{name: "null documents are skipped", yaml: "--- ~\n---\nnull\n"},
		{name: "a list is not an object", yaml: "a: 1\n---\n- x\n---\nb: 2\n", docs: 2,
			findings: []string{"f.yaml:3: error: [parse] not a Kubernetes object: a YAML list"}},
		{name: "a syntax error keeps the documents before it", yaml: "a: 1\n---\nb: [\n", docs: 1,
			findings: []string{"f.yaml:3: error: [parse] line 3: did not find expected node content"}},
		{name: "a tab in the indentation", yaml: "a: 1\n\tb: 2\n",
			findings: []string{"f.yaml:2: error: [parse] line 2: found a tab character that violates indentation"}},
		{name: "an error without a line is at line 1", yaml: "\x00",
			findings: []string{"f.yaml:1: error: [parse] control characters are not allowed"}},
		{name: "an unknown anchor", yaml: "*x\n",
			findings: []string{"f.yaml:1: error: [parse] unknown anchor 'x' referenced"}},
		{name: "a value of the wrong tag", yaml: "apiVersion: v1\nkind: ConfigMap\n---\na: !!int x\n",
			docs: 1, findings: []string{"f.yaml:4: error: [parse] decoding: yaml: cannot decode !!str `x` as a !!int"}},
		{name: "a value JSON cannot hold", yaml: "a: .inf\n",
			findings: []string{"f.yaml:1: error: [parse] not representable as JSON: json: unsupported value: +Inf"}},
		{name: "aliases are resolved", yaml: "a: &x {b: 1}\nc: *x\n", docs: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			docs, findings := Parse("f.yaml", []byte(tc.yaml))
			g.Expect(docs).To(HaveLen(tc.docs))
			got := []string{}
			for _, f := range findings {
				got = append(got, f.String())
			}
			g.Expect(got).To(Equal(append([]string{}, tc.findings...)))
		})
	}
}

// TestParseNumbers checks that numbers get the JSON types the API server
// gives them: int64 for integers, float64 for the others.
func TestParseNumbers(t *testing.T) {
	g := NewWithT(t)
	docs, findings := Parse("f.yaml", []byte("a: 1\nb: 1.5\nc: {d: [2]}\n"))
	g.Expect(findings).To(BeEmpty())
	g.Expect(docs[0].Object).To(Equal(map[string]any{"a": int64(1), "b": 1.5, "c": map[string]any{"d": []any{int64(2)}}}))
	g.Expect(docs[0].Line()).To(Equal(1))
}

// TestReadPaths checks which files vet reads: the YAML files of a
// directory and its subdirectories, and any file named.
func TestReadPaths(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write := func(name, data string) string {
		path := filepath.Join(dir, name)
		g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(path, []byte(data), 0o600)).To(Succeed())
		return path
	}
	cm := func(data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: x}\ndata: {k: " + data + "}\n"
	}
	write("tree/a.yaml", cm("a"))
	write("tree/sub/b.yml", "- not an object\n")
	write("tree/notes.txt", "not: [yaml\n")
	other := write("other.txt", cm("other"))

	docs, findings, err := ReadPaths([]string{filepath.Join(dir, "tree"), other})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs).To(HaveLen(2))
	g.Expect(docs[0].File).To(Equal(filepath.Join(dir, "tree/a.yaml")))
	g.Expect(docs[1].File).To(Equal(other))
	g.Expect(findings).To(ConsistOf(Finding{File: filepath.Join(dir, "tree/sub/b.yml"), Line: 1, Severity: SeverityError,
		Check: CheckParse, Message: "not a Kubernetes object: a YAML list"}))

	checker, err := defaultChecker()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(checker.Check(t.Context(), docs)).To(ConsistOf(Finding{File: other, Line: 3, Severity: SeverityError,
		Check: CheckCollision, Object: "ConfigMap x/c", Message: "also declared at " + filepath.Join(dir, "tree/a.yaml") +
			":1: the later document would replace the earlier"}), "collisions span files")

	_, _, err = ReadPaths([]string{filepath.Join(dir, "missing.yaml")})
	g.Expect(err).To(MatchError(ContainSubstring("reading " + filepath.Join(dir, "missing.yaml") + ": ")))
	g.Expect(err).To(MatchError(os.ErrNotExist))
}

func TestHasErrors(t *testing.T) {
	g := NewWithT(t)
	g.Expect(HasErrors(nil)).To(BeFalse())
	g.Expect(HasErrors([]Finding{{Severity: SeverityWarning}})).To(BeFalse())
	g.Expect(HasErrors([]Finding{{Severity: SeverityWarning}, {Severity: SeverityError}})).To(BeTrue())
}

// TestSort checks the order of findings (file, line, check, object,
// message) and that repeats are dropped.
func TestSort(t *testing.T) {
	g := NewWithT(t)
	f := func(file string, line int, check, object, msg string) Finding {
		return Finding{File: file, Line: line, Severity: SeverityError, Check: check, Object: object, Message: msg}
	}
	got := Sort([]Finding{
		f("b.yaml", 1, "a", "", "m"),
		f("a.yaml", 2, "a", "", "m"),
		f("a.yaml", 1, "schema", "", "m"),
		f("a.yaml", 1, "name", "Kind y", "m"),
		f("a.yaml", 1, "name", "Kind x", "n"),
		f("a.yaml", 1, "name", "Kind x", "m"),
		f("a.yaml", 1, "name", "Kind x", "m"),
	})
	g.Expect(got).To(Equal([]Finding{
		f("a.yaml", 1, "name", "Kind x", "m"),
		f("a.yaml", 1, "name", "Kind x", "n"),
		f("a.yaml", 1, "name", "Kind y", "m"),
		f("a.yaml", 1, "schema", "", "m"),
		f("a.yaml", 2, "a", "", "m"),
		f("b.yaml", 1, "a", "", "m"),
	}))
	g.Expect(got[0].String()).To(Equal("a.yaml:1: error: [name] Kind x: m"))
	g.Expect(got[3].String()).To(Equal("a.yaml:1: error: [schema] m"), "no object, no colon")
}
