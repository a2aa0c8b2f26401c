package vet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// Document is one Kubernetes object read from a file: a whole YAML
// document, or an object embedded in another (a policy template).
type Document struct {
	// File is the file it was read from.
	File string
	// Node is the object's YAML mapping node, for positions.
	Node *yaml.Node
	// Object is the object, with JSON types.
	Object map[string]any
	// Path is the field path of an embedded object in its parent document
	// ("spec.policy-templates[0].objectDefinition"); empty for a document.
	Path string
	// Parent names the document an embedded object is in ("Policy ns/name");
	// empty for a document.
	Parent string
}

// Line returns the line of the object's first key.
func (d Document) Line() int { return line(d.Node) }

// GroupVersionKind returns the object's type.
func (d Document) GroupVersionKind() schema.GroupVersionKind {
	return (&unstructured.Unstructured{Object: d.Object}).GroupVersionKind()
}

// Namespace returns metadata.namespace.
func (d Document) Namespace() string {
	return (&unstructured.Unstructured{Object: d.Object}).GetNamespace()
}

// Name returns metadata.name.
func (d Document) Name() string { return (&unstructured.Unstructured{Object: d.Object}).GetName() }

// String names the object as findings do: "Kind ns/name" or "Kind name".
func (d Document) String() string {
	s := d.GroupVersionKind().Kind + " " + d.Name()
	if ns := d.Namespace(); ns != "" {
		s = d.GroupVersionKind().Kind + " " + ns + "/" + d.Name()
	}
	if d.Parent != "" {
		return d.Parent + " " + d.Path + ": " + s
	}
	return s
}

// LineOf returns the line of the field at path (as field.Path prints it,
// "spec.nodes[2].parent"), relative to the object, or of its nearest
// ancestor that exists.
func (d Document) LineOf(path string) int { return line(nodeAt(d.Node, path)) }

// Parse reads the YAML documents of one file. Empty documents are
// skipped; a document that is not an object, or a syntax error, is a
// Finding (a syntax error ends the file).
func Parse(file string, data []byte) ([]Document, []Finding) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Document
	var findings []Finding
	for {
		var root yaml.Node
		err := dec.Decode(&root)
		if errors.Is(err, io.EOF) {
			return docs, findings
		}
		if err != nil {
			return docs, append(findings, Finding{File: file, Line: errorLine(err), Severity: SeverityError, Check: CheckParse,
				Message: strings.TrimPrefix(err.Error(), "yaml: ")})
		}
		doc, f, ok := toDocument(file, &root)
		if f != nil {
			findings = append(findings, *f)
		}
		if ok {
			docs = append(docs, doc)
		}
	}
}

// toDocument reads one YAML document; ok is false when it is empty or not
// an object.
func toDocument(file string, root *yaml.Node) (Document, *Finding, bool) {
	node := root
	if node.Kind == yaml.DocumentNode {
		if len(node.Content) == 0 {
			return Document{}, nil, false
		}
		node = node.Content[0]
	}
	if node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return Document{}, nil, false
	}
	obj, err := decodeObject(node)
	if err != nil {
		return Document{}, &Finding{File: file, Line: line(node), Severity: SeverityError, Check: CheckParse, Message: err.Error()}, false
	}
	return Document{File: file, Node: node, Object: obj}, nil, true
}

// decodeObject converts a mapping node to JSON types, as the API server
// would see the object.
func decodeObject(node *yaml.Node) (map[string]any, error) {
	if node.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a Kubernetes object: a YAML %s", kindName(node.Kind))
	}
	var v any
	if err := node.Decode(&v); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	var obj map[string]any
	if err := utiljson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	return obj, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	default:
		return "node"
	}
}

var lineInError = regexp.MustCompile(`line (\d+)`)

// errorLine finds the line in a yaml error message, 1 when there is none.
func errorLine(err error) int {
	if m := lineInError.FindStringSubmatch(err.Error()); m != nil {
		if n, convErr := strconv.Atoi(m[1]); convErr == nil {
			return n
		}
	}
	return 1
}

func line(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	return n.Line
}
