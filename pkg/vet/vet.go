package vet

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Options change how documents are checked.
type Options struct {
	// DefaultNamespace is the namespace of objects that name none (kubectl
	// apply's namespace); "default" when empty.
	DefaultNamespace string
	// TemplateFuncDenylist are the template functions the hub and the
	// agents deny (their --template-function-denylist): a template that
	// calls one is a warning.
	TemplateFuncDenylist []string
}

// Checker checks documents. It holds the CRD schemas; build it once with
// New.
type Checker struct {
	schemas map[schema.GroupVersionKind]*crdSchema
	opts    Options
}

// New returns a Checker with the schemas of deploy/crds.
func New(opts Options) (*Checker, error) {
	schemas, err := loadSchemas()
	if err != nil {
		return nil, err
	}
	if opts.DefaultNamespace == "" {
		opts.DefaultNamespace = "default"
	}
	return &Checker{schemas: schemas, opts: opts}, nil
}

// Check runs every check on docs, which are checked together (cycles and
// collisions span them), and returns the findings sorted by file and line.
func (c *Checker) Check(ctx context.Context, docs []Document) []Finding {
	var out []Finding
	all := slices.Clone(docs)
	for _, d := range docs {
		embedded, findings := templatesOf(d)
		out = append(out, findings...)
		out = append(out, c.checkTemplates(d, embedded)...)
		out = append(out, checkSupport(d, embedded)...)
		all = append(all, embedded...)
	}
	for _, d := range all {
		out = append(out, c.checkSchema(ctx, d)...)
		out = append(out, checkHierarchyPolicy(d)...)
		out = append(out, checkNames(d)...)
	}
	out = append(out, c.checkNameLength(docs)...)
	out = append(out, c.checkDependencyCycles(docs)...)
	out = append(out, checkSubNamespaceCycles(docs)...)
	out = append(out, c.checkCollisions(docs)...)
	return Sort(out)
}

// checkSchema validates d against its CRD's schema, when vet knows it.
func (c *Checker) checkSchema(ctx context.Context, d Document) []Finding {
	gvk := d.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return []Finding{{File: d.File, Line: d.Line(), Severity: SeverityError, Check: CheckSchema,
			Message: "not a Kubernetes object: apiVersion and kind are required"}}
	}
	s, ok := c.schemas[gvk]
	if !ok {
		if c.knowsGroupKind(gvk.GroupKind()) {
			return []Finding{at(d, "apiVersion", SeverityError, CheckSchema, fmt.Sprintf("version %s of %s is not served", gvk.Version, gvk.GroupKind()))}
		}
		return nil
	}
	var out []Finding
	for _, e := range s.validate(ctx, d.Object) {
		path := strings.TrimPrefix(e.Field, "<nil>")
		if n := exactNode(d.Node, path); n != nil && n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "{{") {
			continue // a template's value is known once resolved
		}
		out = append(out, at(d, path, SeverityError, CheckSchema, e.Error()))
	}
	return out
}

func (c *Checker) knowsGroupKind(gk schema.GroupKind) bool {
	for gvk := range c.schemas {
		if gvk.GroupKind() == gk {
			return true
		}
	}
	return false
}

// ReadPaths parses the YAML files (.yaml, .yml) of paths, walking
// directories; files named on the command line are read whatever their
// extension.
func ReadPaths(paths []string) ([]Document, []Finding, error) {
	var docs []Document
	var findings []Finding
	read := func(path string) error {
		data, err := os.ReadFile(path) //nolint:gosec // vet reads the files its user names
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		d, f := Parse(path, data)
		docs, findings = append(docs, d...), append(findings, f...)
		return nil
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", p, err)
		}
		if !info.IsDir() {
			if err := read(p); err != nil {
				return nil, nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
				return err
			}
			return read(path)
		})
		if err != nil {
			return nil, nil, fmt.Errorf("walking %s: %w", p, err)
		}
	}
	return docs, findings, nil
}
