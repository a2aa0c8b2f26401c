package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/dryrun"
	"github.com/canopy-policy/canopy/pkg/hubtemplates"
	"github.com/canopy-policy/canopy/pkg/replica"
	"github.com/canopy-policy/canopy/pkg/spoke/configpolicy"
	"github.com/canopy-policy/canopy/pkg/spoke/syncer"
	"github.com/canopy-policy/canopy/pkg/templating"
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
	cfg    *rest.Config
	client client.Client
	// namespace is where policies that name none are planned, and the
	// templates of hub Policies: -n, else --cluster, else the context's.
	namespace string
	// hub reads the hub for hub templates; nil without --hub-kubeconfig
	// or --hub-context.
	hub *rest.Config
	// cluster is the managed cluster hub templates are resolved for.
	cluster string
	// findClusterNamespace is true when neither -n nor --cluster was
	// given: a hub Policy's templates are then planned in the namespace
	// of its local copy on the managed cluster, when there is one.
	findClusterNamespace bool
}

// planOptions are plan's own flags.
type planOptions struct {
	output        string
	hubKubeconfig string
	hubContext    string
	cluster       string
}

// planLong is the help text of plan.
const planLong = `plan reads the HierarchyPolicies, ConfigurationPolicies and Policies (their
ConfigurationPolicy and HierarchyPolicy templates) of FILE and shows what an
enforce evaluation would do on the managed cluster of --kubeconfig/--context,
and why, using the agent's own planners. Nothing is written. Live propagation
and pruning are not planned.

Managed-cluster templates ({{ }} in object-templates and object-templates-raw)
are resolved against that cluster, as the agent would resolve them now, and
each create and update shows the object it would write (in -o json and yaml,
as "object"). Secret data, and every value resolved from a Secret or an
encrypted value, shows as [redacted].

Hub templates ({{hub ... hub}}) in a Policy on the hub are resolved as the hub
would resolve them for the cluster named by --cluster, reading the hub of
--hub-kubeconfig (its current context, or --hub-context), or of --hub-context
in the kubeconfig of the managed cluster, before the templates are planned;
nothing is written to the hub either. A template whose hub templates fail is a
PROBLEM with the error and is not planned; without a hub, a template with hub
templates is a PROBLEM and is not planned either.

A policy that names no namespace is planned in -n, else the --cluster
namespace, else the context's namespace. So are the templates of a Policy on
the hub (one without the root-policy label): the Policy's own namespace is the
hub's policy namespace, not the cluster namespace; without -n and --cluster,
they are planned where the agent keeps that Policy's copy on this cluster (the
one Policy labelled as its replica), when there is one. The templates of a replica
Policy (with the root-policy label) are planned in its namespace, the cluster
namespace.`

// newPlanCommand builds `kubectl canopy plan FILE`.
func newPlanCommand(opts *globalOptions) *cobra.Command {
	po := &planOptions{}
	cmd := &cobra.Command{
		Use:   "plan FILE",
		Short: "Show what a policy would create, update and delete on a managed cluster, writing nothing",
		Long:  planLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(po.output, outputText, outputJSON, outputYAML); err != nil {
				return err
			}
			plans, err := runPlan(cmd.Context(), opts, po, args[0])
			if err != nil {
				return err
			}
			if po.output != outputText {
				return printStructured(opts.out, po.output, plans)
			}
			printPlans(opts.out, plans)
			return nil
		},
	}
	cmd.Flags().StringVarP(&po.output, "output", "o", "", "Output format: json or yaml; text when empty.")
	cmd.Flags().StringVar(&po.hubKubeconfig, "hub-kubeconfig", "",
		"Path to the hub's kubeconfig: resolve the hub templates of Policies for --cluster.")
	cmd.Flags().StringVar(&po.hubContext, "hub-context", "",
		"The hub's kubeconfig context: resolve the hub templates of Policies for --cluster.")
	cmd.Flags().StringVar(&po.cluster, "cluster", "",
		"The managed cluster's name: hub templates are resolved for it, and policies planned in its namespace unless -n is given.")
	return cmd
}

