package vet

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/templating"
)

var configurationPolicyGK = schema.GroupKind{Group: policyv1.GroupName, Kind: "ConfigurationPolicy"}

// templateUnit is what one resolver reads in one go, as OCM resolves
// them: a policy template's objectDefinition (hub), an object template's
// objectDefinition (managed), object-templates-raw, or a customMessage.
type templateUnit struct {
	// doc is the object findings are about.
	doc Document
	// path is the field path of the unit in doc; empty for doc itself.
	path     string
	resolver templating.Resolver
	// object is the unit as JSON, which the library converts to YAML and
	// parses whole; nil when the unit is one string (its only site).
	object any
	// policy is the Policy of a hub unit.
	policy hubPolicy
	// sites are the strings of the unit that hold templates.
	sites []*yaml.Node
	// brokenHub is true when a string of a managed unit holds an unclosed
	// hub template, which the hub check reports: that string is left out,
	// and the unit's other strings are checked alone.
	brokenHub bool
	// denied are the functions the unit's resolver is denied
	// (Options.TemplateFuncDenylist); none for customMessage, which the
	// template library does not render.
	denied []string
}

// hubPolicy is what a hub template's restrictions depend on.
type hubPolicy struct {
	namespace      string
	serviceAccount string
}

// checkTemplates parses the templates of d (a document, with the policy
// templates embedded in it) as Canopy's resolvers would.
func (c *Checker) checkTemplates(d Document, embedded []Document) []Finding {
	var out []Finding
	switch d.GroupVersionKind().GroupKind() {
	case policyGK:
		hub := !templatesDisabled(d)
		hp := c.hubPolicyOf(d)
		for _, t := range embedded {
			if hub {
				u := templateUnit{doc: t, resolver: templating.Hub, object: t.Object, policy: hp,
					sites: stringsWith(t.Node, templating.HubStartDelim), denied: c.opts.TemplateFuncDenylist}
				out = append(out, u.check()...)
			}
			out = append(out, checkManagedTemplates(t, c.opts.TemplateFuncDenylist)...)
		}
	case configurationPolicyGK, hierarchyPolicyGK:
		out = append(out, checkHubTemplatesOutsidePolicy(d)...)
		out = append(out, checkManagedTemplates(d, c.opts.TemplateFuncDenylist)...)
	}
	return out
}

// hubPolicyOf returns the namespace and service account the hub
// templates of the Policy d are resolved with.
func (c *Checker) hubPolicyOf(d Document) hubPolicy {
	hp := hubPolicy{namespace: d.Namespace()}
	if hp.namespace == "" {
		hp.namespace = c.opts.DefaultNamespace
	}
	hp.serviceAccount, _, _ = unstructured.NestedString(d.Object, "spec", "hubTemplateOptions", "serviceAccountName")
	return hp
}

// checkManagedTemplates checks the templates the managed cluster resolves
// in the ConfigurationPolicy d (object-templates, object-templates-raw and
// customMessage), and warns of those nothing resolves, in it or in a
// HierarchyPolicy. Hub templates are taken as resolved: the hub resolves
// them first, or checkHubTemplatesOutsidePolicy reports them. denied are
// the functions the agent denies.
func checkManagedTemplates(d Document, denied []string) []Finding {
	switch d.GroupVersionKind().GroupKind() {
	case hierarchyPolicyGK:
		return checkUnresolved(d, "", "a HierarchyPolicy is not templated on the managed cluster")
	case configurationPolicyGK:
	default:
		return nil
	}
	if templatesDisabled(d) {
		return nil
	}
	unit := func(path string, r templating.Resolver, object any) []Finding {
		node := exactNode(d.Node, path)
		if node == nil || (object == nil && node.Kind != yaml.ScalarNode) {
			return nil
		}
		u := templateUnit{doc: d, path: path, resolver: r, object: object}
		if r != templating.CustomMessage {
			u.denied = denied
		}
		for _, n := range stringsWith(node, "{{") {
			text := managedText(n.Value)
			switch {
			case strings.Contains(text, templating.HubStartDelim):
				u.brokenHub = true // an unclosed hub template: the hub check reports it
			case strings.Contains(text, "{{"):
				u.sites = append(u.sites, n)
			}
		}
		return u.check()
	}
	var out []Finding
	list, _, _ := unstructured.NestedSlice(d.Object, "spec", "object-templates")
	for i, item := range list {
		m, _ := item.(map[string]any)
		if def := m["objectDefinition"]; def != nil {
			out = append(out, unit(fmt.Sprintf("spec.object-templates[%d].objectDefinition", i), templating.Managed, def)...)
		}
	}
	out = append(out, unit("spec.object-templates-raw", templating.Raw, nil)...)
	out = append(out, unit("spec.customMessage.compliant", templating.CustomMessage, nil)...)
	out = append(out, unit("spec.customMessage.noncompliant", templating.CustomMessage, nil)...)
	return append(out, checkUnresolved(d, "spec", "the managed cluster resolves templates only in "+
		"object-templates[].objectDefinition, object-templates-raw and customMessage")...)
}

