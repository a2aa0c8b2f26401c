package templating

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	sprig "github.com/Masterminds/sprig/v3"
	. "github.com/onsi/gomega"
	"github.com/stolostron/go-template-utils/v7/pkg/templates"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestLibraryFunctions proves libraryFunctions equal to the function map
// of the go-template-utils this module builds with: the same names as its
// source's funcMap, each of them resolves, and every other sprig function
// is refused as not defined.
func TestLibraryFunctions(t *testing.T) {
	g := NewWithT(t)
	g.Expect(libraryFunctions).To(ConsistOf(funcMapKeysInLibrarySource(t)))
	QuietLibraryLog()
	for _, r := range []Resolver{Hub, Managed, Raw} {
		resolver := newResolver(t, r)
		for _, name := range r.Functions() {
			_, err := resolve(resolver, r, name)
			g.Expect(err).NotTo(HaveOccurred(), "%s: %s", r, name)
		}
		for name := range sprig.FuncMap() {
			if slices.Contains(r.Functions(), name) || isBuiltin(name) {
				continue
			}
			if slices.Contains(AlwaysDeniedFunctions, name) {
				_, err := call(resolver, r, name+` "HOME"`)
				g.Expect(err).To(MatchError(templates.ErrDenylistedFunctionUsed), "%s: %s", r, name)
				continue
			}
			_, err := resolve(resolver, r, name)
			g.Expect(err).To(MatchError(ContainSubstring(`function "`+name+`" not defined`)), "%s: %s", r, name)
		}
		_, err := resolve(resolver, r, "noSuchFunction")
		g.Expect(err).To(MatchError(ContainSubstring(`function "noSuchFunction" not defined`)))
	}
}

func TestCustomMessageFunctions(t *testing.T) {
	g := NewWithT(t)
	g.Expect(CustomMessage.Functions()).To(ConsistOf(templates.AvailableSprigFunctions()))
	_, err := CustomMessage.Parse("m", `{{ .DefaultMessage | upper }}`)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = CustomMessage.Parse("m", `{{ fromSecret "a" "b" "c" }}`)
	g.Expect(err).To(MatchError(`template: m:1: function "fromSecret" not defined`))
}

func TestParse(t *testing.T) {
	g := NewWithT(t)
	_, err := Hub.Parse("t", "a: '{{hub fromConfigMap \"\" \"c\" \"k\" hub}}'\nb: '{{ notParsedHere }}'\n")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Hub.Parse("t", "a\n{{hub skipObject hub}}")
	g.Expect(err).To(MatchError(`template: t:2: function "skipObject" not defined`))
	_, err = Managed.Parse("t", "{{ skipObject }}{{ fromClusterClaim \"x\" }}")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Raw.Parse("t", "{{ skipObject }}")
	g.Expect(err).To(MatchError(ContainSubstring(`function "skipObject" not defined`)))
	_, err = Managed.Parse("t", "{{ if .Object }}")
	g.Expect(err).To(MatchError(ContainSubstring("unexpected EOF")))
}

func TestStripHubTemplates(t *testing.T) {
	g := NewWithT(t)
	g.Expect(StripHubTemplates(`{{ fromConfigMap "{{hub .ManagedClusterName hub}}" "c" "k" }}`)).
		To(Equal(`{{ fromConfigMap "0" "c" "k" }}`))
	g.Expect(StripHubTemplates("a {{hub if\n true hub}}b{{hub end hub}} {{hub x")).To(Equal("a 0\nb0 {{hub x"))
	g.Expect(StripHubTemplates("plain")).To(Equal("plain"))
}

func TestIsClusterFunction(t *testing.T) {
	g := NewWithT(t)
	for _, f := range clusterFunctions {
		g.Expect(Managed.Functions()).To(ContainElement(f))
		g.Expect(IsClusterFunction(f)).To(BeTrue())
	}
	g.Expect(IsClusterFunction("fromConfigMap")).To(BeFalse())
}

// funcMapKeysInLibrarySource reads the names the library's ResolveTemplate
// puts in its funcMap: the keys of the literal and of later assignments.
func funcMapKeysInLibrarySource(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/stolostron/go-template-utils/v7").Output()
	if err != nil {
		t.Fatalf("locating go-template-utils: %v", err)
	}
	file := filepath.Join(strings.TrimSpace(string(out)), "pkg", "templates", "templates.go")
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CompositeLit:
			if sel, ok := n.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "FuncMap" {
				for _, elt := range n.Elts {
					keys = append(keys, stringKey(t, elt.(*ast.KeyValueExpr).Key))
				}
			}
		case *ast.AssignStmt:
			if idx, ok := n.Lhs[0].(*ast.IndexExpr); ok && isIdent(idx.X, "funcMap") {
				if _, literal := idx.Index.(*ast.BasicLit); literal {
					keys = append(keys, stringKey(t, idx.Index))
				}
			}
		}
		return true
	})
	if len(keys) < 20 {
		t.Fatalf("found only %v in %s: has the library changed shape?", keys, file)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

func stringKey(t *testing.T, e ast.Expr) string {
	t.Helper()
	lit, ok := e.(*ast.BasicLit)
	if !ok {
		t.Fatalf("funcMap key %T is not a string literal", e)
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// newResolver returns a non-caching resolver of the library over empty
// fake clients, configured as r's resolver is.
func newResolver(t *testing.T, r Resolver) *templates.TemplateResolver {
	t.Helper()
	start, stop := r.Delims()
	cfg := templates.Config{}
	if r == Hub {
		cfg.StartDelim, cfg.StopDelim = start, stop
	}
	resolver, err := templates.NewResolverWithClients(fakedynamic.NewSimpleDynamicClient(runtime.NewScheme()),
		&fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return resolver
}

// resolve resolves a template that names function in a branch never
// taken: the library parses it (so an unknown name fails) but calls
// nothing.
func resolve(resolver *templates.TemplateResolver, r Resolver, function string) (templates.TemplateResult, error) {
	start, stop := r.Delims()
	tmpl := `{"a": "` + start + ` if false ` + stop + start + ` ` + function + ` ` + stop + start + ` end ` + stop + `"}`
	opts := &templates.ResolveOptions{}
	if r == Managed {
		opts.CustomFunctions = map[string]any{SkipObjectFunction: func() string { return "" }}
	}
	return resolver.ResolveTemplate([]byte(tmpl), nil, opts)
}

// call resolves a template of r that calls function (with its arguments).
func call(resolver *templates.TemplateResolver, r Resolver, function string) (templates.TemplateResult, error) {
	start, stop := r.Delims()
	quoted := strings.ReplaceAll(function, `"`, `\"`) // inside a JSON string
	return resolver.ResolveTemplate([]byte(`{"a": "`+start+` `+quoted+` `+stop+`"}`), nil, &templates.ResolveOptions{})
}

func isBuiltin(name string) bool {
	return slices.Contains([]string{"and", "call", "eq", "ge", "gt", "html", "index", "js", "le", "len", "lt", "ne",
		"not", "or", "print", "printf", "println", "slice", "urlquery"}, name)
}
