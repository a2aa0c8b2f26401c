// Command demo runs the whole of Canopy locally: a hub and managed clusters
// (each a real kube-apiserver and etcd), OCM's hub controllers and
// klusterlet agents (the clusters join as with clusteradm), the hub
// controller and one agent per cluster as local processes, and the example
// policies. It prints the fleet's compliance as it
// changes, then keeps running so the user can explore with kubectl. `make
// demo` builds the binaries and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
)

// options are the demo's flags.
type options struct {
	dir      string
	binDir   string
	clusters []string
	examples []string
	settle   time.Duration
	// dashboard is the address of the hub's dashboard; "" means none.
	dashboard string
}

func main() {
	var opts options
	var clusters, examples string
	flag.StringVar(&opts.dir, "dir", ".demo", "Directory for the kubeconfigs and logs of the demo.")
	flag.StringVar(&opts.binDir, "bin", "bin", "Directory holding the canopy-hub and canopy-agent binaries (make build).")
	flag.StringVar(&clusters, "clusters", "cluster1,cluster2", "Comma-separated names of the managed clusters.")
	flag.StringVar(&examples, "examples", strings.Join(defaultExamples, ","),
		"Comma-separated example directories or files to apply on the hub.")
	flag.StringVar(&opts.dashboard, "dashboard-address", "127.0.0.1:8090", "Address of the hub's read-only dashboard; empty means none.")
	flag.DurationVar(&opts.settle, "settle-timeout", 3*time.Minute, "How long to show compliance changes before handing over.")
	flag.Parse()
	opts.clusters, opts.examples = strings.Split(clusters, ","), strings.Split(examples, ",")
	controlplane.LeaveSignalsToCaller() // run stops everything on Ctrl-C
	if err := run(ctrl.SetupSignalHandler(), opts, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// run starts everything, shows the compliance table until the fleet settles,
// and stops everything when ctx ends.
func run(ctx context.Context, opts options, out io.Writer) error {
	dir, err := filepath.Abs(opts.dir)
	if err != nil {
		return err
	}
	if err := logKlogToFile(filepath.Join(dir, "logs")); err != nil {
		return err
	}
	d := &demo{opts: opts, dir: dir, out: out}
	defer d.stop()
	for _, step := range []func(context.Context) error{d.startClusters, d.startHub, d.enableAddon, d.startAgents, d.applyExamples} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return d.showCompliance(ctx)
}
