package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// cliReference is the page the commands' help is rendered into.
var cliReference = filepath.Join("..", "..", "docs", "cli.md")

// cliIntro is the hand-written top of docs/cli.md; the rest of the page is
// each command's --help.
const cliIntro = "# The `kubectl canopy` reference\n\n" +
	"`kubectl-canopy` is Canopy's kubectl plugin. `make build` builds it into\n" +
	"`bin/kubectl-canopy`; put it on your `PATH` and kubectl finds it as\n" +
	"`kubectl canopy`.\n\n" +
	"| Command | Reads |\n" +
	"|---|---|\n" +
	"| `status`, `explain`, `deps` | the hub: root policies, their replicas and PolicySets |\n" +
	"| `plan`, `tree` | a managed cluster (`plan` also reads the hub for hub templates, with `--hub-kubeconfig` or `--hub-context`) |\n" +
	"| `vet` | only the files it is given |\n" +
	"| `history`, `status --fleet` | the hub's dashboard API (`/api/history`, `/api/fleet`), never the database |\n\n" +
	"No command writes to a cluster. The cluster is chosen as kubectl chooses\n" +
	"it: `--kubeconfig`, else `$KUBECONFIG`, else `~/.kube/config`, else the\n" +
	"in-cluster configuration; `--context` picks the context and `-n` the\n" +
	"namespace. `-o json` and `-o yaml` print the model the text is drawn\n" +
	"from, for scripts. A command that fails prints `Error: ...` and exits\n" +
	"with status 1; so does `vet` when it finds an error.\n\n" +
	"The rest of this page is each command's `--help`. It is generated\n" +
	"(cmd/kubectl-canopy/clidoc_test.go), and a test fails when it differs\n" +
	"from the help: change the help in the command, then run `make docs`.\n"

// TestCLIReference checks that docs/cli.md is cliIntro followed by the
// --help of the root command and of every subcommand; with -update it
// rewrites docs/cli.md instead.
func TestCLIReference(t *testing.T) {
	g := NewWithT(t)
	got, err := renderCLIReference()
	g.Expect(err).NotTo(HaveOccurred())
	if *update {
		g.Expect(os.WriteFile(cliReference, []byte(got), 0o644)).To(Succeed())
		return
	}
	want, err := os.ReadFile(cliReference)
	g.Expect(err).NotTo(HaveOccurred(), "run make docs to generate it")
	g.Expect(got).To(Equal(string(want)),
		"docs/cli.md is not the commands' help: run make docs (go test ./cmd/kubectl-canopy -run TestCLIReference -update)")
}

// renderCLIReference renders docs/cli.md: the intro, a list of the
// commands, then one section per command with its --help verbatim.
func renderCLIReference() (string, error) {
	var page strings.Builder
	page.WriteString(cliIntro)
	page.WriteString("\n## Commands\n\n")
	var sections strings.Builder
	root, err := helpOf()
	if err != nil {
		return "", err
	}
	writeSection(&sections, "kubectl canopy", root)
	page.WriteString("- [`kubectl canopy`](#kubectl-canopy): the global flags\n")
	for _, newCommand := range commands {
		cmd := newCommand(&globalOptions{})
		help, err := helpOf(cmd.Name())
		if err != nil {
			return "", err
		}
		title := "kubectl canopy " + cmd.Name()
		fmt.Fprintf(&page, "- [`%s`](#%s): %s\n", title, strings.ReplaceAll(title, " ", "-"), cmd.Short)
		writeSection(&sections, title, help)
	}
	page.WriteString(sections.String())
	return page.String(), nil
}

// writeSection writes a command's help under a heading named after it.
func writeSection(w *strings.Builder, title, help string) {
	fmt.Fprintf(w, "\n## %s\n\n```text\n%s```\n", title, help)
}

// helpOf is what `kubectl-canopy <path> --help` prints.
func helpOf(path ...string) (string, error) {
	var out bytes.Buffer
	root := newRootCommand(&out, &out)
	root.SetArgs(append(path, "--help"))
	if err := root.Execute(); err != nil {
		return "", fmt.Errorf("kubectl-canopy %s --help: %w", strings.Join(path, " "), err)
	}
	return out.String(), nil
}