// checkUnresolved warns of managed templates under path of d that no
// resolver reads, which would be applied as literal text.
func checkUnresolved(d Document, path string, why string) []Finding {
	root := d.Node
	if path != "" {
		root = exactNode(d.Node, path)
	}
	resolved := map[*yaml.Node]bool{}
	if d.GroupVersionKind().GroupKind() == configurationPolicyGK {
		for _, p := range []string{"spec.object-templates-raw", "spec.customMessage"} {
			resolved[exactNode(d.Node, p)] = true
		}
		if list := exactNode(d.Node, "spec.object-templates"); list != nil {
			for i := range list.Content {
				resolved[exactNode(d.Node, fmt.Sprintf("spec.object-templates[%d].objectDefinition", i))] = true
			}
		}
	}
	var out []Finding
	walkScalars(root, resolved, func(n *yaml.Node) {
		if text := managedText(n.Value); strings.Contains(text, "{{") {
			out = append(out, Finding{File: d.File, Line: n.Line, Severity: SeverityWarning, Check: CheckTemplate,
				Object: d.String(), Message: fmt.Sprintf("%q is not resolved: %s; it would be applied as literal text",
					firstTemplate(text, "{{", "}}"), why)})
		}
	})
	return out
}

// checkHubTemplatesOutsidePolicy reports hub templates in a document that
// is not in a Policy: only the hub resolves them, in policy-templates,
// and the managed cluster's resolver fails on them.
func checkHubTemplatesOutsidePolicy(d Document) []Finding {
	var out []Finding
	for _, n := range stringsWith(d.Node, templating.HubStartDelim) {
		out = append(out, Finding{File: d.File, Line: n.Line, Severity: SeverityError, Check: CheckTemplate, Object: d.String(),
			Message: fmt.Sprintf("hub template %q outside a Policy: the hub resolves hub templates only in a Policy's "+
				"policy-templates, and the managed cluster cannot resolve it", firstTemplate(n.Value, templating.HubStartDelim, templating.HubStopDelim))})
	}
	return out
}

// check parses each site of the unit alone, for positions, and the unit
// whole as the library does, then checks what each site calls and reads.
// A site that fails alone but not within the whole unit (a template that
// spans strings) is not an error.
func (u templateUnit) check() []Finding {
	if len(u.sites) == 0 {
		return nil
	}
	var out, syntax []Finding
	for _, site := range u.sites {
		tmpl, err := u.resolver.Parse("t", u.text(site.Value))
		if err != nil {
			syntax = append(syntax, u.syntaxFinding(site, err))
			continue
		}
		out = append(out, u.checkUses(site, usesOf(tmpl))...)
	}
	err := u.parseWhole()
	switch {
	case err == nil: // the library parses the unit: a site that failed alone spans strings
	case len(syntax) > 0 || u.brokenHub:
		out = append(out, syntax...)
	default:
		out = append(out, u.wholeFinding(err))
	}
	return out
}

// wholeFinding reports a unit that fails only as the library reads it,
// converted to YAML: at the string that fails once converted, or else at
// the unit.
func (u templateUnit) wholeFinding(err error) Finding {
	_, msg := splitTemplateError(err)
	for _, site := range u.sites {
		raw, jsonErr := json.Marshal(map[string]string{"k": site.Value})
		y, yamlErr := templates.JSONToYAML(raw)
		if jsonErr != nil || yamlErr != nil {
			continue
		}
		if _, err := u.resolver.Parse("t", u.text(string(y))); err != nil {
			_, msg = splitTemplateError(err)
			if strings.Contains(site.Value, "'") && !strings.Contains(site.Value, "\n") {
				msg += ` (the library reads this string converted to YAML, in single quotes, where ' becomes '')`
			}
			return Finding{File: u.doc.File, Line: site.Line, Severity: SeverityError, Check: CheckTemplate,
				Object: u.doc.String(), Message: fmt.Sprintf("%s: %s", u.resolver, msg)}
		}
	}
	return at(u.doc, u.path, SeverityError, CheckTemplate, fmt.Sprintf(
		"%s: %s (in the object definition as the library reads it, converted to YAML)", u.resolver, msg))
}

// parseWhole parses the unit as the library does: an object converted to
// YAML and parsed in one piece, so that a template may span strings.
func (u templateUnit) parseWhole() error {
	if u.object == nil {
		_, err := u.resolver.Parse("t", u.text(u.sites[0].Value))
		return err
	}
	raw, err := json.Marshal(u.object)
	if err != nil {
		return fmt.Errorf("encoding the object: %w", err)
	}
	y, err := templates.JSONToYAML(raw)
	if err != nil {
		return fmt.Errorf("converting the object to YAML: %w", err)
	}
	_, err = u.resolver.Parse("t", u.text(string(y)))
	return err
}

