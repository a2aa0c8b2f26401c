package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/canopy-policy/canopy/internal/test/controlplane"
	"github.com/canopy-policy/canopy/internal/test/ocmagents"
	"github.com/canopy-policy/canopy/internal/test/testenv"
	"github.com/canopy-policy/canopy/test/conformance"
	"github.com/canopy-policy/canopy/test/inproc"
)

// clusterName is the managed cluster and cluster namespace upstream's suite
// expects.
const clusterName = "managed"

// suiteTimeout bounds the whole upstream run: a hung spec, not a slow one.
const suiteTimeout = 40 * time.Minute

func TestUpstreamConfigurationPolicySuite(t *testing.T) {
	assets := suiteAssets(t)
	excluded := readExclusions(t)
	env := testenv.ForTest(t, testenv.Options{ManagedClusters: []string{clusterName}, Unregistered: true})
	managed := env.Cluster(clusterName)
	ctx := t.Context()
	if err := ocmagents.StartClusterControllers(ctx, env, clusterName); err != nil {
		t.Fatal(err)
	}
	installUpstreamCRDs(t, managed.Client, filepath.Join(assets, "src", "test", "crds"))
	// The cluster namespace exists before the suite starts, as on upstream's
	// cluster: its parallel processes each create it when it is missing,
	// and all but one would fail.
	if err := managed.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterName}}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	work := workTree(t, assets, managed.KubeconfigPath)
	inproc.StartEvaluators(t, managed.Config, clusterName, controllerLog(t, work))

	report := runSuite(t, assets, work, excluded)
	checkReport(t, report)
	checkExclusionsUsed(t, report, excluded)
}

// suiteAssets returns the directory hack/install-conformance-suite.sh
// built upstream's suite into.
func suiteAssets(t *testing.T) string {
	return assetDir(t, "conformance/"+conformance.SuiteVersion, "e2e.test", "conformance-assets")
}

// assetDir returns bin/<dir> of the checkout, which must hold file, built
// by make target.
func assetDir(t *testing.T, dir, file, target string) string {
	t.Helper()
	root, err := controlplane.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "bin", dir)
	if _, err := os.Stat(filepath.Join(path, file)); err != nil {
		t.Fatalf("%s is not built (make %s builds it): %v", file, target, err)
	}
	return path
}

// exclusion is an entry of exclusions.yaml: a file or a spec, and why.
type exclusion struct {
	File   string `json:"file,omitempty"`
	Spec   string `json:"spec,omitempty"`
	Reason string `json:"reason"`
}

// exclusions are exclusions.yaml's entries.
type exclusions []exclusion

