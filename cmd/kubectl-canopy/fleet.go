package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	policyv1 "github.com/canopy-policy/canopy/api/v1"
	"github.com/canopy-policy/canopy/pkg/historyview"
)

// fleetOptions are the flags of `status --fleet`.
type fleetOptions struct {
	fleet     bool
	dashboard string
	service   string
}

// addFleetFlags adds the flags of `status --fleet` to cmd.
func (f *fleetOptions) addFleetFlags(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.fleet, "fleet", false,
		"Show every cluster of every hub recording to the hub's shared PostgreSQL history, grouped by hub, with each hub's data age; read from the hub's dashboard (started with --fleet).")
	cmd.Flags().StringVar(&f.dashboard, "dashboard", "", "With --fleet: URL of the hub's dashboard, e.g. http://localhost:8090; empty means through the API server's service proxy.")
	cmd.Flags().StringVar(&f.service, "dashboard-service", defaultDashboardService, "With --fleet: the dashboard's Service as namespace/name:port, reached through the API server's service proxy.")
}

// runFleet prints the fleet view the hub's dashboard serves.
func (o *statusOptions) runFleet(ctx context.Context, args []string) error {
	if len(args) > 0 {
		return errors.New("--fleet shows every policy of every hub: give no policy")
	}
	if err := checkOutput(o.output, outputText, outputJSON, outputYAML); err != nil {
		return err
	}
	h := &historyOptions{globalOptions: o.globalOptions, dashboard: o.dashboard, service: o.service}
	body, err := h.get(ctx, "/api/fleet", nil)
	if err != nil {
		return err
	}
	var answer historyview.FleetView
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("reading the dashboard's answer: %w", err)
	}
	if o.output != outputText {
		return printStructured(o.out, o.output, answer)
	}
	return writeFleet(o.out, answer)
}

// writeFleet prints the hubs with their data age, the policies rolled up
// across hubs, and each hub's clusters.
func writeFleet(w io.Writer, a historyview.FleetView) error {
	clusters := 0
	for _, h := range a.Hubs {
		clusters += len(h.Clusters)
	}
	fmt.Fprintf(w, "Fleet of %s and %s, read %s from the history database they share (through hub %s).\n\n",
		count(len(a.Hubs), "hub", "hubs"), count(clusters, "cluster", "clusters"), a.ReadAt.UTC().Format(time.RFC3339), a.Hub)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HUB\tDATA\tLAST WRITE\tCLUSTERS\tNOTE")
	for _, h := range a.Hubs {
		data, last := h.Freshness, "unknown"
		if h.DataAgeSeconds != nil {
			data += ", " + h.DataAge + " old"
		}
		if h.LastWrite != nil {
			last = h.LastWrite.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", h.Name, data, last, len(h.Clusters), h.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(a.Policies) == 0 {
		_, err := fmt.Fprintln(w, "\nThe database holds no compliance yet.")
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tCOMPLIANCE\tACROSS HUBS")
	for _, p := range a.Policies {
		fmt.Fprintf(tw, "%s/%s\t%s\t%s\n", p.Namespace, p.Name, stateOrUnknown(p.Compliant), p.Summary)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range a.Hubs {
		fmt.Fprintf(w, "\n%s (%s", h.Name, h.Freshness)
		if h.DataAgeSeconds != nil {
			fmt.Fprintf(w, ", last write %s ago", h.DataAge)
		}
		fmt.Fprintln(w, ")")
		if len(h.Clusters) == 0 {
			fmt.Fprintln(w, "  no compliance recorded by this hub")
			continue
		}
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  CLUSTER\tPOLICY\tCOMPLIANCE\tAS OF")
		for _, c := range h.Clusters {
			for _, cell := range c.Policies {
				fmt.Fprintf(tw, "  %s\t%s/%s\t%s\t%s\n", c.Name, cell.Policy.Namespace, cell.Policy.Name, stateOrUnknown(cell.Compliant), cell.AsOf.UTC().Format(time.RFC3339))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// stateOrUnknown shows an empty compliance as unknown.
func stateOrUnknown(s policyv1.ComplianceState) string {
	if s == "" {
		return "unknown"
	}
	return string(s)
}
