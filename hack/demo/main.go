// Command demo starts Canopy's local environment — one hub and managed
// clusters, each a real kube-apiserver and etcd — prints how to reach them
// and runs until interrupted. `make demo` runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/canopy-policy/canopy/internal/testenv"
)

func main() {
	dir := flag.String("dir", ".demo", "Directory for the kubeconfigs of the demo clusters.")
	clusters := flag.String("clusters", "cluster1,cluster2", "Comma-separated names of the managed clusters.")
	flag.Parse()
	testenv.LeaveSignalsToCaller() // run stops the environment on Ctrl-C
	if err := run(ctrl.SetupSignalHandler(), *dir, strings.Split(*clusters, ","), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run starts the environment, describes it on out and stops it when ctx ends.
func run(ctx context.Context, dir string, clusters []string, out io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(out, "Starting a hub and %d managed clusters (kube-apiserver + etcd each)...\n", len(clusters))
	env, err := testenv.Start(ctx, testenv.Options{ManagedClusters: clusters, Dir: dir})
	if err != nil {
		return fmt.Errorf("starting the environment: %w", err)
	}
	defer func() {
		fmt.Fprintln(out, "Stopping the clusters...")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "demo: stopping:", err)
		}
	}()
	fmt.Fprintf(out, "Ready in %s.\n\n", time.Since(start).Round(100*time.Millisecond))
	describe(out, env)
	fmt.Fprintln(out, "\nPress Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// describe prints a table of the clusters and their kubeconfigs.
func describe(out io.Writer, env *testenv.Env) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tROLE\tKUBECONFIG")
	fmt.Fprintf(w, "%s\thub\t%s\n", env.Hub.Name, env.Hub.KubeconfigPath)
	for _, m := range env.Managed {
		fmt.Fprintf(w, "%s\tmanaged\t%s\n", m.Name, m.KubeconfigPath)
		fmt.Fprintf(w, "%s\tagent's hub identity\t%s\n", m.Name, m.HubKubeconfigPath)
	}
	_ = w.Flush()
	fmt.Fprintf(out, "\nTry: kubectl --kubeconfig %s get managedclusters\n", env.Hub.KubeconfigPath)
}
