package templating

import (
	"slices"
	"strings"
	"sync"
	"text/template"

	"github.com/stolostron/go-template-utils/v7/pkg/templates"
)

// Resolver names one of the places where Go templates in a policy are
// resolved. Each has its own delimiters, functions and context, as in OCM;
// kubectl-canopy vet parses every template with those of its Resolver.
type Resolver int

// Resolvers.
const (
	// Hub resolves "{{hub ... hub}}" in a root Policy's policy-templates,
	// once per cluster, on the hub.
	Hub Resolver = iota
	// Managed resolves "{{ }}" in the objectDefinitions of a
	// ConfigurationPolicy's object-templates on the managed cluster. It
	// adds skipObject to the library's functions.
	Managed
	// Raw resolves "{{ }}" in a ConfigurationPolicy's object-templates-raw
	// on the managed cluster: no context and no skipObject, since OCM
	// resolves it before, and apart from, the object templates.
	Raw
	// CustomMessage renders a ConfigurationPolicy's customMessage: plain
	// text/template with the library's sprig functions only
	// (templates.AvailableSprigFunctions), and .DefaultMessage and .Policy.
	CustomMessage
)

// SkipObjectFunction is the function the managed resolver adds to the
// library's for object templates: it skips the object being templated.
const SkipObjectFunction = "skipObject"

// libraryFunctions are the functions go-template-utils v7.3.0 defines
// itself, besides the sprig functions it re-exports
// (templates.AvailableSprigFunctions) and text/template's builtins.
// "protect" is defined everywhere but only works where encryption is on,
// which is in hub templates.
//
// Note: the library does not export this list. TestLibraryFunctions
// proves it equal to the library's function map, from the library's
// source and by resolving a template that calls each name.
var libraryFunctions = []string{
	"atoi", "autoindent", "b64dec", "b64enc", "base64dec", "base64enc",
	"copyConfigMapData", "copySecretData", "fromClusterClaim", "fromConfigMap",
	"fromJSON", "fromSecret", "fromYAML", "fromYaml", "getNodesWithExactRoles",
	"hasNodesWithExactRoles", "indent", "lookup", "lookupClusterClaim",
	"mustFromJSON", "mustToJSON", "mustToRawJSON", "protect", "toBool", "toInt",
	"toJSON", "toLiteral", "toRawJSON", "toYAML", "toYaml",
}

// AlwaysDeniedFunctions are the sprig functions the library refuses in every
// template, whatever its deny-list: they would read the environment of the
// process resolving the template. A template calling one fails with the
// library's ErrDenylistedFunctionUsed.
var AlwaysDeniedFunctions = []string{"env", "expandenv"}

// clusterFunctions read objects of the cluster the template is resolved
// on that a managed cluster has and a hub does not use: its ClusterClaims
// and Nodes. In a hub template they read the hub's.
var clusterFunctions = []string{"fromClusterClaim", "getNodesWithExactRoles", "hasNodesWithExactRoles", "lookupClusterClaim"}

// ProtectFunction encrypts a value; it only works in hub templates, the
// only resolver with an encryption key: elsewhere it fails with the
// library's ErrProtectNotEnabled.
const ProtectFunction = "protect"

// Delims returns the delimiters r parses with.
func (r Resolver) Delims() (start, stop string) {
	if r == Hub {
		return HubStartDelim, HubStopDelim
	}
	return "{{", "}}"
}

// String names r as vet's messages do ("hub template").
func (r Resolver) String() string {
	switch r {
	case Hub:
		return "hub template"
	case Raw:
		return "object-templates-raw template"
	case CustomMessage:
		return "customMessage template"
	default:
		return "managed template"
	}
}

// Functions returns the names of the functions a template of r can call,
// sorted; text/template's builtins (and, eq, index, len, printf, ...) are
// always there too.
func (r Resolver) Functions() []string {
	names := templates.AvailableSprigFunctions()
	if r != CustomMessage {
		names = append(names, libraryFunctions...)
	}
	if r == Managed {
		names = append(names, SkipObjectFunction)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// HasFunction reports whether a template of r can call name (text/
// template's builtins aside).
func (r Resolver) HasFunction(name string) bool {
	_, found := slices.BinarySearch(r.Functions(), name)
	return found
}

// Fields returns the fields of the context of r's templates, sorted; open
// is true when the context is a map, where any other field is empty
// rather than an error.
func (r Resolver) Fields() (fields []string, open bool) {
	switch r {
	case Hub:
		return []string{"ManagedClusterLabels", "ManagedClusterName", "PolicyMetadata"}, false
	case Managed:
		return []string{"Object", "ObjectName", "ObjectNamespace"}, false
	case CustomMessage:
		return []string{"DefaultMessage", "Policy"}, true
	default:
		return nil, false
	}
}

// IsClusterFunction reports whether name reads the ClusterClaims or Nodes
// of the cluster its template is resolved on (fromClusterClaim, ...).
func IsClusterFunction(name string) bool { return slices.Contains(clusterFunctions, name) }

// Parse parses text as r's resolver would: with its delimiters and
// function names. The functions are stubs: the result is for inspection,
// never for execution. Errors are text/template's ("template: NAME:LINE:
// ...").
func (r Resolver) Parse(name, text string) (*template.Template, error) {
	start, stop := r.Delims()
	return template.New(name).Delims(start, stop).Funcs(stubFuncs()[r]).Parse(text)
}

// stubFuncs maps each resolver to a function map of its names, built
// once: parsing only needs the names.
var stubFuncs = sync.OnceValue(func() map[Resolver]template.FuncMap {
	stub := func(...any) (any, error) { return nil, nil }
	out := map[Resolver]template.FuncMap{}
	for _, r := range []Resolver{Hub, Managed, Raw, CustomMessage} {
		out[r] = template.FuncMap{}
		for _, f := range r.Functions() {
			out[r][f] = stub
		}
	}
	return out
})

// StripHubTemplates replaces every "{{hub ... hub}}" of text with "0" and
// the line breaks it held, so that what a managed resolver will read
// after the hub resolved them parses with the same line numbers. An
// unterminated hub template is left as it is.
func StripHubTemplates(text string) string {
	var b strings.Builder
	for {
		start := strings.Index(text, HubStartDelim)
		if start < 0 {
			break
		}
		end := strings.Index(text[start:], HubStopDelim)
		if end < 0 {
			break
		}
		end += start + len(HubStopDelim)
		b.WriteString(text[:start])
		b.WriteString("0")
		b.WriteString(strings.Repeat("\n", strings.Count(text[start:end], "\n")))
		text = text[end:]
	}
	b.WriteString(text)
	return b.String()
}

// DenylistFlag is the name of the flag of the hub, the agent and vet that
// denies template functions, OCM's (its propagator's and
// config-policy-controller's).
const DenylistFlag = "template-function-denylist"

// DenylistUsage is the help of DenylistFlag.
const DenylistUsage = "Comma-separated list of template functions to deny in addition to those always denied (env, expandenv); " +
	"a template that calls one fails with \"use of denylisted template function\"."

// ParseFuncList parses a comma-separated list of template function names,
// as a value of DenylistFlag: names are trimmed and empty ones dropped.
func ParseFuncList(s string) []string {
	var out []string
	for name := range strings.SplitSeq(s, ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, name)
		}
	}
	return out
}

// Denylist returns the library's DenylistFunctions for names: a copy
// whose capacity is its length, since the library appends the functions
// it always denies to the slice it is given, which resolutions running
// at once must not share. Nil for no names.
func Denylist(names []string) []string {
	if len(names) == 0 {
		return nil
	}
	return slices.Clip(slices.Clone(names))
}
