package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"golang.org/x/term"
	certificatesv1 "k8s.io/api/certificates/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/pkg/report"
)

// defaultExamples are applied on the hub: a namespace and a PolicySet placed
// on every cluster, holding an operator-style install ordered by
// dependencies and a HierarchyPolicy.
var defaultExamples = []string{"examples/demo", "examples/ordered-install", "examples/hierarchy/policy.yaml"}

// examplesNamespace is where namespaced example objects without a namespace
// go, as with `kubectl -n policies apply -f`.
const examplesNamespace = "policies"

// demo is one run of the demo.
type demo struct {
	opts  options
	dir   string
	out   io.Writer
	env   *testenv.Env
	procs []*process
}

func (d *demo) say(format string, args ...any) {
	fmt.Fprintf(d.out, format+"\n", args...)
}

// startClusters starts the hub and the managed clusters, OCM's hub
// components (kube-controller-manager for certificates, the registration
// and placement controllers, the addon webhook), and joins every cluster
// the way `clusteradm join` does: its registration agent asks with a
// bootstrap token, the hub accepts it (auto-approval of the bootstrap
// user, as a demo hub may be set up) and signs its certificate, and its
// work agent starts with the identity OCM issued. It then labels the
// clusters as the examples' Placements expect: every cluster is a dev
// cluster named by its name label (as ACM's import labels it), and the last
// one is also a canary.
func (d *demo) startClusters(ctx context.Context) error {
	start := time.Now()
	d.say("Starting a hub and %d managed clusters (kube-apiserver + etcd each) and OCM's hub controllers...",
		len(d.opts.clusters))
	env, err := testenv.Start(ctx, testenv.Options{ManagedClusters: d.opts.clusters, Dir: d.dir, Unregistered: true})
	if err != nil {
		return fmt.Errorf("starting the clusters: %w", err)
	}
	d.env = env
	for _, step := range []func(context.Context, *testenv.Env) error{
		ocmagents.StartControllerManager,
		func(ctx context.Context, env *testenv.Env) error {
			return ocmagents.StartRegistrationController(ctx, env, ocmagents.RegistrationOptions{AutoApprove: true})
		},
		ocmagents.StartPlacementController,
		ocmagents.StartAddonWebhook,
	} {
		if err := step(ctx, env); err != nil {
			return err
		}
	}
	d.say("  hub ready in %s; joining the clusters (clusteradm join, with a bootstrap token):", time.Since(start).Round(100*time.Millisecond))
	for i, mc := range env.Managed {
		if err := d.join(ctx, mc, i == len(env.Managed)-1); err != nil {
			return err
		}
	}
	d.say("Clusters ready in %s.", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// join joins mc and labels it; canary marks the canary cluster.
func (d *demo) join(ctx context.Context, mc *testenv.ManagedCluster, canary bool) error {
	start := time.Now()
	if _, err := ocmagents.Join(ctx, d.env, mc, false); err != nil {
		return err
	}
	csrs := &certificatesv1.CertificateSigningRequestList{}
	if err := d.env.Hub.Client.List(ctx, csrs, client.MatchingLabels{clusterv1.ClusterNameLabelKey: mc.Name}); err != nil {
		return err
	}
	for _, csr := range csrs.Items {
		d.say("  %s: CertificateSigningRequest %s by %s: %s, signed", mc.Name, csr.Name, csr.Spec.Username, approval(csr))
	}
	labels := map[string]string{"name": mc.Name, "environment": "dev"}
	if canary {
		labels["canary"] = "true"
	}
	if err := ocmagents.LabelCluster(ctx, d.env, mc.Name, labels); err != nil {
		return err
	}
	d.say("  %s: accepted and joined in %s; labelled %v", mc.Name, time.Since(start).Round(100*time.Millisecond), labels)
	return nil
}

// approval says who approved csr, from its Approved condition.
func approval(csr certificatesv1.CertificateSigningRequest) string {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved {
			return "approved (" + c.Reason + ")"
		}
	}
	return "not approved"
}

// startHub runs the hub controller, with its addon manager and dashboard,
// recording compliance history into a new database: a history left by an
// earlier demo is of clusters that no longer exist.
func (d *demo) startHub(context.Context) error {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(d.logs(), "history.db"+suffix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing the history of an earlier demo: %w", err)
		}
	}
	hub, err := startProcess("canopy-hub", filepath.Join(d.opts.binDir, "canopy-hub"), d.logs(),
		"--kubeconfig", d.env.Hub.KubeconfigPath, "--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--dashboard-address", d.opts.dashboard, "--history-database", filepath.Join(d.logs(), "history.db"))
	if err != nil {
		return err
	}
	d.procs = append(d.procs, hub)
	d.say("Started canopy-hub (logs in %s; compliance history in %s).", d.logs(), filepath.Join(d.logs(), "history.db"))
	return nil
}

