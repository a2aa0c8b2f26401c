package imports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

// module is the import path of the module whose packages are checked.
const module = "github.com/canopy-policy/canopy"

// layer is a class of packages and the classes its packages may import.
type layer struct {
	// name names the layer in violations and in mayImport.
	name string
	// packages are patterns of package paths relative to the module: a path,
	// "dir/*" (the packages one level below dir), "dir/..." (dir and every
	// package below it) or "*suffix" (every package whose name ends in
	// suffix, as httptest beside net/http). A package belongs to the layer
	// of its most specific pattern: an exact path, then a name suffix, then
	// the longest pattern.
	packages string
	// mayImport are the layers its packages may import.
	mayImport string
}

// layers is the import rule, lowest layer first, one line per layer.
// Controllers may import libraries but no other controller: what two
// controllers share moves down into a leaf.
var layers = []layer{
	{"api", "api/... deploy/...", "api"},
	{"leaf", "pkg/* pkg/spoke/internal/* internal/*", "api leaf"},
	{"library", "pkg/report pkg/vet pkg/dryrun", "api leaf library"},
	{"controller", "pkg/hub/* pkg/spoke/*", "api leaf library"},
	{"assembly", "pkg/hub pkg/spoke", "api leaf library controller assembly"},
	{"program", "cmd/...", "api leaf library controller assembly"},
	{"test-only", "internal/test/... *test", "api leaf library controller assembly test-only"},
	{"tool", "hack/... test/...", "api leaf library controller assembly test-only tool"},
}

// cliNeverLinks are the packages (patterns, as in layer) kubectl-canopy
// must not link: the hub's controllers and their Prometheus registrations.
var cliNeverLinks = []string{"pkg/hub", "pkg/hub/..."}

// goPackage is what go list says of one package.
type goPackage struct {
	ImportPath string
	Imports    []string
	Deps       []string
	Error      *struct{ Err string }
}

// TestImportsRunOneWay checks every import between the module's packages
// (test files aside: tests may run what they test) against layers.
func TestImportsRunOneWay(t *testing.T) {
	pkgs := goList(t, "./...")
	if len(pkgs) == 0 {
		t.Fatal("go list found no package")
	}
	if v := violations(pkgs, layers); len(v) > 0 {
		t.Errorf("%d import(s) break the import rule (docs/architecture.md, \"The import rule\"; the layers are in test/imports):\n  %s",
			len(v), strings.Join(v, "\n  "))
	}
}

// TestCLILinksNoHubPackage checks that kubectl-canopy links no package of
// the hub (go list -deps).
func TestCLILinksNoHubPackage(t *testing.T) {
	cli := goList(t, "./cmd/kubectl-canopy")
	if len(cli) != 1 {
		t.Fatalf("go list ./cmd/kubectl-canopy: %d packages", len(cli))
	}
	var linked []string
	for _, dep := range cli[0].Deps {
		if rel, ok := relative(dep); ok && matchesAny(rel, cliNeverLinks) {
			linked = append(linked, rel)
		}
	}
	if len(linked) > 0 {
		t.Errorf("kubectl-canopy links hub packages (move what it needs into a leaf or a library):\n  %s", strings.Join(linked, "\n  "))
	}
}

// TestLinksNoOCMComponent checks that no package of the module, tests
// included, links OCM's own components (open-cluster-management.io/ocm):
// OCM's registration, work and placement run as the binaries
// hack/install-ocm-binaries.sh builds, outside this module, as on a real
// hub, so that their dependencies never constrain Canopy's.
func TestLinksNoOCMComponent(t *testing.T) {
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("finding the module's root: %v", err)
	}
	cmd := exec.Command("go", "list", "-e", "-test", "-deps", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = strings.TrimSpace(string(root))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -test -deps ./...: %v", err)
	}
	var linked []string
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "open-cluster-management.io/ocm/") {
			linked = append(linked, pkg)
		}
	}
	if len(linked) > 0 {
		t.Errorf("packages of OCM's components are linked (run them as processes, see internal/test/ocmagents):\n  %s",
			strings.Join(linked, "\n  "))
	}
}

