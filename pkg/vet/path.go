package vet

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// nodeAt walks a field path ("spec.policy-templates[0].objectDefinition",
// "metadata.labels[a.b/c]") from node and returns the deepest node found;
// for a key, the key's node (its line is the field's line).
func nodeAt(node *yaml.Node, path string) *yaml.Node {
	cur, found := node, node
	for _, seg := range splitPath(path) {
		next, key := child(cur, seg)
		if next == nil {
			return found
		}
		cur, found = next, next
		if key != nil {
			found = key
		}
	}
	return found
}

// splitPath splits a field path into keys and bracketed parts.
func splitPath(path string) []string {
	var out []string
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(out, path[1:])
			}
			out = append(out, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			out = append(out, path[:end])
			path = path[end:]
		}
	}
	return out
}

// child returns the value at seg of a mapping (with its key node) or a
// sequence (seg an index).
func child(n *yaml.Node, seg string) (value, key *yaml.Node) {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return nil, nil
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == seg {
				return n.Content[i+1], n.Content[i]
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(seg); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i], nil
		}
	}
	return nil, nil
}

// exactNode returns the value node at path, or nil when it does not exist.
func exactNode(node *yaml.Node, path string) *yaml.Node {
	cur := node
	for _, seg := range splitPath(path) {
		if cur, _ = child(cur, seg); cur == nil {
			return nil
		}
	}
	return cur
}