// startAgents runs one agent per managed cluster, each with the hub
// credential OCM issued its addon (enableAddon waits for it).
func (d *demo) startAgents(context.Context) error {
	for _, m := range d.env.Managed {
		agent, err := startProcess("canopy-agent-"+m.Name, filepath.Join(d.opts.binDir, "canopy-agent"), d.logs(),
			"--kubeconfig", m.KubeconfigPath, "--hub-kubeconfig", m.HubKubeconfigPath, "--cluster-name", m.Name,
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
		if err != nil {
			return err
		}
		d.procs = append(d.procs, agent)
	}
	d.say("Started %d canopy-agent processes, each with its addon's OCM-issued hub credential.", len(d.env.Managed))
	return nil
}

func (d *demo) logs() string { return filepath.Join(d.dir, "logs") }

// applyExamples applies the example policies on the hub.
func (d *demo) applyExamples(ctx context.Context) error {
	objs, err := controlplane.ReadObjects(d.opts.examples...)
	if err != nil {
		return fmt.Errorf("reading the examples: %w", err)
	}
	for _, obj := range objs {
		namespaced, err := d.env.Hub.Client.IsObjectNamespaced(obj)
		if err == nil && namespaced && obj.GetNamespace() == "" {
			obj.SetNamespace(examplesNamespace)
		}
	}
	if err := controlplane.Apply(ctx, d.env.Hub.Client, objs...); err != nil {
		return fmt.Errorf("applying the examples: %w", err)
	}
	d.say("Applied %d objects from %v on the hub.", len(objs), d.opts.examples)
	return nil
}

// legend explains the compliance table's columns.
const legend = `Compliance per policy and cluster, as the hub sees it:
  one column per managed cluster: Compliant, NonCompliant, Pending (a template waits on a dependency),
    - (placed there, no report yet), blank (not placed there);
  COMPLIANT, NONCOMPLIANT, PENDING: on how many clusters the policy is in that state.
The table is printed again each time it changes, for as long as the demo runs.`

// showCompliance prints the compliance table each time it changes until
// ctx ends. Once every policy is Compliant everywhere, or the settle timeout
// passes, it says so and tells the user how to explore (describe), once;
// it keeps watching: policies added, changed or deleted later appear.
func (d *demo) showCompliance(ctx context.Context) error {
	d.say("\n%s", legend)
	start, last, described := time.Now(), "", false
	for {
		table, settled, err := d.table(ctx)
		if err != nil || ctx.Err() != nil {
			return err
		}
		if table != last {
			d.say("\n[%5.1fs]", time.Since(start).Seconds())
			fmt.Fprint(d.out, table)
			last = table
		}
		switch {
		case described:
		case settled:
			d.say("\nEvery policy is Compliant on every cluster it is placed on.")
			d.describe()
			described = true
		case time.Since(start) >= d.opts.settle:
			d.say("\nNot everything is Compliant after %s; the table above is the current state.", d.opts.settle)
			d.describe()
			described = true
		}
		if err := d.processesAlive(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// table renders the hub's compliance table, with a column for every
// managed cluster from the start, and says whether everything is
// Compliant.
func (d *demo) table(ctx context.Context) (string, bool, error) {
	roots := &policyv1.PolicyList{}
	if err := d.env.Hub.Client.List(ctx, roots); err != nil {
		if ctx.Err() != nil {
			return "", false, nil
		}
		return "", false, fmt.Errorf("listing policies: %w", err)
	}
	m := report.Build(roots.Items)
	for _, mc := range d.env.Managed {
		if !slices.Contains(m.Clusters, mc.Name) {
			m.Clusters = append(m.Clusters, mc.Name)
		}
	}
	slices.Sort(m.Clusters)
	var table bytes.Buffer
	if err := report.Render(&table, m, report.RenderOptions{Colour: isTerminal(d.out)}); err != nil {
		return "", false, err
	}
	return table.String(), m.Settled(), nil
}

func (d *demo) processesAlive(ctx context.Context) error {
	for _, p := range d.procs {
		if err := p.exited(ctx); err != nil {
			return err
		}
	}
	return nil
}

// describe tells the user how to explore what runs.
func (d *demo) describe() {
	d.say("")
	w := tabwriter.NewWriter(d.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tROLE\tKUBECONFIG")
	fmt.Fprintf(w, "%s\thub\t%s\n", d.env.Hub.Name, d.env.Hub.KubeconfigPath)
	for _, m := range d.env.Managed {
		fmt.Fprintf(w, "%s\tmanaged\t%s\n", m.Name, m.KubeconfigPath)
		fmt.Fprintf(w, "%s\tagent's hub identity\t%s\n", m.Name, m.HubKubeconfigPath)
	}
	_ = w.Flush()
	d.say("\nExplore, for example:")
	d.say("  kubectl --kubeconfig %s get policies -A", d.env.Hub.KubeconfigPath)
	if len(d.env.Managed) > 0 {
		m := d.env.Managed[0]
		d.say("  kubectl --kubeconfig %s get policies,configurationpolicies -n %s", m.KubeconfigPath, m.Name)
	}
	d.say("  %s --kubeconfig %s explain ordered-install", filepath.Join(d.opts.binDir, "kubectl-canopy"), d.env.Hub.KubeconfigPath)
	if d.opts.dashboard != "" {
		d.say("The dashboard: http://%s/", d.opts.dashboard)
		if slices.Contains(d.opts.examples, "examples/ordered-install") {
			d.say("  ordered-install over time, Pending then Compliant: http://%s/policies/%s/ordered-install", d.opts.dashboard, examplesNamespace)
		}
	}
	d.say("Logs of the hub controller, the agents and OCM's controllers: %s", filepath.Join(d.dir, "logs"))
	d.say("\nThe table below changes as you apply, change or delete policies on the hub. Press Ctrl-C to stop.")
}

// stop ends the processes, then the clusters.
func (d *demo) stop() {
	var errs []error
	for _, p := range d.procs {
		errs = append(errs, p.stop())
	}
	if d.env != nil {
		d.say("Stopping the clusters...")
		errs = append(errs, d.env.Stop())
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, "demo: stopping:", err)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) //nolint:gosec // a file descriptor fits in an int
}
