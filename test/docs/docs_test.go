package docs

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDocsReferencesExist checks the repository's README.md,
// DEVELOPMENT.md, docs/ and examples/ against its files, its Makefile and
// the help of kubectl-canopy built from this tree.
func TestDocsReferencesExist(t *testing.T) {
	g := NewWithT(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	pages, err := checkedPages(root)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pages).To(ContainElement("README.md"))

	help := binaryHelp(buildCLI(t, root))
	// The checker reads cobra's help: if it read nothing, every command
	// would pass unchecked.
	rootCommand := parseHelp(nil, mustHelp(t, help, nil))
	g.Expect(rootCommand.subcommands).To(ContainElements("status", "explain", "deps", "vet", "plan", "tree"))
	g.Expect(rootCommand.flags).To(HaveKeyWithValue("kubeconfig", true))
	g.Expect(parseHelp([]string{"status"}, mustHelp(t, help, []string{"status"})).shorthands).To(HaveKeyWithValue("A", false))

	findings, err := check(root, help)
	g.Expect(err).NotTo(HaveOccurred())
	if len(findings) > 0 {
		lines := make([]string, len(findings))
		for i, f := range findings {
			lines[i] = f.String()
		}
		t.Errorf("%d reference(s) in the docs lead nowhere (%d pages checked):\n%s",
			len(findings), len(pages), strings.Join(lines, "\n"))
	}
}

// buildCLI builds kubectl-canopy from the tree at root into a temporary
// directory.
//
// Note: go run keeps the executables it links in the build cache, go build
// -o links anew each time (seconds, for a 50 MB binary): the test has go
// run build it and copy it out with -exec cp.
func buildCLI(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kubectl-canopy")
	build := exec.Command("go", "run", "-exec", "cp", "./cmd/kubectl-canopy", bin)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building kubectl-canopy: %v\n%s", err, out)
	}
	return bin
}

// binaryHelp reads the help of the kubectl-canopy binary at bin.
func binaryHelp(bin string) helpFunc {
	return func(path []string) (string, error) {
		out, err := exec.Command(bin, append(path, "--help")...).Output()
		if err != nil {
			return "", fmt.Errorf("running %s --help: %w", strings.Join(append([]string{bin}, path...), " "), err)
		}
		return string(out), nil
	}
}

// dirHelp reads the help of the command at path from
// dir/kubectl-canopy[_sub...].txt.
func dirHelp(dir string) helpFunc {
	return func(path []string) (string, error) {
		name := strings.Join(append([]string{"kubectl-canopy"}, path...), "_") + ".txt"
		out, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("reading the canned help: %w", err)
		}
		return string(out), nil
	}
}

// mustHelp is help(path) or a fatal error.
func mustHelp(t *testing.T, help helpFunc, path []string) string {
	t.Helper()
	out, err := help(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheckFindsBrokenReferences runs the checker on the made-up tree
// under testdata/tree, whose pages reference correctly everything they
// reference except one link, one make target and one flag.
func TestCheckFindsBrokenReferences(t *testing.T) {
	g := NewWithT(t)
	root := filepath.Join("testdata", "tree")
	findings, err := check(root, dirHelp(filepath.Join(root, "help")))
	g.Expect(err).NotTo(HaveOccurred())
	var got []string
	for _, f := range findings {
		got = append(got, f.String())
	}
	g.Expect(got).To(Equal([]string{
		`README.md:8: link "docs/missing.md": docs/missing.md does not exist`,
		"docs/guide.md:11: `make deploy`: the Makefile has no target \"deploy\"",
		"docs/guide.md:23: `kubectl canopy status`: unknown flag --bogus",
	}))
}

// TestSlug checks the anchors of headings against GitHub's.
func TestSlug(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"The CLI: `kubectl canopy`", "the-cli-kubectl-canopy"},
		{"Benchmarks (`make bench`)", "benchmarks-make-bench"},
		{"Templates: one policy per cluster, values", "templates-one-policy-per-cluster-values"},
		{"`max_pending` and _emphasis_ and **bold**", "max_pending-and-emphasis-and-bold"},
		{"A [link](x.md) &amp; ![image](y.png)", "a-link--image"},
		{"Déjà vu — 3½ minutes", "déjà-vu--3-minutes"},
		{"The code `a` code", "the-code-a-code"},
	} {
		if got := slug(tc.heading); got != tc.want {
			t.Errorf("slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
	seen := map[string]int{}
	var got []string
	for _, h := range []string{"Usage", "Usage", "Usage 1", "Usage"} {
		got = append(got, uniqueSlug(seen, h))
	}
	if want := []string{"usage", "usage-1", "usage-1-1", "usage-2"}; !slices.Equal(got, want) {
		t.Errorf("uniqueSlug of the same headings = %q, want %q", got, want)
	}
}

// TestSplitCodeSpans checks code spans as CommonMark delimits them.
func TestSplitCodeSpans(t *testing.T) {
	for _, tc := range []struct {
		line, prose string
		spans       []string
	}{
		{"run `make test` now", "run \x00 now", []string{"make test"}},
		{"``a ` b`` and `c`", "\x00 and \x00", []string{"a ` b", "c"}},
		{"an unclosed ` tick", "an unclosed ` tick", nil},
		{"`` `x` ``", "\x00", []string{"`x`"}},
	} {
		prose, spans := splitCodeSpans(tc.line)
		if prose != tc.prose || !slices.Equal(spans, tc.spans) {
			t.Errorf("splitCodeSpans(%q) = %q, %q; want %q, %q", tc.line, prose, spans, tc.prose, tc.spans)
		}
	}
}
