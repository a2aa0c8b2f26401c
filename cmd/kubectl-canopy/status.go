package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// statusOptions are the flags of `status`.
type statusOptions struct {
	*globalOptions
	allNamespaces bool
	output        string
	fleetOptions
}

func newStatusCommand(global *globalOptions) *cobra.Command {
	o := &statusOptions{globalOptions: global}
	cmd := &cobra.Command{
		Use:   "status [policy]",
		Short: "Show the compliance of policies on each managed cluster",
		Long: `Show the compliance matrix of root policies: one row per policy, one column per
managed cluster, and the number of clusters that are Compliant, NonCompliant
and Pending. A cluster the policy is not placed on is blank; "excluded" is one
a PolicySet's spec.exclusions keeps it off; "-" is a placed cluster that has
not reported yet. Under it: the PolicySets of the namespace scope with their
members that are not Compliant and their exclusions, and where each rollout
(spec.rolloutStrategy) stands.

Without -n or -A, the namespace of the kubeconfig context is used when the
context sets one, and every namespace otherwise. A policy is named as
namespace/name or as name (looked up in -n, or in every namespace).

With --fleet: every cluster of every hub that records to the PostgreSQL
history this hub shares, grouped by hub, each hub with the age of its data
("stale" when it has written nothing for a while, "unknown" when it never
wrote), and each policy rolled up across the hubs that apply it. It is read
from the hub's dashboard (started with --fleet) as history is (--dashboard
or --dashboard-service); the CLI never holds the database's credentials.`,
		Example: `  kubectl canopy status
  kubectl canopy status -n policies
  kubectl canopy status policies/install-operator -o json
  kubectl canopy status --fleet --dashboard http://localhost:8090`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args)
		},
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false,
		"List the policies of every namespace, whatever -n and the context say.")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format: json or yaml; text when unset.")
	o.addFleetFlags(cmd)
	return cmd
}

func (o *statusOptions) run(cmd *cobra.Command, args []string) error {
	if o.fleet {
		return o.runFleet(cmd.Context(), args)
	}
	if err := checkOutput(o.output, outputText, outputJSON, outputYAML); err != nil {
		return err
	}
	colour, err := o.colour()
	if err != nil {
		return err
	}
	roots, err := o.roots(cmd, args)
	if err != nil {
		return err
	}
	m := report.Build(roots)
	if o.output != outputText {
		return printStructured(o.out, o.output, m)
	}
	if len(m.Rows) == 0 {
		replicas, err := o.replicasInScope(cmd)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(o.out, noPoliciesMessage(replicas))
		return err
	}
	if err := report.Render(o.out, m, report.RenderOptions{Colour: colour}); err != nil {
		return err
	}
	t := m.Totals()
	_, err = fmt.Fprintf(o.out, "\n%s on %s: %d Compliant, %d NonCompliant, %d Pending, %d unknown (cells: policy × cluster)\n",
		count(len(m.Rows), "policy", "policies"), count(len(m.Clusters), "cluster", "clusters"),
		t.Compliant, t.NonCompliant, t.Pending, t.Unknown)
	if err != nil {
		return err
	}
	return o.printSetsAndRollouts(cmd, args, roots, colour)
}

// printSetsAndRollouts prints, under the matrix, the PolicySets of the
// namespace scope with their members' roll-up (not when one policy was
// named), and where each rollout of the listed roots stands.
func (o *statusOptions) printSetsAndRollouts(cmd *cobra.Command, args []string, roots []policyv1.Policy, colour bool) error {
	if len(args) == 0 {
		sets, err := o.setsInScope(cmd)
		if err != nil {
			return err
		}
		if len(sets) > 0 {
			fmt.Fprintln(o.out)
			if err := report.RenderSets(o.out, report.BuildSetRows(sets, roots), report.RenderOptions{Colour: colour}); err != nil {
				return err
			}
		}
	}
	if slices.ContainsFunc(roots, func(p policyv1.Policy) bool { return p.Status.Rollout != nil }) {
		fmt.Fprintln(o.out)
	}
	return report.RenderRollouts(o.out, roots)
}

// setsInScope lists the PolicySets of status's namespace scope.
func (o *statusOptions) setsInScope(cmd *cobra.Command) ([]policyv1beta1.PolicySet, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	ns := ""
	if !o.allNamespaces {
		if ns, err = o.namespaceScope(); err != nil {
			return nil, err
		}
	}
	list := &policyv1beta1.PolicySetList{}
	if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing policy sets: %w", err)
	}
	return list.Items, nil
}

// noPoliciesMessage says that no root policy was found and, when replicas
// or local copies (policies labelled with their root) were, that this is a
// managed cluster or a cluster namespace, not the hub's policy namespaces.
func noPoliciesMessage(replicas int) string {
	if replicas == 0 {
		return "No policies found."
	}
	return fmt.Sprintf("No root policies found, only %s that are replicas or local copies (label %s): "+
		"this is a managed cluster or a cluster namespace of the hub. status reads the root policies on the hub: "+
		"point --kubeconfig (or --context) at the hub, and -n at the policies' namespace, or use -A.",
		count(replicas, "policy", "policies"), policyv1.RootPolicyLabel)
}

// replicasInScope counts the policies in status's namespace scope that are
// replicas or local copies.
func (o *statusOptions) replicasInScope(cmd *cobra.Command) (int, error) {
	c, err := o.client()
	if err != nil {
		return 0, err
	}
	ns := ""
	if !o.allNamespaces {
		if ns, err = o.namespaceScope(); err != nil {
			return 0, err
		}
	}
	list := &policyv1.PolicyList{}
	if err := c.List(cmd.Context(), list, client.InNamespace(ns)); err != nil {
		return 0, fmt.Errorf("listing policies: %w", err)
	}
	n := 0
	for _, p := range list.Items {
		if _, replica := p.Labels[policyv1.RootPolicyLabel]; replica {
			n++
		}
	}
	return n, nil
}

// count returns "1 policy" or "2 policies".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// roots fetches the root policy named in args, or those of the namespace
// scope.
func (o *statusOptions) roots(cmd *cobra.Command, args []string) ([]policyv1.Policy, error) {
	c, err := o.client()
	if err != nil {
		return nil, err
	}
	if len(args) == 1 {
		p, err := o.findPolicy(cmd.Context(), c, args[0])
		if err != nil {
			return nil, err
		}
		return []policyv1.Policy{*p}, nil
	}
	if o.allNamespaces {
		return rootPolicies(cmd.Context(), c, "")
	}
	ns, err := o.namespaceScope()
	if err != nil {
		return nil, err
	}
	return rootPolicies(cmd.Context(), c, ns)
}
