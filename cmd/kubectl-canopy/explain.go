package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// explainOptions are the flags of `explain`.
type explainOptions struct {
	*globalOptions
	cluster string
	history int
	output  string
}

func newExplainCommand(global *globalOptions) *cobra.Command {
	o := &explainOptions{globalOptions: global}
	cmd := &cobra.Command{
		Use:   "explain <policy|policyset>",
		Short: "Explain a policy's state on each cluster: templates, unmet dependencies, cycles, history",
		Long: `Explain why a policy is in its state. For each managed cluster it is placed on,
and each of its templates: the template's compliance, every dependency that
is not met and why (not found, no API mapping, no status.compliant, or want X
got Y), the dependency cycle it is on, and the latest compliance messages.

The policy is named as namespace/name, or as name (looked up in -n, or in
every namespace). A name that is no root policy is looked up among the
PolicySets: for a set, explain lists its members' states and, per cluster
where the set is not Compliant, the member that holds it back and why.`,
		Example: `  kubectl canopy explain policies/install-app
  kubectl canopy explain install-app --cluster cluster1 --history 5
  kubectl canopy explain policies/install-app -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, args[0])
		},
	}
	cmd.Flags().StringVar(&o.cluster, "cluster", "", "Only this managed cluster.")
	cmd.Flags().IntVar(&o.history, "history", 3, "How many compliance messages of each template to show, newest first.")
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Output format: json or yaml; text when unset.")
	return cmd
}

func (o *explainOptions) run(cmd *cobra.Command, arg string) error {
	if o.history < 0 {
		return fmt.Errorf("invalid --history %d: want 0 or more", o.history)
	}
	c, t, colour, err := o.startTarget(cmd.Context(), arg, o.output, outputText, outputJSON, outputYAML)
	if err != nil {
		return err
	}
	if t.set != nil {
		return o.explainSet(cmd, c, t.set, colour)
	}
	root := t.policy
	replicas := &policyv1.PolicyList{}
	if err := c.List(cmd.Context(), replicas,
		client.MatchingLabels{policyv1.RootPolicyLabel: root.Namespace + "." + root.Name}); err != nil {
		return fmt.Errorf("listing the replicas of %s/%s: %w", root.Namespace, root.Name, err)
	}
	sets := &policyv1beta1.PolicySetList{}
	if err := c.List(cmd.Context(), sets, client.InNamespace(root.Namespace)); err != nil {
		return fmt.Errorf("listing the policy sets of namespace %s: %w", root.Namespace, err)
	}
	e := report.Explain(root, replicas.Items, report.ExplainOptions{Cluster: o.cluster, History: o.history, PolicySets: sets.Items})
	if o.cluster != "" && len(e.Clusters) == 0 && len(e.Excluded) == 0 {
		return fmt.Errorf("policy %s/%s is not placed on cluster %q", root.Namespace, root.Name, o.cluster)
	}
	if o.output != outputText {
		return printStructured(o.out, o.output, e)
	}
	return report.RenderExplanation(o.out, e, report.RenderOptions{Colour: colour})
}

// explainSet explains a PolicySet from its members' root policies and
// replicas.
func (o *explainOptions) explainSet(cmd *cobra.Command, c client.Client, set *policyv1beta1.PolicySet, colour bool) error {
	policies := &policyv1.PolicyList{}
	if err := c.List(cmd.Context(), policies); err != nil {
		return fmt.Errorf("listing policies: %w", err)
	}
	e := report.ExplainSet(set, report.Inventory{Policies: policies.Items})
	if o.output != outputText {
		return printStructured(o.out, o.output, e)
	}
	return report.RenderSetExplanation(o.out, e, report.RenderOptions{Colour: colour})
}