func runPlan(ctx context.Context, opts *globalOptions, po *planOptions, file string) ([]planOf, error) {
	docs, findings, err := vet.ReadPaths([]string{file})
	if err != nil {
		return nil, err
	}
	if vet.HasErrors(findings) {
		return nil, fmt.Errorf("reading %s: %s", file, findings[0])
	}
	p, err := newPlanner(opts, po)
	if err != nil {
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

// newPlanner connects to the managed cluster, and to the hub when asked.
func newPlanner(opts *globalOptions, po *planOptions) (*planner, error) {
	withHub := po.hubKubeconfig != "" || po.hubContext != ""
	if withHub && po.cluster == "" {
		return nil, errors.New("--hub-kubeconfig and --hub-context need --cluster: hub templates are resolved for one cluster")
	}
	p := &planner{cluster: po.cluster}
	ns, explicit, err := opts.namespaceOrDefault()
	if err != nil {
		return nil, err
	}
	p.namespace = ns
	if !explicit && po.cluster != "" {
		p.namespace = po.cluster
	}
	p.findClusterNamespace = !explicit && po.cluster == ""
	if p.cfg, err = opts.restConfig(); err != nil {
		return nil, err
	}
	if p.client, err = opts.client(); err != nil {
		return nil, err
	}
	if withHub {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = cmp.Or(po.hubKubeconfig, opts.kubeconfig)
		overrides := &clientcmd.ConfigOverrides{CurrentContext: po.hubContext}
		if p.hub, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig(); err != nil {
			return nil, fmt.Errorf("loading the hub's kubeconfig: %w", err)
		}
	}
	return p, nil
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

// planPolicy plans the templates of a Policy: a replica's in its own
// namespace; a hub Policy's in the planner's namespace, once the hub
// resolved its hub templates for the planner's cluster.
func (p *planner) planPolicy(ctx context.Context, obj map[string]any) ([]planOf, error) {
	policy := &policyv1.Policy{}
	if err := p.decode(obj, policy); err != nil {
		return nil, err
	}
	parent := "Policy " + policy.Namespace + "/" + policy.Name + " > "
	planned, ns := policy, policy.Namespace
	if !replica.IsReplica(policy) {
		ns = p.clusterNamespace(ctx, policy)
		var err error
		if planned, err = p.resolveHubTemplates(ctx, policy); err != nil {
			return nil, err
		}
	}
	var out []planOf
	var errs []error
	for i, pt := range planned.Spec.PolicyTemplates {
		t := policyTemplate{policy: policy, raw: pt.ObjectDefinition.Raw, written: policy.Spec.PolicyTemplates[i].ObjectDefinition.Raw}
		more, err := p.planTemplate(ctx, t, ns, parent)
		if err != nil {
			errs = append(errs, fmt.Errorf("policy-templates[%d]: %w", i, err))
		}
		out = append(out, more...)
	}
	return out, errors.Join(errs...)
}

// clusterNamespace is where the agent keeps hub Policy policy's copy on
// this managed cluster: the namespace of the local Policy labelled as its
// replica, when exactly one holds it and neither -n nor --cluster named
// one; the planner's namespace otherwise. So a hub policy file planned
// against a managed cluster compares with what its agent wrote, never a
// difference that only the file's own namespace creates.
func (p *planner) clusterNamespace(ctx context.Context, policy *policyv1.Policy) string {
	if !p.findClusterNamespace {
		return p.namespace
	}
	copies := &policyv1.PolicyList{}
	err := p.client.List(ctx, copies, client.MatchingLabels{policyv1.RootPolicyLabel: replica.Name(policy)})
	if err != nil || len(copies.Items) != 1 {
		return p.namespace
	}
	return copies.Items[0].Namespace
}

// resolveHubTemplates returns the replica of root for the planner's
// cluster, its hub templates resolved on the hub (a template that fails
// carries the error in templating.HubTemplatesErrorAnnotation); or root
// itself when it has no hub templates or there is no hub.
func (p *planner) resolveHubTemplates(ctx context.Context, root *policyv1.Policy) (*policyv1.Policy, error) {
	if p.hub == nil || !slices.ContainsFunc(root.Spec.PolicyTemplates, func(pt policyv1.PolicyTemplate) bool {
		return templating.HasHubTemplate(pt.ObjectDefinition.Raw)
	}) {
		return root, nil
	}
	resolved, err := hubtemplates.ResolveReplica(ctx, p.hub, root, p.cluster)
	if resolved == nil {
		return nil, fmt.Errorf("resolving the hub templates for cluster %s: %w", p.cluster, err)
	}
	return resolved, nil // the failures are on the templates, reported by planTemplate
}

// policyTemplate is a policy template of policy, the Policy of the file,
// to plan: raw, once the hub resolved it; written, as the file has it.
type policyTemplate struct {
	policy       *policyv1.Policy
	raw, written []byte
}

// planTemplate plans t in namespace ns, or reports why its hub templates
// keep it from being planned.
func (p *planner) planTemplate(ctx context.Context, t policyTemplate, ns, parent string) ([]planOf, error) {
	def := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(t.raw, &def.Object); err != nil {
		return nil, err
	}
	if def.Object == nil {
		return nil, errors.New("the objectDefinition is empty")
	}
	def.SetNamespace(ns) // templates live beside their Policy, in the cluster namespace
	if problem := p.hubProblem(t, def); problem != "" {
		return []planOf{{Policy: parent + def.GetKind() + " " + ns + "/" + def.GetName(),
			Actions: []dryrun.Action{}, Problems: []string{problem}}}, nil
	}
	return p.planDocument(ctx, def.Object, parent)
}

// hubProblem says why the hub templates of t (def, decoded) keep it from
// being planned, or "": the hub failed to resolve them (the error without
// the template it quotes, as written in the file), or no hub resolved them.
func (p *planner) hubProblem(t policyTemplate, def *unstructured.Unstructured) string {
	if msg := def.GetAnnotations()[templating.HubTemplatesErrorAnnotation]; msg != "" {
		msg = strings.Replace(msg, " "+string(t.written)+":", ":", 1)
		return "hub templates failed for cluster " + cmp.Or(p.cluster, t.policy.Namespace) + ": " + msg
	}
	if !templating.HasHubTemplate(t.raw) || disablesTemplates(t.policy.Annotations) || disablesTemplates(def.GetAnnotations()) {
		return ""
	}
	if replica.IsReplica(t.policy) {
		return "hub templates ({{hub ... hub}}) left unresolved in a replica: the hub resolves them when it " +
			"propagates the root Policy; plan the root Policy with --hub-kubeconfig and --cluster"
	}
	return "hub templates ({{hub ... hub}}) are resolved by the hub for each cluster: pass --hub-kubeconfig " +
		"(or --hub-context) and --cluster to plan this template"
}

// disablesTemplates reports whether annotations turn templates off, read as
// OCM reads them.
func disablesTemplates(annotations map[string]string) bool {
	disabled, err := strconv.ParseBool(annotations[templating.DisableTemplatesAnnotation])
	return err == nil && disabled
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

// printPlans writes the plans as text: one line per action, and under a
// create or update the object it would write.
func printPlans(w io.Writer, plans []planOf) {
	counts := map[string]int{}
	for _, pl := range plans {
		fmt.Fprintf(w, "%s:\n", pl.Policy)
		for _, problem := range pl.Problems {
			fmt.Fprintf(w, "  PROBLEM   %s\n", problem)
		}
		if len(pl.Actions) == 0 && len(pl.Problems) == 0 {
			fmt.Fprintln(w, "  (no changes)")
		}
		for _, a := range pl.Actions {
			counts[a.Op]++
			id := a.Name
			if a.Namespace != "" {
				id = a.Namespace + "/" + a.Name
			}
			fmt.Fprintf(w, "  %-9s %s %s: %s\n", strings.ToUpper(a.Op), a.Kind, id, a.Reason)
			if a.Object != nil {
				fmt.Fprint(w, indent(objectYAML(a.Object), "      "))
			}
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

// objectYAML is obj as YAML, apiVersion, kind and metadata first, as
// kubectl shows objects.
func objectYAML(obj map[string]any) string {
	var b strings.Builder
	rest := maps.Clone(obj)
	for _, key := range []string{"apiVersion", "kind", "metadata"} {
		if v, ok := rest[key]; ok {
			b.WriteString(yamlOf(map[string]any{key: v}))
			delete(rest, key)
		}
	}
	if len(rest) > 0 {
		b.WriteString(yamlOf(rest))
	}
	return b.String()
}

func yamlOf(v any) string {
	out, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprintf("# cannot show the object: %v\n", err)
	}
	return string(out)
}

// indent prefixes every line of text with prefix.
func indent(text, prefix string) string {
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}