func readExclusions(t *testing.T) exclusions {
	t.Helper()
	data, err := os.ReadFile("exclusions.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var list exclusions
	if err := yaml.UnmarshalStrict(data, &list); err != nil {
		t.Fatalf("exclusions.yaml: %v", err)
	}
	for i, e := range list {
		if (e.File == "") == (e.Spec == "") || strings.TrimSpace(e.Reason) == "" {
			t.Fatalf("exclusions.yaml entry %d: give a file or a spec, and a reason", i+1)
		}
	}
	return list
}

// ginkgoArgs are the ginkgo flags that skip the excluded files and specs.
func (l exclusions) ginkgoArgs() []string {
	var args, specs []string
	for _, e := range l {
		if e.File != "" {
			args = append(args, "--skip-file="+regexp.QuoteMeta(e.File))
		} else {
			// Note: ginkgo matches the suite's description, a space and
			// the spec's full text.
			specs = append(specs, " "+regexp.QuoteMeta(e.Spec)+"$")
		}
	}
	if len(specs) > 0 {
		args = append(args, "--skip="+strings.Join(specs, "|"))
	}
	return args
}

// installUpstreamCRDs creates the CRDs upstream's suite brings (OpenShift's
// APIs it reads, a fake API) that the managed cluster does not have yet;
// Canopy's own CRDs, installed with the control plane, stay as they are.
func installUpstreamCRDs(t *testing.T, c client.Client, dir string) {
	t.Helper()
	objs, err := controlplane.ReadObjects(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		err := c.Create(t.Context(), obj)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	for _, obj := range objs {
		waitEstablished(t, c, obj)
	}
}

func waitEstablished(t *testing.T, c client.Client, obj *unstructured.Unstructured) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), &crd); err == nil {
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return
				}
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("CRD %s not established: %v", obj.GetName(), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// workTree copies upstream's test tree into a directory of the test's,
// with the managed cluster's kubeconfig where the suite reads it
// (../../kubeconfig_managed_e2e from test/e2e), and returns it.
func workTree(t *testing.T, assets, kubeconfig string) string {
	t.Helper()
	work := t.TempDir()
	if err := os.CopyFS(work, os.DirFS(filepath.Join(assets, "src"))); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "kubeconfig_managed_e2e"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	return work
}

// controllerLog creates the log file upstream's suite reads its
// controller's log from (build/_output/controller.log of the work tree),
// where the agent's evaluators log; it is closed when the test ends.
func controllerLog(t *testing.T, work string) *os.File {
	t.Helper()
	path := filepath.Join(work, "build", "_output", "controller.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// runSuite runs upstream's compiled suite with ginkgo, as upstream's
// Makefile does, in work (the suite reads ../resources from test/e2e), and
// returns ginkgo's JSON report.
func runSuite(t *testing.T, assets, work string, excluded exclusions) *suiteReport {
	t.Helper()
	e2eDir := filepath.Join(work, "test", "e2e")
	binary := filepath.Join(e2eDir, "e2e.test")
	if err := os.Symlink(filepath.Join(assets, "e2e.test"), binary); err != nil {
		t.Fatal(err)
	}
	reportPath := filepath.Join(work, "report.json")
	args := []string{
		"--procs=" + strconv.Itoa(procs()), "--no-color", "--succinct",
		"--timeout=" + suiteTimeout.String(), "--json-report=" + reportPath,
	}
	args = append(args, excluded.ginkgoArgs()...)
	if focus := os.Getenv("CONFORMANCE_FOCUS"); focus != "" { // to run some specs while working on them
		args = append(args, "--focus="+focus)
	}
	args = append(args, binary)
	ctx, cancel := context.WithTimeout(t.Context(), suiteTimeout+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(assets, "ginkgo"), args...) //nolint:gosec // the suite's own binaries
	cmd.Dir = e2eDir
	// Note: some specs run kubectl without --kubeconfig, as on upstream's
	// kind cluster, where KUBECONFIG names it.
	cmd.Env = append(os.Environ(), "PATH="+kubectlDir(t)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+filepath.Join(work, "kubeconfig_managed_e2e"))
	ownGroup(cmd)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	logPath := filepath.Join(os.TempDir(), "canopy-conformance.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	t.Logf("running upstream's suite with %d ginkgo processes; its output goes to %s", procs(), logPath)
	runErr := cmd.Run()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever ginkgo left behind
	report, err := readReport(reportPath)
	if err != nil {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("ginkgo ended (%v) with no report: %v; the end of its output (all in %s):\n%s", runErr, err, logPath, tail(out, 200))
	}
	t.Logf("ginkgo ended (%v); its output is in %s", runErr, logPath)
	return report
}

// procs is how many ginkgo processes run specs at once
// (CONFORMANCE_PROCS, else 8): upstream runs 20 against one cluster. The
// specs mostly wait for the controller, so even 2 cores run 8 at once; with
// 4 the suite took twice as long.
func procs() int {
	if s := os.Getenv("CONFORMANCE_PROCS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return 8
}

func kubectlDir(t *testing.T) string {
	return assetDir(t, "kubectl/"+controlplane.KubernetesVersion, "kubectl", "kubectl-assets")
}

func tail(out []byte, lines int) string {
	all := strings.Split(string(out), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// suiteReport is the part of ginkgo's JSON report the test reads.
type suiteReport struct {
	SpecReports []specReport
}

type specReport struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	LeafNodeLocation        struct {
		FileName   string
		LineNumber int
	}
	ContainerHierarchyLocations []struct{ FileName string }
	State                       string
	Failure                     *struct {
		Message  string
		Location struct {
			FileName   string
			LineNumber int
		}
	}
	RunTime time.Duration
}

func (s specReport) fullText() string {
	return strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " ")
}

func (s specReport) where() string {
	return fmt.Sprintf("%s:%d", filepath.Base(s.LeafNodeLocation.FileName), s.LeafNodeLocation.LineNumber)
}

func readReport(path string) (*suiteReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []suiteReport
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, err
	}
	if len(reports) != 1 {
		return nil, fmt.Errorf("%d suites in the report, want 1", len(reports))
	}
	return &reports[0], nil
}

// reportMarker makes hack/testrun (make test) show the line although the
// package passes (its reportMarker).
const reportMarker = "make-test-report: "

// checkReport fails t for every spec that was not excluded and did not
// pass (a spec that did not run, stopped by a failure before it in an
// ordered container, counts as failed), and logs the counts for make test
// to show.
func checkReport(t *testing.T, r *suiteReport) {
	t.Helper()
	var passed, excluded, specs int
	var bad []string
	for _, s := range r.SpecReports {
		if s.LeafNodeType != "It" {
			if s.State != "passed" && s.State != "skipped" {
				bad = append(bad, fmt.Sprintf("[%s] %s %s (%s)", s.LeafNodeType, s.State, s.where(), failure(s)))
			}
			continue
		}
		specs++
		switch {
		case s.State == "passed":
			passed++
		case s.State == "skipped" && s.Failure == nil:
			excluded++
		default:
			bad = append(bad, fmt.Sprintf("%s %s: %s\n    %s", s.State, s.where(), s.fullText(), failure(s)))
		}
	}
	t.Logf("%sOCM config-policy-controller v%s's e2e suite against the agent: %d of %d specs in scope passed (%d of %d excluded: test/conformance/exclusions.yaml)",
		reportMarker, conformance.SuiteVersion, passed, specs-excluded, excluded, specs)
	for _, b := range bad {
		t.Error(b)
	}
}

// checkExclusionsUsed fails t for an exclusion that names no spec of the
// suite: a spec renamed or removed upstream leaves a stale entry.
func checkExclusionsUsed(t *testing.T, r *suiteReport, excluded exclusions) {
	t.Helper()
	for _, e := range excluded {
		used := slices.ContainsFunc(r.SpecReports, func(s specReport) bool {
			if e.File != "" {
				return filepath.Base(s.LeafNodeLocation.FileName) == e.File ||
					slices.ContainsFunc(s.ContainerHierarchyLocations, func(l struct{ FileName string }) bool {
						return filepath.Base(l.FileName) == e.File
					})
			}
			return s.LeafNodeType == "It" && s.fullText() == e.Spec
		})
		if !used {
			t.Errorf("exclusions.yaml: %q names no spec of the suite", e.File+e.Spec)
		}
	}
}

func failure(s specReport) string {
	if s.Failure == nil {
		return "no failure recorded"
	}
	msg := s.Failure.Message
	if len(msg) > 600 {
		msg = msg[:600] + "..."
	}
	return fmt.Sprintf("%s:%d: %s", filepath.Base(s.Failure.Location.FileName), s.Failure.Location.LineNumber, msg)
}