// TestViolationsCatchesBadImports checks the checker on made-up packages.
func TestViolationsCatchesBadImports(t *testing.T) {
	pkgs := []goPackage{
		{ImportPath: module + "/pkg/report", Imports: []string{module + "/pkg/hub/propagator", module + "/pkg/compliance", "fmt"}},
		{ImportPath: module + "/pkg/hub/rootstatus", Imports: []string{module + "/pkg/hub/propagator", module + "/pkg/replica"}},
		{ImportPath: module + "/pkg/spoke/syncer", Imports: []string{module + "/pkg/dryrun", module + "/internal/test/controlplane"}},
		{ImportPath: module + "/pkg/hub", Imports: []string{module + "/pkg/hub/propagator"}},
		{ImportPath: module + "/api/v1", Imports: []string{module + "/pkg/compliance"}},
		{ImportPath: module + "/cmd/hub", Imports: []string{module + "/pkg/hub", module + "/internal/test/testenv"}},
		{ImportPath: module + "/somewhere/new"},
	}
	got := violations(pkgs, layers)
	want := []string{
		"api/v1 (api) imports pkg/compliance (leaf)",
		"cmd/hub (program) imports internal/test/testenv (test-only)",
		"pkg/hub/rootstatus (controller) imports pkg/hub/propagator (controller)",
		"pkg/report (library) imports pkg/hub/propagator (controller)",
		"pkg/spoke/syncer (controller) imports internal/test/controlplane (test-only)",
		"somewhere/new is in no layer: add it to the table in test/imports",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestLayerOf(t *testing.T) {
	for pkg, want := range map[string]string{
		"api/v1": "api", "api/hierarchy/v1alpha1": "api", "deploy/crds": "api",
		"pkg/compliance": "leaf", "pkg/hubrbac": "leaf", "pkg/spoke/internal/clusterns": "leaf", "pkg/spoke/internal/evaluator": "leaf", "pkg/spoke/internal/enqueue": "leaf", "internal/scheme": "leaf",
		"pkg/report": "library", "pkg/dryrun": "library",
		"pkg/hub/propagator": "controller", "pkg/spoke/syncer": "controller",
		"pkg/hub": "assembly", "pkg/spoke": "assembly", "internal/cmdutil": "leaf",
		"internal/test/testenv": "test-only", "internal/test/controlplane": "test-only", "internal/test/browser": "test-only", "internal/test/cmdtest": "test-only", "pkg/hierarchy/hierarchytest": "test-only",
		"pkg/spoke/internal/evaluator/evaluatortest": "test-only", "cmd/kubectl-canopy": "program", "test/e2e": "tool", "hack/demo": "tool",
		"pkg/hub/propagator/sub": "", "internal/scheme/sub": "",
	} {
		if got := layerOf(pkg, layers); got.name != want {
			t.Errorf("layerOf(%s) = %q, want %q", pkg, got.name, want)
		}
	}
}

// violations returns, sorted, the imports of pkgs that layers does not
// allow, and the packages of the module in no layer.
func violations(pkgs []goPackage, layers []layer) []string {
	var out []string
	for _, p := range pkgs {
		from, ok := relative(p.ImportPath)
		if !ok {
			continue
		}
		fl := layerOf(from, layers)
		if fl.name == "" {
			out = append(out, from+" is in no layer: add it to the table in test/imports")
			continue
		}
		for _, imp := range p.Imports {
			to, ok := relative(imp)
			if !ok {
				continue
			}
			tl := layerOf(to, layers)
			if tl.name == "" || !slices.Contains(strings.Fields(fl.mayImport), tl.name) {
				out = append(out, fmt.Sprintf("%s (%s) imports %s (%s)", from, fl.name, to, cmpOr(tl.name, "no layer")))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// layerOf returns the layer of pkg (relative to the module), or the zero
// layer when no pattern matches.
func layerOf(pkg string, layers []layer) layer {
	var best layer
	bestScore := -1
	for _, l := range layers {
		for _, pattern := range strings.Fields(l.packages) {
			if score := specificity(pattern, pkg); score > bestScore {
				best, bestScore = l, score
			}
		}
	}
	return best
}

// specificity is how closely pattern matches pkg: -1 when it does not, and
// more for an exact path than for any wildcard, more for a longer pattern.
func specificity(pattern, pkg string) int {
	switch {
	case pattern == pkg:
		return 1 << 16
	case !matches(pattern, pkg):
		return -1
	case strings.HasPrefix(pattern, "*"):
		return 1 << 15
	}
	return len(pattern)
}

func matches(pattern, pkg string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*"); ok {
		return strings.HasSuffix(path.Base(pkg), suffix)
	}
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == dir || strings.HasPrefix(pkg, dir+"/")
	}
	if dir, ok := strings.CutSuffix(pattern, "/*"); ok {
		return path.Dir(pkg) == dir
	}
	return pattern == pkg
}

func matchesAny(pkg string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return matches(p, pkg) })
}

// relative returns importPath relative to the module, and false for a
// package of another module.
func relative(importPath string) (string, bool) {
	if importPath == module {
		return "", true
	}
	return strings.CutPrefix(importPath, module+"/")
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// goList runs go list -deps=false -e -json on patterns from the module's
// root and decodes its packages. A package that does not load is logged:
// its imports are still checked, and its own tests report the error.
func goList(t *testing.T, patterns ...string) []goPackage {
	t.Helper()
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("finding the module's root: %v", err)
	}
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Imports,Deps,Error"}, patterns...)...)
	cmd.Dir = strings.TrimSpace(string(root))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(patterns, " "), err, stderr.String())
	}
	var pkgs []goPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list: %v", err)
		}
		if p.Error != nil {
			t.Logf("%s does not load: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
