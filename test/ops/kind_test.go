package ops_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	yaml "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kind/pkg/apis/config/defaults"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
)

const (
	// kindScript creates the e2e suite's kind clusters and runs the suite.
	kindScript = "../../test/e2e/kind.sh"
	// kindConfig is the cluster configuration kind.sh passes to kind.
	kindConfig = "../../test/e2e/kind-cluster.yaml"
)

// fakeDocker stands in for the docker CLI kind drives: it logs each call
// to $FAKE_DOCKER_LOG and answers what kind asks before it provisions a
// cluster (the engine's info, no existing kind containers, the node image
// present), and fails every other call, the first of which is where a real
// Docker would start creating the cluster.
const fakeDocker = `#!/bin/sh
echo "$*" >>"$FAKE_DOCKER_LOG"
case "$1" in
info) echo '{"CgroupVersion":"2","CgroupDriver":"systemd","MemoryLimit":true,"PidsLimit":true,"CPUShares":true}' ;;
ps) ;;
inspect) [ "$2" = "--type=image" ] || { echo "fake docker: no $1 $2" >&2; exit 1; } ;;
*) echo "fake docker: no $1" >&2; exit 1 ;;
esac
`

// TestKindConfigIsAKindCluster decodes test/e2e/kind-cluster.yaml strictly
// into kind's v1alpha4 Cluster, as kind's loader does, and checks what the
// e2e suite needs of it after kind's defaulting: one control-plane node of
// the default image of the kind version go.mod pins, its API server on the
// loopback address.
func TestKindConfigIsAKindCluster(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(kindConfig)
	g.Expect(err).NotTo(HaveOccurred())
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	cluster := &kindv1alpha4.Cluster{}
	g.Expect(dec.Decode(cluster)).To(Succeed())
	g.Expect(cluster.APIVersion).To(Equal("kind.x-k8s.io/v1alpha4"))
	g.Expect(cluster.Kind).To(Equal("Cluster"))
	kindv1alpha4.SetDefaultsCluster(cluster)
	g.Expect(cluster.Nodes).To(HaveLen(1))
	g.Expect(cluster.Nodes[0].Role).To(Equal(kindv1alpha4.ControlPlaneRole))
	g.Expect(cluster.Nodes[0].Image).To(Equal(defaults.Image))
	g.Expect(cluster.Networking.APIServerAddress).To(Equal("127.0.0.1"))
}

// TestKindScriptCreatesClustersFromItsConfig runs test/e2e/kind.sh as a
// user with Docker would, with a fake docker CLI in front: the script
// builds the kind version go.mod pins (once, into bin/kind/<version>/),
// and kind loads and validates the script's cluster configuration with its
// own loader and validation and goes on to provision the first cluster,
// canopy-hub, from the default node image, which is where the fake Docker
// stops it. A configuration kind's validation refuses, or with a field
// kind does not know, stops the script before provisioning.
func TestKindScriptCreatesClustersFromItsConfig(t *testing.T) {
	g := NewWithT(t)
	version, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/kind").Output()
	g.Expect(err).NotTo(HaveOccurred(), "go.mod pins sigs.k8s.io/kind")

	out, calls := runKindScript(t, "")
	g.Expect(out).To(ContainSubstring(`Creating cluster "canopy-hub"`))
	g.Expect(calls).To(ContainElement("inspect --type=image "+defaults.Image), "kind checks the node image of its version")
	g.Expect(calls).To(ContainElement(HavePrefix("network ")), "kind provisions after validating (its docker network first):\n%s", out)

	kind := filepath.Join("../../bin/kind", strings.TrimSpace(string(version)), "kind")
	printed, err := exec.Command(kind, "version").Output()
	g.Expect(err).NotTo(HaveOccurred(), "kind.sh keeps its build in %s", kind)
	g.Expect(string(printed)).To(HavePrefix("kind " + strings.TrimSpace(string(version)) + " "))

	invalid := map[string]string{
		"invalid ipFamily: ipv5": "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnetworking: {ipFamily: ipv5}\n",
		"field imag not found":   "kind: Cluster\napiVersion: kind.x-k8s.io/v1alpha4\nnodes:\n- {role: control-plane, imag: x}\n",
	}
	for want, config := range invalid {
		path := filepath.Join(t.TempDir(), "kind-cluster.yaml")
		g.Expect(os.WriteFile(path, []byte(config), 0o600)).To(Succeed())
		out, calls := runKindScript(t, path)
		g.Expect(out).To(ContainSubstring(want))
		g.Expect(calls).NotTo(ContainElement(HavePrefix("network ")), "kind stops before provisioning:\n%s", out)
	}
}

// runKindScript runs kind.sh, with config as E2E_KIND_CONFIG unless empty,
// against the fake docker, and returns its output and the docker calls.
// The script must fail: the fake Docker creates no cluster.
func runKindScript(t *testing.T, config string) (string, []string) {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "docker"), []byte(fakeDocker), 0o755)).To(Succeed())
	log := filepath.Join(dir, "docker.log")
	cmd := exec.CommandContext(t.Context(), "bash", kindScript)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "FAKE_DOCKER_LOG="+log,
		"KIND_EXPERIMENTAL_PROVIDER=docker", "E2E_KIND_DIR="+filepath.Join(dir, "e2e-kind"), "E2E_KIND_CONFIG="+config)
	if config == "" {
		cmd.Env = cmd.Env[:len(cmd.Env)-1]
	}
	out, err := cmd.CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "kind.sh cannot succeed without Docker:\n%s", out)
	logged, err := os.ReadFile(log)
	g.Expect(err).NotTo(HaveOccurred(), "kind called docker:\n%s", out)
	return string(out), strings.Split(strings.TrimSpace(string(logged)), "\n")
}
