package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	policyv1beta1 "github.com/canopy-policy/canopy/api/v1beta1"
	"github.com/canopy-policy/canopy/pkg/report"
)

// Values of --color.
const (
	colorAuto   = "auto"
	colorAlways = "always"
	colorNever  = "never"
)

// Output formats of -o shared by the read commands; "" is the text form.
const (
	outputText = ""
	outputJSON = "json"
	outputYAML = "yaml"
	outputDOT  = "dot"
)

// colour reports whether to colour the output: --no-color and --color
// decide, and auto colours only a terminal when NO_COLOR is unset.
func (o *globalOptions) colour() (bool, error) {
	switch {
	case o.noColor || o.color == colorNever:
		return false, nil
	case o.color == colorAlways:
		return true, nil
	case o.color != colorAuto:
		return false, fmt.Errorf("invalid --color %q: want %s, %s or %s", o.color, colorAuto, colorAlways, colorNever)
	}
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false, nil
	}
	f, ok := o.out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())), nil
}

// checkOutput fails on an -o value that is not one of allowed.
func checkOutput(value string, allowed ...string) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	var names []string
	for _, a := range allowed {
		if a != outputText {
			names = append(names, a)
		}
	}
	return fmt.Errorf("unknown output format %q: use one of %s, or no -o for text", value, strings.Join(names, ", "))
}

// printStructured writes v as JSON or YAML, per format.
func printStructured(w io.Writer, format string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	if format == outputYAML {
		if data, err = yaml.JSONToYAML(data); err != nil {
			return fmt.Errorf("encoding the output: %w", err)
		}
	} else {
		data = append(data, '\n')
	}
	_, err = w.Write(data)
	return err
}

// rootPolicies lists the root policies (not replicas) in namespace, or in
// every namespace when namespace is empty.
func rootPolicies(ctx context.Context, c client.Reader, namespace string) ([]policyv1.Policy, error) {
	list := &policyv1.PolicyList{}
	if err := c.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("listing policies: %w", err)
	}
	roots := slices.DeleteFunc(list.Items, func(p policyv1.Policy) bool {
		_, replica := p.Labels[policyv1.RootPolicyLabel]
		return replica
	})
	return roots, nil
}

// splitName reads "namespace/name", or "name" in the namespace scope (-n,
// else the kubeconfig context's, else "" for every namespace).
func (o *globalOptions) splitName(arg string) (namespace, name string, err error) {
	namespace, name, qualified := strings.Cut(arg, "/")
	if qualified {
		return namespace, name, nil
	}
	namespace, err = o.namespaceScope()
	return namespace, arg, err
}

// findPolicy finds the root policy a command names: "namespace/name", or
// "name" in the -n namespace (or the kubeconfig context's). Without either,
// a name found in exactly one namespace is that policy.
func (o *globalOptions) findPolicy(ctx context.Context, c client.Reader, arg string) (*policyv1.Policy, error) {
	ns, name, err := o.splitName(arg)
	if err != nil {
		return nil, err
	}
	roots, err := rootPolicies(ctx, c, ns)
	if err != nil {
		return nil, err
	}
	roots = slices.DeleteFunc(roots, func(p policyv1.Policy) bool { return p.Name != name })
	switch len(roots) {
	case 0:
		if ns == "" {
			return nil, fmt.Errorf("%w: no root policy named %q in any namespace", report.ErrPolicyNotFound, name)
		}
		return nil, fmt.Errorf("%w: %s/%s", report.ErrPolicyNotFound, ns, name)
	case 1:
		return &roots[0], nil
	}
	var names []string
	for _, p := range roots {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return nil, fmt.Errorf("policy %q is ambiguous: %s; name it as namespace/name or use -n", name, strings.Join(names, ", "))
}

// start is how a command about one policy begins: it checks the -o value
// output against formats and --color, connects to the hub and finds the
// policy arg names.
func (o *globalOptions) start(ctx context.Context, arg, output string, formats ...string) (
	c client.Client, root *policyv1.Policy, colour bool, err error,
) {
	if err = checkOutput(output, formats...); err != nil {
		return nil, nil, false, err
	}
	if colour, err = o.colour(); err != nil {
		return nil, nil, false, err
	}
	if c, err = o.client(); err != nil {
		return nil, nil, false, err
	}
	if root, err = o.findPolicy(ctx, c, arg); err != nil {
		return c, nil, colour, err // the client, for a caller that looks further
	}
	return c, root, colour, nil
}

// findSet finds the PolicySet a command names, as findPolicy finds a
// policy; it is asked when no policy has that name.
func (o *globalOptions) findSet(ctx context.Context, c client.Reader, arg string) (*policyv1beta1.PolicySet, error) {
	ns, name, err := o.splitName(arg)
	if err != nil {
		return nil, err
	}
	list := &policyv1beta1.PolicySetList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil, fmt.Errorf("listing policy sets: %w", err)
	}
	sets := slices.DeleteFunc(list.Items, func(s policyv1beta1.PolicySet) bool { return s.Name != name })
	if len(sets) == 1 {
		return &sets[0], nil
	}
	if len(sets) > 1 {
		return nil, fmt.Errorf("policy set %q is in several namespaces; name it as namespace/name or use -n", name)
	}
	return nil, nil
}

// target is what a command about one policy names: a root policy, or else
// a PolicySet.
type target struct {
	policy *policyv1.Policy
	set    *policyv1beta1.PolicySet
}

// ref returns the target as a report.PolicyRef.
func (t target) ref() report.PolicyRef {
	if t.set != nil {
		return report.PolicyRef{Namespace: t.set.Namespace, Name: t.set.Name}
	}
	return report.PolicyRef{Namespace: t.policy.Namespace, Name: t.policy.Name}
}

// startTarget is start for commands that take a policy or a PolicySet:
// a name that is no root policy is looked up among the PolicySets.
func (o *globalOptions) startTarget(ctx context.Context, arg, output string, formats ...string) (
	c client.Client, t target, colour bool, err error,
) {
	c, t.policy, colour, err = o.start(ctx, arg, output, formats...)
	if err == nil || !errors.Is(err, report.ErrPolicyNotFound) || c == nil {
		return c, t, colour, err
	}
	set, setErr := o.findSet(ctx, c, arg)
	switch {
	case setErr != nil:
		return nil, t, false, setErr
	case set == nil:
		return nil, t, false, fmt.Errorf("%w (nor a policy set of that name)", err)
	}
	t.set = set
	return c, t, colour, nil
}
