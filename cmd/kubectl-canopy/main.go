// Command kubectl-canopy is Canopy's kubectl plugin (`kubectl canopy ...`):
// fleet compliance at a glance, why a policy is Pending, its dependency
// graph, offline validation, dry-run plans and a managed cluster's namespace
// tree.
package main

import (
	"cmp"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/canopy-policy/canopy/internal/scheme"
)

// globalOptions are the flags every command shares, spelled as kubectl
// spells them.
type globalOptions struct {
	kubeconfig string
	context    string
	namespace  string
	color      string
	noColor    bool
	out        io.Writer
	errOut     io.Writer
}

// commands is the explicit list of subcommands.
var commands = []func(*globalOptions) *cobra.Command{
	newStatusCommand,
	newExplainCommand,
	newDepsCommand,
	newVetCommand,
	newPlanCommand,
	newTreeCommand,
	newHistoryCommand,
	newVersionCommand,
}

func main() {
	if err := newRootCommand(os.Stdout, os.Stderr).ExecuteContext(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

// newRootCommand builds the command tree writing to out and errOut; tests
// call it with buffers.
func newRootCommand(out, errOut io.Writer) *cobra.Command {
	opts := &globalOptions{out: out, errOut: errOut}
	root := &cobra.Command{
		Use:           "kubectl-canopy",
		Short:         "Canopy policies across a fleet of clusters",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	flags := root.PersistentFlags()
	flags.StringVar(&opts.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file to use.")
	flags.StringVar(&opts.context, "context", "", "The name of the kubeconfig context to use.")
	flags.StringVarP(&opts.namespace, "namespace", "n", "", "If present, the namespace scope for this request.")
	flags.StringVar(&opts.color, "color", colorAuto,
		"When to colour compliance states: auto (when the output is a terminal and NO_COLOR is unset), always or never.")
	flags.BoolVar(&opts.noColor, "no-color", false, "Never colour the output (same as --color=never).")
	for _, newCommand := range commands {
		root.AddCommand(newCommand(opts))
	}
	return root
}

// clientConfig resolves the kubeconfig as kubectl does: --kubeconfig, then
// $KUBECONFIG, then ~/.kube/config, then in-cluster; --context picks the
// context and -n overrides its namespace.
func (o *globalOptions) clientConfig() clientcmd.ClientConfig {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.context}
	overrides.Context.Namespace = o.namespace
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// restConfig is the REST configuration of the selected cluster.
func (o *globalOptions) restConfig() (*rest.Config, error) {
	cfg, err := o.clientConfig().ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if cfg.QPS == 0 {
		// Note: client-go's default of 5 requests per second (burst 10)
		// made plan, which lists each listable kind of the cluster once
		// per policy, wait over ten seconds on the client's own limiter.
		// The plugin only reads; these are kubectl's discovery limits.
		cfg.QPS, cfg.Burst = cliQPS, cliBurst
	}
	return cfg, nil
}

// cliQPS and cliBurst bound the plugin's requests per second, as kubectl
// bounds its discovery.
const (
	cliQPS   = 50
	cliBurst = 300
)

// client is a client of the selected cluster that knows Canopy's and OCM's
// types.
func (o *globalOptions) client() (client.Client, error) {
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", cfg.Host, err)
	}
	return c, nil
}

// namespaceOrDefault is -n if given, else the kubeconfig context's
// namespace, else "default"; all reports whether -n was given at all.
func (o *globalOptions) namespaceOrDefault() (ns string, explicit bool, err error) {
	ns, explicit, err = o.clientConfig().Namespace()
	if err != nil {
		return "", false, fmt.Errorf("resolving namespace: %w", err)
	}
	return ns, explicit || o.namespace != "", nil
}

// namespaceScope is the namespace a read command is limited to: -n if
// given, else the kubeconfig context's namespace if the context sets one,
// else "" (every namespace).
//
// Note: clientcmd's Namespace reports only whether -n overrode it, not
// whether the context set one, hence the raw config.
func (o *globalOptions) namespaceScope() (string, error) {
	if o.namespace != "" {
		return o.namespace, nil
	}
	raw, err := o.clientConfig().RawConfig()
	if err != nil {
		return "", fmt.Errorf("loading kubeconfig: %w", err)
	}
	if c, ok := raw.Contexts[cmp.Or(o.context, raw.CurrentContext)]; ok {
		return c.Namespace, nil
	}
	return "", nil
}