// text is what the unit's resolver parses of s: for managed templates,
// s once the hub resolved its hub templates.
func (u templateUnit) text(s string) string {
	if u.resolver == templating.Hub {
		return s
	}
	return managedText(s)
}

// managedText is what the managed cluster reads of s: hub templates
// resolved (by the hub, or reported by checkHubTemplatesOutsidePolicy).
func managedText(s string) string { return templating.StripHubTemplates(s) }

// syntaxFinding turns text/template's parse error for site into a
// finding at the file line of the error.
func (u templateUnit) syntaxFinding(site *yaml.Node, err error) Finding {
	line, msg := splitTemplateError(err)
	if name, ok := strings.CutPrefix(msg, "function "); ok && strings.HasSuffix(name, " not defined") {
		msg += u.functionHint(strings.Trim(strings.TrimSuffix(name, " not defined"), `"`))
	}
	if msg == "unexpected EOF" {
		start, stop := u.resolver.Delims()
		msg += fmt.Sprintf(" (an if, range or with without %send%s?)", start+" ", " "+stop)
	}
	return Finding{File: u.doc.File, Line: siteLine(site, line), Severity: SeverityError, Check: CheckTemplate,
		Object: u.doc.String(), Message: fmt.Sprintf("%s: %s", u.resolver, msg)}
}

// functionHint says where a function this resolver lacks is available,
// or which one was meant.
func (u templateUnit) functionHint(name string) string {
	switch {
	case name == "hub":
		return fmt.Sprintf(": %q is read as \"{{\" followed by \"hub\"; a hub template is \"{{hub ... hub}}\"", templating.HubStartDelim)
	case name == templating.SkipObjectFunction:
		return ": skipObject exists only in the managed templates of object-templates[].objectDefinition"
	case slices.Contains(templating.AlwaysDeniedFunctions, name):
		return ": the template library always denies it (it would read the environment of the process resolving the template)"
	case u.resolver == templating.CustomMessage && templating.Managed.HasFunction(name):
		return ": customMessage templates have only the sprig functions (and .DefaultMessage and .Policy)"
	}
	for _, f := range u.resolver.Functions() {
		if strings.EqualFold(f, name) {
			return fmt.Sprintf(" (did you mean %s?)", f)
		}
	}
	return ""
}

var templateErrorPrefix = regexp.MustCompile(`^template: [^:]*:(\d+):(?:\d+:)? ?`)

// splitTemplateError returns the template line of a text/template error
// (1 when it has none) and its message without the "template: t:N:"
// prefix.
func splitTemplateError(err error) (int, string) {
	msg := err.Error()
	m := templateErrorPrefix.FindStringSubmatch(msg)
	if m == nil {
		return 1, msg
	}
	line, _ := strconv.Atoi(m[1])
	return line, msg[len(m[0]):]
}

// siteLine maps line n of the string in node to its line in the file. A
// literal block scalar ("|") starts on the line after its indicator and
// keeps its line breaks; other styles fold them, so their line is the
// scalar's.
func siteLine(node *yaml.Node, n int) int {
	switch {
	case node.Style&yaml.LiteralStyle != 0:
		return node.Line + min(n, strings.Count(strings.TrimRight(node.Value, "\n"), "\n")+1)
	case node.Style&yaml.FoldedStyle != 0:
		return node.Line + 1
	default:
		return node.Line
	}
}

// stringsWith returns the string scalars (keys and values) under n that
// contain delim, in document order.
func stringsWith(n *yaml.Node, delim string) []*yaml.Node {
	var out []*yaml.Node
	walkScalars(n, nil, func(s *yaml.Node) {
		if strings.Contains(s.Value, delim) {
			out = append(out, s)
		}
	})
	return out
}

// walkScalars calls fn on each scalar under n, skipping the subtrees in
// skip and aliases (their anchor is visited where it is).
func walkScalars(n *yaml.Node, skip map[*yaml.Node]bool, fn func(*yaml.Node)) {
	if n == nil || skip[n] {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" || n.Tag == "" {
			fn(n)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if skip[n.Content[i+1]] {
				continue
			}
			walkScalars(n.Content[i], skip, fn)
			walkScalars(n.Content[i+1], skip, fn)
		}
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			walkScalars(c, skip, fn)
		}
	}
}

// firstTemplate returns the first template of s, for messages; the whole
// line when it is not closed.
func firstTemplate(s, start, stop string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return s
	}
	s = s[i:]
	if j := strings.Index(s, stop); j >= 0 {
		return s[:j+len(stop)]
	}
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// templatesDisabled reports whether d has the disable-templates
// annotation set to true.
func templatesDisabled(d Document) bool {
	v, _, _ := unstructured.NestedString(d.Object, "metadata", "annotations", templating.DisableTemplatesAnnotation)
	disabled, err := strconv.ParseBool(v)
	return err == nil && disabled
}
