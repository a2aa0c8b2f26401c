package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/canopy-policy/canopy/pkg/historyview"
)

// outputTable and outputCSV are history's formats besides JSON.
const (
	outputTable = "table"
	outputCSV   = "csv"
)

// defaultDashboardService is the Service of the hub's dashboard that the
// history command reaches through the API server's service proxy.
const defaultDashboardService = "canopy-system/canopy-hub-dashboard:dashboard"

// historyOptions are the flags of `history`.
type historyOptions struct {
	*globalOptions
	cluster   string
	hub       string
	since     string
	output    string
	dashboard string
	service   string
}

func newHistoryCommand(global *globalOptions) *cobra.Command {
	o := &historyOptions{globalOptions: global}
	cmd := &cobra.Command{
		Use:   "history <policy|policyset>",
		Short: "Show the compliance history of a policy or a policy set",
		Long: `Show every compliance transition the hub recorded for a root policy, or for
each member of a PolicySet, on each cluster: when (the agent's time), the
template, the state and the message, oldest first. "history incomplete" rows
are gaps: more happened there than the replica's status history held while
the hub could not record it; read them as unknown, never as compliant.

The history is read from the hub's dashboard API (the CLI never holds the
database's credentials): through the API server's service proxy to
--dashboard-service (needs get on services/proxy there), or from --dashboard
when you reach the dashboard yourself (a port-forward, an ingress).`,
		Example: `  kubectl canopy history install-operator -n policies
  kubectl canopy history policies/baseline --cluster cluster-a --since 30d -o csv
  kubectl canopy history my-set --dashboard http://localhost:8090 -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd.Context(), args[0])
		},
	}
	cmd.Flags().StringVar(&o.cluster, "cluster", "", "Only this managed cluster.")
	cmd.Flags().StringVar(&o.hub, "hub", "", "Only what this hub (--hub-name) recorded; empty means every hub.")
	cmd.Flags().StringVar(&o.since, "since", "7d", "How far back: a duration (36h, 7d) or an RFC 3339 time.")
	cmd.Flags().StringVarP(&o.output, "output", "o", outputTable, "Output format: table, json or csv.")
	cmd.Flags().StringVar(&o.dashboard, "dashboard", "", "URL of the hub's dashboard, e.g. http://localhost:8090; empty means through the API server's service proxy.")
	cmd.Flags().StringVar(&o.service, "dashboard-service", defaultDashboardService, "The dashboard's Service as namespace/name:port, reached through the API server's service proxy.")
	return cmd
}

func (o *historyOptions) run(ctx context.Context, arg string) error {
	if err := checkOutput(o.output, outputTable, outputJSON, outputCSV); err != nil {
		return err
	}
	_, t, _, err := o.startTarget(ctx, arg, outputText, outputText)
	if err != nil {
		return err
	}
	path := fmt.Sprintf("/api/history/policies/%s/%s", url.PathEscape(t.ref().Namespace), url.PathEscape(t.ref().Name))
	if t.set != nil {
		path = fmt.Sprintf("/api/history/policysets/%s/%s", url.PathEscape(t.set.Namespace), url.PathEscape(t.set.Name))
	}
	params := map[string]string{"since": o.since}
	if o.cluster != "" {
		params["cluster"] = o.cluster
	}
	if o.hub != "" {
		params["hub"] = o.hub
	}
	body, err := o.get(ctx, path, params)
	if err != nil {
		return err
	}
	var answer historyview.HistoryView
	if err := json.Unmarshal(body, &answer); err != nil {
		return fmt.Errorf("reading the dashboard's answer: %w", err)
	}
	switch o.output {
	case outputJSON:
		return printStructured(o.out, outputJSON, answer)
	case outputCSV:
		return writeHistoryCSV(o.out, historyRows(answer))
	default:
		return writeHistoryTable(o.out, answer, historyRows(answer))
	}
}

// get reads path of the dashboard, directly or through the service proxy.
func (o *historyOptions) get(ctx context.Context, path string, params map[string]string) ([]byte, error) {
	if o.dashboard != "" {
		q := url.Values{}
		for k, v := range params {
			q.Set(k, v)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(o.dashboard, "/")+path+"?"+q.Encode(), nil)
		if err != nil {
			return nil, fmt.Errorf("reading the history from the dashboard: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("reading the history from the dashboard: %w", err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		if err != nil {
			return nil, fmt.Errorf("reading the history from the dashboard: %w", err)
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("the dashboard answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
		}
		return body, nil
	}
	ns, rest, ok := strings.Cut(o.service, "/")
	name, port, _ := strings.Cut(rest, ":")
	if !ok || ns == "" || name == "" {
		return nil, fmt.Errorf("--dashboard-service %q: want namespace/name:port", o.service)
	}
	cfg, err := o.restConfig()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the hub: %w", err)
	}
	body, err := cs.CoreV1().Services(ns).ProxyGet("http", name, port, path, params).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the history through the service proxy of %s (is the dashboard component enabled? else use --dashboard): %w", o.service, err)
	}
	return body, nil
}

// historyRow is one line of the table and CSV outputs: a transition, or a
// gap at its start.
type historyRow struct {
	at                                         time.Time
	hub, cluster, policy, template, state, msg string
}

// historyRows returns the transitions and gaps of a, oldest first.
func historyRows(a historyview.HistoryView) []historyRow {
	var rows []historyRow
	for _, t := range a.Transitions {
		rows = append(rows, historyRow{t.At, t.Hub, t.Cluster, t.Policy.Namespace + "/" + t.Policy.Name, t.Template, t.State, t.Message})
	}
	for _, g := range a.Gaps {
		rows = append(rows, historyRow{g.From, g.Hub, g.Cluster, g.Policy.Namespace + "/" + g.Policy.Name, g.Template, "history incomplete",
			fmt.Sprintf("more happened until %s than the replica's history held; unknown until then", g.To.UTC().Format(time.RFC3339))})
	}
	slices.SortStableFunc(rows, func(x, y historyRow) int { return x.at.Compare(y.at) })
	return rows
}

func writeHistoryTable(w io.Writer, a historyview.HistoryView, rows []historyRow) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "No compliance history of %s %s/%s since %s.\n", a.Kind, a.Namespace, a.Name, a.Since.UTC().Format(time.RFC3339))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tHUB\tCLUSTER\tPOLICY\tTEMPLATE\tSTATE\tMESSAGE")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.at.UTC().Format(time.RFC3339), r.hub, r.cluster, r.policy, r.template, r.state, oneLine(r.msg))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.Truncated {
		_, err := fmt.Fprintln(w, "(only the newest transitions are shown: narrow --since or --cluster)")
		return err
	}
	return nil
}

func writeHistoryCSV(w io.Writer, rows []historyRow) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"time", "hub", "cluster", "policy", "template", "state", "message"})
	for _, r := range rows {
		_ = cw.Write([]string{r.at.UTC().Format(time.RFC3339), r.hub, r.cluster, r.policy, r.template, r.state, r.msg})
	}
	cw.Flush()
	return cw.Error()
}

// oneLine keeps a message on its table row, cut to 120 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 120 {
		return string(r[:117]) + "..."
	}
	return s
}
