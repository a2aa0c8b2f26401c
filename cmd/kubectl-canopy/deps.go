package main

import (
	"fmt"

	"github.com/spf13/cobra"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// depsOptions are the flags of `deps`.
type depsOptions struct {
	*globalOptions
	output string
}

func newDepsCommand(global *globalOptions) *cobra.Command {
	o := &depsOptions{globalOptions: global}
	cmd := &cobra.Command{
		Use:   "deps <policy|policyset>",
		Short: "Show a policy's or PolicySet's dependency graph with the state of each node",
		Long: `Show what a policy waits for: its dependencies (spec.dependencies, which gate
every template), its templates and their extraDependencies, followed through
the Policies and PolicySets they name, in any namespace. Each node shows its
current compliance when the hub knows it (a template's is its worst over the
clusters). A name that is no root policy is looked up among the PolicySets:
the graph then starts at the set and its members.

-o json prints the same model the dashboard draws: each edge with met and,
when unmet, its reason.

-o dot prints the graph for Graphviz: kubectl canopy deps p -o dot | dot -Tsvg > deps.svg`,
		Example: `  kubectl canopy deps policies/install-app
  kubectl canopy deps policies/install-app -o dot | dot -Tpng > deps.png`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0])
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format: dot, json or yaml; a text tree when unset.")
	return cmd
}

func (o *depsOptions) run(cmd *cobra.Command, arg string) error {
	c, t, colour, err := o.startTarget(cmd.Context(), arg, o.output, outputText, outputDOT, outputJSON, outputYAML)
	if err != nil {
		return err
	}
	policies := &policyv1.PolicyList{}
	if err := c.List(cmd.Context(), policies); err != nil {
		return fmt.Errorf("listing policies: %w", err)
	}
	sets := &policyv1beta1.PolicySetList{}
	if err := c.List(cmd.Context(), sets); err != nil {
		return fmt.Errorf("listing policy sets: %w", err)
	}
	g, err := report.BuildGraph(t.ref(), report.Inventory{Policies: policies.Items, PolicySets: sets.Items})
	if err != nil {
		return err
	}
	switch o.output {
	case outputText:
		return report.RenderTree(o.out, g, report.RenderOptions{Colour: colour})
	case outputDOT:
		return report.RenderDOT(o.out, g)
	}
	return printStructured(o.out, o.output, g)
}
