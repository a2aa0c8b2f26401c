package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hierarchyv1alpha1 "github.com/canopy-policy/canopy/api/hierarchy/v1alpha1"
	"github.com/canopy-policy/canopy/pkg/hierarchy"
	"github.com/canopy-policy/canopy/pkg/spoke/syncer"
)

// treeItem is one namespace (or abstract node) of a printed tree.
type treeItem struct {
	Name string `json:"name"`
	// Notes qualify the name: abstract, root, missing...
	Notes []string `json:"notes,omitempty"`
	// Objects are what the namespace gets, "Kind name ← from".
	Objects  []string    `json:"objects,omitempty"`
	Children []*treeItem `json:"children,omitempty"`
}

// treeReport is everything tree prints.
type treeReport struct {
	// Declared are the HierarchyPolicies' trees.
	Declared []declaredTree `json:"declared"`
	// Live is the live-propagation forest of parent and template labels.
	Live []*treeItem `json:"live"`
}

type declaredTree struct {
	Policy   string      `json:"policy"`
	Roots    []*treeItem `json:"roots"`
	Problems []string    `json:"problems,omitempty"`
}

// newTreeCommand builds `kubectl canopy tree`.
func newTreeCommand(opts *globalOptions) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "tree",
		Short: "Show a managed cluster's namespace hierarchy and what each namespace inherits",
		Long: `tree reads, from the managed cluster of --kubeconfig/--context, the
HierarchyPolicies (in -n, or all namespaces) and prints each declared tree with
the objects every namespace gets and the node that declares them, as the syncer
computes them; then the live-propagation tree (namespaces labelled
hierarchy.canopy.io/parent or /template, which SubNamespaces create) with the
copies each namespace holds and where they come from.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, outputText, outputJSON, outputYAML); err != nil {
				return err
			}
			report, err := runTree(cmd.Context(), opts)
			if err != nil {
				return err
			}
			if output != outputText {
				return printStructured(opts.out, output, report)
			}
			printTreeReport(opts.out, report)
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json or yaml; a text tree when empty.")
	return cmd
}

func runTree(ctx context.Context, opts *globalOptions) (treeReport, error) {
	c, err := opts.client()
	if err != nil {
		return treeReport{}, err
	}
	policies := &hierarchyv1alpha1.HierarchyPolicyList{}
	if err := c.List(ctx, policies, client.InNamespace(opts.namespace)); err != nil {
		return treeReport{}, fmt.Errorf("listing hierarchy policies: %w", err)
	}
	namespaces := &corev1.NamespaceList{}
	if err := c.List(ctx, namespaces); err != nil {
		return treeReport{}, fmt.Errorf("listing namespaces: %w", err)
	}
	exists := map[string]bool{}
	for _, ns := range namespaces.Items {
		exists[ns.Name] = true
	}
	report := treeReport{Declared: []declaredTree{}, Live: []*treeItem{}}
	for i := range policies.Items {
		report.Declared = append(report.Declared, declared(&policies.Items[i], exists))
	}
	report.Live, err = liveTree(ctx, c, namespaces.Items, policies.Items)
	return report, err
}

// declared is the tree of one HierarchyPolicy, from the syncer's own tree
// building.
func declared(p *hierarchyv1alpha1.HierarchyPolicy, exists map[string]bool) declaredTree {
	nodes := hierarchy.DeclaredTree(p)
	items := map[string]*treeItem{}
	for _, n := range nodes {
		item := &treeItem{Name: n.Name}
		switch {
		case n.Broken:
			item.Notes = append(item.Notes, "invalid")
		case n.Abstract:
			item.Notes = append(item.Notes, "abstract")
		case !exists[n.Name]:
			item.Notes = append(item.Notes, "namespace not created yet")
		}
		for _, o := range n.Objects {
			from := "← " + o.From
			if o.From == n.Name {
				from = "(own)"
			}
			item.Objects = append(item.Objects, o.Kind+" "+o.Name+" "+from)
		}
		items[n.Name] = item
	}
	out := declaredTree{Policy: p.Namespace + "/" + p.Name, Roots: []*treeItem{}, Problems: hierarchy.TreeProblems(p)}
	for _, n := range nodes {
		parent, ok := items[n.Parent]
		switch {
		case n.Parent == "" || !ok:
			out.Roots = append(out.Roots, items[n.Name])
		case !n.Broken:
			parent.Children = append(parent.Children, items[n.Name])
		}
	}
	return out
}

// liveTree is the forest of namespaces linked by parent or template
// labels, each with the propagated copies it holds.
func liveTree(ctx context.Context, c client.Client, namespaces []corev1.Namespace,
	policies []hierarchyv1alpha1.HierarchyPolicy) ([]*treeItem, error) {
	items := map[string]*treeItem{}
	source := map[string]string{}
	for i := range namespaces {
		ns := &namespaces[i]
		items[ns.Name] = &treeItem{Name: ns.Name}
		if t := ns.Labels[hierarchyv1alpha1.TypeLabel]; t != "" {
			items[ns.Name].Notes = append(items[ns.Name].Notes, t)
		}
		if src := syncer.SourceNamespace(ns); src != "" {
			source[ns.Name] = src
			how := "parent"
			if ns.Labels[hierarchyv1alpha1.ParentLabel] == "" {
				how = "template"
			}
			items[ns.Name].Notes = append(items[ns.Name].Notes, how+" "+src)
		}
	}
	var roots []*treeItem
	for _, ns := range namespaces {
		src, hasSource := source[ns.Name]
		parent, parentExists := items[src]
		switch {
		case hasSource && parentExists && !onCycle(source, ns.Name):
			parent.Children = append(parent.Children, items[ns.Name])
		case hasSource || slices.Contains(sourceValues(source), ns.Name):
			roots = append(roots, items[ns.Name])
		}
	}
	kinds := syncer.PropagatedKinds(policies)
	for name, item := range items {
		for _, gk := range kinds {
			objs, err := listKind(ctx, c, gk.Group, gk.Kind, name)
			if err != nil {
				return nil, err
			}
			item.Objects = append(item.Objects, describeCopies(objs)...)
		}
		slices.Sort(item.Objects)
	}
	return roots, nil
}

func sourceValues(source map[string]string) []string {
	out := make([]string, 0, len(source))
	for _, v := range source {
		out = append(out, v)
	}
	return out
}

// onCycle reports whether following sources from ns comes back to it.
func onCycle(source map[string]string, ns string) bool {
	seen := map[string]bool{}
	for cur := source[ns]; cur != ""; cur = source[cur] {
		if cur == ns {
			return true
		}
		if seen[cur] {
			return false
		}
		seen[cur] = true
	}
	return false
}

// describeCopies says, of objects in one namespace, which are copies
// ("Kind name ← source") and which are propagated from here.
func describeCopies(objs []unstructured.Unstructured) []string {
	var out []string
	for _, o := range objs {
		ann := o.GetAnnotations()
		if from := ann[hierarchyv1alpha1.FromAnnotation]; from != "" {
			out = append(out, o.GetKind()+" "+o.GetName()+" ← "+from)
		} else if mode := ann[hierarchyv1alpha1.PropagateAnnotation]; mode != "" {
			out = append(out, o.GetKind()+" "+o.GetName()+" (propagates: "+mode+")")
		}
	}
	return out
}

// listKind lists the objects of a kind in a namespace, none when the kind
// is not served.
func listKind(ctx context.Context, c client.Client, group, kind, ns string) ([]unstructured.Unstructured, error) {
	mapping, err := c.RESTMapper().RESTMapping(schemaGroupKind(group, kind))
	if err != nil {
		return nil, nil //nolint:nilerr // a kind that is not served has no copies
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(mapping.GroupVersionKind.GroupVersion().WithKind(kind + "List"))
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("listing %s in %s: %w", kind, ns, err)
	}
	return list.Items, nil
}

// printTreeReport writes the trees as text.
func printTreeReport(w io.Writer, r treeReport) {
	for _, d := range r.Declared {
		fmt.Fprintf(w, "HierarchyPolicy %s:\n", d.Policy)
		for _, root := range d.Roots {
			printItem(w, root, "", "")
		}
		for _, p := range d.Problems {
			fmt.Fprintf(w, "  problem: %s\n", p)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Live propagation (parent and template labels):")
	if len(r.Live) == 0 {
		fmt.Fprintln(w, "  (no namespace has a parent or template label)")
	}
	for _, root := range r.Live {
		printItem(w, root, "", "")
	}
}

// printItem writes item with the connector of its line, its objects and
// its children; prefix continues the lines of its ancestors.
func printItem(w io.Writer, item *treeItem, connector, prefix string) {
	label := item.Name
	for _, n := range item.Notes {
		label += " [" + n + "]"
	}
	fmt.Fprintf(w, "%s%s%s\n", prefix, connector, label)
	childPrefix := prefix
	switch connector {
	case "├── ":
		childPrefix += "│   "
	case "└── ":
		childPrefix += "    "
	}
	bar := "  "
	if len(item.Children) > 0 {
		bar = "│ "
	}
	for _, o := range item.Objects {
		fmt.Fprintf(w, "%s%s    %s\n", childPrefix, bar, o)
	}
	for i, child := range item.Children {
		conn := "├── "
		if i == len(item.Children)-1 {
			conn = "└── "
		}
		printItem(w, child, conn, childPrefix)
	}
}

func schemaGroupKind(group, kind string) schema.GroupKind {
	return schema.GroupKind{Group: group, Kind: kind}
}
