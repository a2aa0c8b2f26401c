package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/canopy-policy/canopy/pkg/templating"
	"github.com/canopy-policy/canopy/pkg/vet"
)

// errVetFailed makes vet exit non-zero when it found errors; the findings
// themselves are already printed.
var errVetFailed = errors.New("vet found errors")

// newVetCommand builds `kubectl canopy vet FILE|DIR...`.
func newVetCommand(opts *globalOptions) *cobra.Command {
	var output string
	var denylist []string
	cmd := &cobra.Command{
		Use:   "vet FILE|DIR...",
		Short: "Check policies offline: schema, names, templates, dependency and hierarchy cycles, collisions",
		Long: `vet checks Policies, PlacementBindings, PolicySets, ConfigurationPolicies
(standalone or inline in policy-templates), HierarchyPolicies and SubNamespaces
without a cluster: against the CRD schemas Canopy installs, the 62-character
limit on a root Policy's namespace and name, dependency cycles among the
policies given, HierarchyPolicy tree problems, SubNamespace cycles, and
objects declared twice.

It parses every Go template with the delimiters and functions of the resolver
that will read it: hub templates ({{hub ... hub}}) in policy-templates, managed
templates ({{ }}) in object-templates, object-templates-raw and customMessage.
Syntax errors, unknown functions, context fields the resolver does not set
(.ObjectName in a hub template, .ManagedClusterName in a managed one) and hub
lookups outside the policy's namespace are errors, at their line in the file.
Names and namespaces the API server would refuse are errors (templated names
are checked once resolved). What Canopy does not support is a warning: policy
templates of kinds the agent does not evaluate (it evaluates ConfigurationPolicy,
CertificatePolicy, OperatorPolicy, HierarchyPolicy and Gatekeeper's kinds), PlacementBindings
to a PlacementRule, templates nothing resolves. Given the hub's and the
agents' --template-function-denylist, a call of a function it denies is a
warning too.

Directories are walked for .yaml and .yml files. Objects without a namespace
are taken to be in -n (default "default"). It exits non-zero when it finds an
error; warnings alone do not fail.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVet(cmd, opts, args, output, denylist)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml; one line per finding when empty.")
	cmd.Flags().StringSliceVar(&denylist, templating.DenylistFlag, nil,
		"Comma-separated template functions the hub and the agents deny (their --"+templating.DenylistFlag+"): a call of one is a warning.")
	return cmd
}

func runVet(cmd *cobra.Command, opts *globalOptions, paths []string, output string, denylist []string) error {
	if err := checkOutput(output, outputText, outputJSON, outputYAML); err != nil {
		return err
	}
	checker, err := vet.New(vet.Options{DefaultNamespace: opts.namespace, TemplateFuncDenylist: denylist})
	if err != nil {
		return fmt.Errorf("loading the CRD schemas: %w", err)
	}
	docs, findings, err := vet.ReadPaths(paths)
	if err != nil {
		return err
	}
	findings = append(findings, checker.Check(cmd.Context(), docs)...)
	findings = vet.Sort(findings)
	if output != outputText {
		if findings == nil {
			findings = []vet.Finding{}
		}
		if err := printStructured(opts.out, output, findings); err != nil {
			return err
		}
	} else {
		for _, f := range findings {
			fmt.Fprintln(opts.out, f.String())
		}
		if len(findings) == 0 {
			fmt.Fprintf(opts.out, "%d documents checked, no problems found\n", len(docs))
		}
	}
	if vet.HasErrors(findings) {
		return errVetFailed
	}
	return nil
}
