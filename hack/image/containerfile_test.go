package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	. "github.com/onsi/gomega"
)

// instruction is one instruction of a Containerfile, continuation lines
// joined.
type instruction struct {
	// command is the instruction's keyword, upper case.
	command string
	// args is the rest of the line.
	args string
}

// stage is one FROM and the instructions after it.
type stage struct {
	from         string
	instructions []instruction
}

// parseContainerfile splits a Containerfile into its stages.
func parseContainerfile(text string) []stage {
	var stages []stage
	var line string
	for raw := range strings.Lines(text) {
		trimmed := strings.TrimSpace(raw)
		if line == "" && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cont, ok := strings.CutSuffix(trimmed, `\`); ok {
			line += cont + " "
			continue
		}
		line += trimmed
		command, args, _ := strings.Cut(line, " ")
		line = ""
		command, args = strings.ToUpper(command), strings.TrimSpace(args)
		if command == "FROM" {
			stages = append(stages, stage{from: args})
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, instruction{command, args})
		}
	}
	return stages
}

// TestParseContainerfile checks the parser on continuation lines, comments
// and stages.
func TestParseContainerfile(t *testing.T) {
	g := NewWithT(t)
	got := parseContainerfile("# comment\nFROM golang AS builder\nRUN a \\\n\tb\n\nfrom scratch\ncopy --from=builder /x/ /\n")
	g.Expect(got).To(Equal([]stage{
		{from: "golang AS builder", instructions: []instruction{{"RUN", "a  b"}}},
		{from: "scratch", instructions: []instruction{{"COPY", "--from=builder /x/ /"}}},
	}))
}

// TestContainerfileMakesTheSameTree checks that the Containerfile builds
// the image make image builds: its last stage copies, onto scratch and
// owned by root, the directory its builder stage fills with hack/image
// rootfs, which this test runs as the Containerfile does and compares
// with the image's tree for this machine's architecture, file by file and
// byte by byte; and it sets the same user, entrypoint, environment and
// labels.
func TestContainerfileMakesTheSameTree(t *testing.T) {
	g := NewWithT(t)
	text, err := os.ReadFile(filepath.Join(moduleRoot, "Containerfile"))
	g.Expect(err).NotTo(HaveOccurred())
	stages := parseContainerfile(string(text))
	g.Expect(len(stages)).To(BeNumerically(">=", 2))
	final := stages[len(stages)-1]
	g.Expect(final.from).To(Equal("scratch"))

	dir, meta := builtLayout(t)
	idx, err := layout.ImageIndexFromPath(dir)
	g.Expect(err).NotTo(HaveOccurred())
	manifest, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	var want map[string]entry
	for _, desc := range manifest.Manifests {
		if desc.Platform.Architecture != runtime.GOARCH {
			continue
		}
		img, err := idx.Image(desc.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		want, _ = imageTree(t, img)
		cfg, err := img.ConfigFile()
		g.Expect(err).NotTo(HaveOccurred())
		checkFinalStage(t, final, cfg.Config.User, cfg.Config.Entrypoint, cfg.Config.Env, labels(meta))
	}
	g.Expect(want).NotTo(BeEmpty(), "the image has no linux/%s", runtime.GOARCH)

	copied := copiedDir(t, final)
	out := filepath.Join(t.TempDir(), "rootfs")
	args := rootfsCommand(t, stages[0], copied)
	args = append(args, "-out", out, "-module", moduleRoot)
	g.Expect(run(t.Context(), args, os.Stdout)).To(Succeed())
	got := dirTree(t, out)
	for name, e := range want {
		g.Expect([]int{e.uid, e.gid}).To(Equal([]int{0, 0}))
		want[name] = entry{mode: e.mode, sha256: e.sha256}
	}
	g.Expect(got).To(Equal(want))
}

// checkFinalStage checks USER, ENTRYPOINT, ENV and LABEL of the final
// stage against the image's; labels that name a build (commit, version,
// time) only the image has.
func checkFinalStage(t *testing.T, final stage, user string, entrypoint, env []string, imageLabels map[string]string) {
	t.Helper()
	g := NewWithT(t)
	var gotEnv []string
	gotLabels := map[string]string{}
	for _, in := range final.instructions {
		switch in.command {
		case "USER":
			g.Expect(in.args).To(Equal(user))
		case "ENTRYPOINT":
			var got []string
			g.Expect(json.Unmarshal([]byte(in.args), &got)).To(Succeed(), "ENTRYPOINT in exec form")
			g.Expect(got).To(Equal(entrypoint))
		case "ENV":
			gotEnv = append(gotEnv, in.args)
		case "LABEL":
			for _, kv := range splitLabels(t, in.args) {
				k, v, _ := strings.Cut(kv, "=")
				gotLabels[k] = v
			}
		}
	}
	g.Expect(gotEnv).To(Equal(env))
	for _, k := range []string{"org.opencontainers.image.revision", "org.opencontainers.image.version", "org.opencontainers.image.created"} {
		delete(imageLabels, k)
	}
	g.Expect(gotLabels).To(Equal(imageLabels), "LABEL keys %v", slices.Sorted(maps.Keys(gotLabels)))
}

// splitLabels splits LABEL's key="value" pairs, values quoted.
func splitLabels(t *testing.T, args string) []string {
	t.Helper()
	var out []string
	for rest := strings.TrimSpace(args); rest != ""; rest = strings.TrimSpace(rest) {
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			t.Fatalf("LABEL %q: want key=\"value\"", rest)
		}
		value, err := strconv.QuotedPrefix(after)
		if err != nil {
			t.Fatalf("LABEL %q: want a quoted value: %v", after, err)
		}
		unquoted, _ := strconv.Unquote(value)
		out = append(out, key+"="+unquoted)
		rest = after[len(value):]
	}
	return out
}

// copiedDir is the builder's directory the final stage copies to its root,
// as root's (no --chown or --chmod): the stage's only COPY.
func copiedDir(t *testing.T, final stage) string {
	t.Helper()
	var copies []string
	for _, in := range final.instructions {
		if in.command == "COPY" || in.command == "ADD" {
			copies = append(copies, in.args)
		}
	}
	if len(copies) != 1 {
		t.Fatalf("the final stage copies %q: want one COPY of the builder's tree", copies)
	}
	fields := strings.Fields(copies[0])
	if len(fields) != 3 || !strings.HasPrefix(fields[0], "--from=") || fields[2] != "/" {
		t.Fatalf("COPY %s: want COPY --from=<builder> <dir>/ /", copies[0])
	}
	return strings.TrimSuffix(fields[1], "/")
}

// rootfsCommand finds the builder's `go run ./hack/image rootfs` that
// writes dir, and returns its arguments for run with this machine's
// architecture as TARGETARCH and without -out.
func rootfsCommand(t *testing.T, builder stage, dir string) []string {
	t.Helper()
	const prefix = "go run ./hack/image "
	for _, in := range builder.instructions {
		_, cmd, ok := strings.Cut(in.args, prefix)
		if in.command != "RUN" || !ok {
			continue
		}
		cmd, _, _ = strings.Cut(cmd, "&&")
		fields := strings.Fields(strings.ReplaceAll(cmd, "$TARGETARCH", runtime.GOARCH))
		var args []string
		var out string
		for i := 0; i < len(fields); i++ {
			if fields[i] == "-out" && i+1 < len(fields) {
				out = fields[i+1]
				i++
				continue
			}
			args = append(args, fields[i])
		}
		if out != dir {
			t.Fatalf("hack/image rootfs writes %q, the final stage copies %q", out, dir)
		}
		if len(args) == 0 || args[0] != "rootfs" {
			t.Fatalf("RUN %s: want hack/image rootfs", in.args)
		}
		return args
	}
	t.Fatalf("the builder stage runs no %q", prefix+"rootfs")
	return nil
}
