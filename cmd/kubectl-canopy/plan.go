package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/spoke/configpolicy"
	"github.com/canopy-policy/canopy/pkg/spoke/dryrun"
	"github.com/canopy-policy/canopy/pkg/spoke/syncer"
	"github.com/canopy-policy/canopy/pkg/vet"
)

// planOf is the plan of one policy of the file.
type planOf struct {
	// Policy is "Kind ns/name", with the Policy it is a template of.
	Policy   string          `json:"policy"`
	Actions  []dryrun.Action `json:"actions"`
	Problems []string        `json:"problems,omitempty"`
}

// planner plans on one managed cluster.
type planner struct {
	cfg       *rest.Config
	client    client.Client
	namespace string
}

// newPlanCommand builds `kubectl canopy plan FILE`.
func newPlanCommand(opts *globalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "plan FILE",
		Short: "Show what a policy would create, update and delete on a managed cluster, writing nothing",
		Long: `plan reads the HierarchyPolicies, ConfigurationPolicies and Policies (their
ConfigurationPolicy and HierarchyPolicy templates) of FILE and shows what an
enforce evaluation would do on the managed cluster of --kubeconfig/--context,
and why, using the agent's own planners. Nothing is written. Templates are
planned in the policy's namespace, else -n, else the context's namespace: on a
managed cluster, the cluster namespace. Live propagation and pruning are not
planned.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output, outputText, outputJSON, outputYAML); err != nil {
				return err
			}
			plans, err := runPlan(cmd.Context(), opts, args[0])
			if err != nil {
				return err
			}
			if output != outputText {
				return printStructured(opts.out, output, plans)
			}
			printPlans(opts.out, plans)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml; text when empty.")
	return cmd
}

func runPlan(ctx context.Context, opts *globalOptions, file string) ([]planOf, error) {
	docs, findings, err := vet.ReadPaths([]string{file})
	if err != nil {
		return nil, err
	}
	if vet.HasErrors(findings) {
		return nil, fmt.Errorf("reading %s: %s", file, findings[0])
	}
	p := &planner{}
	if p.namespace, _, err = opts.namespaceOrDefault(); err != nil {
		return nil, err
	}
	if p.cfg, err = opts.restConfig(); err != nil {
		return nil, err
	}
	if p.client, err = opts.client(); err != nil {
		return nil, err
	}
	plans := []planOf{}
	for _, d := range docs {
		more, err := p.planDocument(ctx, d.Object, "")
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", d.File, d.Line(), d, err)
		}
		plans = append(plans, more...)
	}
	return plans, nil
}

// planDocument plans one object; parent names the Policy of a template.
func (p *planner) planDocument(ctx context.Context, obj map[string]any, parent string) ([]planOf, error) {
	switch kind, _ := obj["kind"].(string); kind {
	case hierarchyv1alpha1.HierarchyPolicyKind:
		hp := &hierarchyv1alpha1.HierarchyPolicy{}
		if err := p.decode(obj, hp); err != nil {
			return nil, err
		}
		res, err := syncer.DryRun(ctx, p.cfg, p.client, hp)
		// Note: never nil, so that -o json shows an empty plan as [].
		actions := append([]dryrun.Action{}, res.Actions...)
		return []planOf{{Policy: parent + kind + " " + hp.Namespace + "/" + hp.Name, Actions: actions, Problems: res.Problems}}, err
	case "ConfigurationPolicy":
		cp := &policyv1.ConfigurationPolicy{}
		if err := p.decode(obj, cp); err != nil {
			return nil, err
		}
		actions, err := configpolicy.DryRun(ctx, p.cfg, cp)
		return []planOf{{Policy: parent + kind + " " + cp.Namespace + "/" + cp.Name, Actions: append([]dryrun.Action{}, actions...)}}, err
	case "Policy":
		return p.planPolicy(ctx, obj)
	}
	return nil, nil
}

// planPolicy plans the templates of a Policy.
func (p *planner) planPolicy(ctx context.Context, obj map[string]any) ([]planOf, error) {
	policy := &policyv1.Policy{}
	if err := p.decode(obj, policy); err != nil {
		return nil, err
	}
	var out []planOf
	var errs []error
	for i, pt := range policy.Spec.PolicyTemplates {
		u := map[string]any{}
		if err := utiljson.Unmarshal(pt.ObjectDefinition.Raw, &u); err != nil {
			errs = append(errs, fmt.Errorf("policy-templates[%d]: %w", i, err))
			continue
		}
		if ns, _ := u["metadata"].(map[string]any); ns != nil && ns["namespace"] == nil {
			ns["namespace"] = policy.Namespace // templates live beside their Policy, in the cluster namespace
		}
		more, err := p.planDocument(ctx, u, "Policy "+policy.Namespace+"/"+policy.Name+" > ")
		if err != nil {
			errs = append(errs, fmt.Errorf("policy-templates[%d]: %w", i, err))
		}
		out = append(out, more...)
	}
	return out, errors.Join(errs...)
}

// decode reads obj into a typed policy, in the planner's namespace when
// it names none.
func (p *planner) decode(obj map[string]any, into client.Object) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into); err != nil {
		return fmt.Errorf("decoding: %w", err)
	}
	if into.GetNamespace() == "" {
		into.SetNamespace(p.namespace)
	}
	return nil
}

// printPlans writes the plans as text: one line per action.
func printPlans(w io.Writer, plans []planOf) {
	counts := map[string]int{}
	for _, pl := range plans {
		fmt.Fprintf(w, "%s:\n", pl.Policy)
		for _, problem := range pl.Problems {
			fmt.Fprintf(w, "  PROBLEM   %s\n", problem)
		}
		if len(pl.Actions) == 0 {
			fmt.Fprintln(w, "  (no changes)")
		}
		for _, a := range pl.Actions {
			counts[a.Op]++
			id := a.Name
			if a.Namespace != "" {
				id = a.Namespace + "/" + a.Name
			}
			fmt.Fprintf(w, "  %-9s %s %s: %s\n", strings.ToUpper(a.Op), a.Kind, id, a.Reason)
		}
	}
	fmt.Fprintf(w, "Plan: %d to create, %d to update, %d to delete", counts["create"], counts["update"], counts["delete"])
	for _, op := range []string{"conflict", "hold", configpolicy.OpNoncompliant} {
		if counts[op] > 0 {
			fmt.Fprintf(w, ", %d %s", counts[op], op)
		}
	}
	fmt.Fprintln(w, ".")
}
