package vet

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"text/template/parse"

	yaml "go.yaml.in/yaml/v3"

	"github.com/canopy-policy/canopy/pkg/templating"
)

// templateUse is a function a template calls, or a field of its context
// it reads.
type templateUse struct {
	// function is the function called; empty for a field.
	function string
	// field is the context field read (".ManagedClusterName" reads
	// "ManagedClusterName").
	field string
	// args are the literal string arguments of a function call, "" where
	// an argument is not a string literal.
	args []string
	// line is the line in the template.
	line int
}

// usesOf lists the functions and context fields t uses. Fields count only
// where dot is the context: outside range and with, or through "$".
func usesOf(t *template.Template) []templateUse {
	var out []templateUse
	for _, tt := range t.Templates() {
		if tt.Tree == nil || tt.Root == nil {
			continue
		}
		w := useWalker{tree: tt.Tree}
		w.node(tt.Root, tt.Name() == t.Name())
		out = append(out, w.uses...)
	}
	return out
}

type useWalker struct {
	tree *parse.Tree
	uses []templateUse
}

func (w *useWalker) node(n parse.Node, rootDot bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			w.node(c, rootDot)
		}
	case *parse.ActionNode:
		w.node(n.Pipe, rootDot)
	case *parse.IfNode:
		w.branch(&n.BranchNode, rootDot, rootDot)
	case *parse.RangeNode:
		w.branch(&n.BranchNode, false, rootDot)
	case *parse.WithNode:
		w.branch(&n.BranchNode, false, rootDot)
	case *parse.TemplateNode:
		w.node(n.Pipe, rootDot)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			w.node(c, rootDot)
		}
	case *parse.CommandNode:
		w.command(n, rootDot)
	case *parse.ChainNode:
		w.node(n.Node, rootDot)
	case *parse.IdentifierNode:
		w.uses = append(w.uses, templateUse{function: n.Ident, line: w.line(n)})
	case *parse.FieldNode:
		if rootDot {
			w.uses = append(w.uses, templateUse{field: n.Ident[0], line: w.line(n)})
		}
	case *parse.VariableNode:
		if n.Ident[0] == "$" && len(n.Ident) > 1 {
			w.uses = append(w.uses, templateUse{field: n.Ident[1], line: w.line(n)})
		}
	}
}

// branch walks if, range and with: the pipeline and else branch see the
// outer dot, the body sees bodyRootDot.
func (w *useWalker) branch(b *parse.BranchNode, bodyRootDot, rootDot bool) {
	w.node(b.Pipe, rootDot)
	w.node(b.List, bodyRootDot)
	w.node(b.ElseList, rootDot)
}

// command records a function call with its literal arguments, then walks
// the arguments.
func (w *useWalker) command(c *parse.CommandNode, rootDot bool) {
	if len(c.Args) == 0 {
		return
	}
	if id, ok := c.Args[0].(*parse.IdentifierNode); ok {
		use := templateUse{function: id.Ident, line: w.line(id)}
		for _, a := range c.Args[1:] {
			s, _ := a.(*parse.StringNode)
			if s != nil {
				use.args = append(use.args, s.Text)
			} else {
				use.args = append(use.args, "")
			}
		}
		w.uses = append(w.uses, use)
	} else {
		w.node(c.Args[0], rootDot)
	}
	for _, a := range c.Args[1:] {
		w.node(a, rootDot)
	}
}

// line returns the template line of n.
func (w *useWalker) line(n parse.Node) int {
	loc, _ := w.tree.ErrorContext(n) // "name:line:col"
	parts := strings.Split(loc, ":")
	if len(parts) < 3 {
		return 1
	}
	line, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil {
		return 1
	}
	return line
}

// namespaceArg is the index, among the arguments, of the namespace of the
// functions that read namespaced objects.
var namespaceArg = map[string]int{
	"fromSecret": 0, "fromConfigMap": 0, "copySecretData": 0, "copyConfigMapData": 0, "lookup": 2,
}

// checkUses checks what a site's templates call and read against its
// resolver: context fields it does not set, denied functions, protect
// outside hub templates, cluster functions and other namespaces in hub
// templates.
func (u templateUnit) checkUses(site *yaml.Node, uses []templateUse) []Finding {
	var out []Finding
	report := func(use templateUse, sev Severity, format string, args ...any) {
		out = append(out, Finding{File: u.doc.File, Line: siteLine(site, use.line), Severity: sev, Check: CheckTemplate,
			Object: u.doc.String(), Message: u.resolver.String() + ": " + fmt.Sprintf(format, args...)})
	}
	for _, use := range uses {
		if use.field != "" {
			if msg := u.fieldProblem(use.field); msg != "" {
				report(use, SeverityError, "%s", msg)
			}
			continue
		}
		if slices.Contains(u.denied, use.function) {
			report(use, SeverityWarning, "%s is in the --%s given: where the %s is resolved with that list, it fails "+
				"with \"use of denylisted template function: function '%s' is not allowed\"",
				use.function, templating.DenylistFlag, u.resolver, use.function)
		}
		switch {
		case use.function == templating.ProtectFunction && u.resolver != templating.Hub:
			report(use, SeverityError, "protect works only in hub templates, the only ones resolved with an encryption key: "+
				"write {{hub ... | protect hub}}")
		case u.resolver == templating.Hub && templating.IsClusterFunction(use.function):
			sev, why := SeverityError, ", where hub templates may not read cluster-scoped objects unless "+
				"spec.hubTemplateOptions.serviceAccountName is set"
			if u.policy.serviceAccount != "" {
				sev, why = SeverityWarning, ", not the managed cluster"
			}
			report(use, sev, "%s reads the cluster its template is resolved on, here the hub%s: "+
				"to read the managed cluster's, write a managed template {{ %s ... }}", use.function, why, use.function)
		case u.resolver == templating.Hub && u.policy.serviceAccount == "":
			if ns := literalNamespace(use); ns != "" && ns != u.policy.namespace {
				report(use, SeverityError, "%s of namespace %q: the namespace argument is restricted to %s (hub templates "+
					"read only the policy's namespace unless spec.hubTemplateOptions.serviceAccountName is set)",
					use.function, ns, u.policy.namespace)
			}
		}
	}
	return out
}

// literalNamespace returns the namespace a lookup function is called
// with, when it is a string literal.
func literalNamespace(use templateUse) string {
	i, ok := namespaceArg[use.function]
	if !ok || i >= len(use.args) {
		return ""
	}
	return use.args[i]
}

// fieldProblem says why the resolver's context has no field, or "".
func (u templateUnit) fieldProblem(field string) string {
	fields, open := u.resolver.Fields()
	if open || slices.Contains(fields, field) {
		return ""
	}
	hubFields, _ := templating.Hub.Fields()
	managedFields, _ := templating.Managed.Fields()
	switch {
	case u.resolver != templating.Hub && slices.Contains(hubFields, field):
		return fmt.Sprintf(".%s is set only in hub templates: write {{hub .%s hub}}", field, field)
	case u.resolver == templating.Hub && slices.Contains(managedFields, field):
		return fmt.Sprintf(".%s is set only in managed templates of object-templates: write {{ .%s }}", field, field)
	case u.resolver == templating.Raw && slices.Contains(managedFields, field):
		return fmt.Sprintf(".%s is not set in object-templates-raw, which is resolved without context", field)
	case len(fields) == 0:
		return fmt.Sprintf("no field .%s: %s is resolved without context", field, u.resolver)
	}
	return fmt.Sprintf("no field .%s in the context (it has .%s)", field, strings.Join(fields, ", ."))
}
