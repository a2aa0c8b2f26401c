package main

import (
	"bytes"
	"runtime/debug"
	"testing"

	. "github.com/onsi/gomega"
)

func TestVersionOf(t *testing.T) {
	vcs := func(revision, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: revision}, {Key: "vcs.modified", Value: modified}}
	}
	for _, tt := range []struct {
		name                    string
		linkedVersion, linked   string
		info                    *debug.BuildInfo
		wantVersion, wantCommit string
	}{
		{name: "linked", linkedVersion: "v0.2.0", linked: "abc", info: &debug.BuildInfo{Main: debug.Module{Version: "v9"}, Settings: vcs("def", "false")},
			wantVersion: "v0.2.0", wantCommit: "abc"},
		{name: "go install", info: &debug.BuildInfo{Main: debug.Module{Version: "v0.1.0"}}, wantVersion: "v0.1.0", wantCommit: "unknown"},
		{name: "git tree", info: &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs("def", "false")}, wantVersion: "(devel)", wantCommit: "def"},
		{name: "dirty git tree", info: &debug.BuildInfo{Settings: vcs("def", "true")}, wantVersion: "(devel)", wantCommit: "def-dirty"},
		{name: "nothing", wantVersion: "(devel)", wantCommit: "unknown"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v, c := versionOf(tt.linkedVersion, tt.linked, tt.info)
			g.Expect([]string{v, c}).To(Equal([]string{tt.wantVersion, tt.wantCommit}))
		})
	}
}

// TestVersionCommand runs `kubectl canopy version` with link-time values.
func TestVersionCommand(t *testing.T) {
	g := NewWithT(t)
	defer func(v, c string) { version, commit = v, c }(version, commit)
	version, commit = "v0.3.0", "0123abcd"
	var out, errOut bytes.Buffer
	cmd := newRootCommand(&out, &errOut)
	cmd.SetArgs([]string{"version"})
	g.Expect(cmd.Execute()).To(Succeed())
	g.Expect(out.String()).To(Equal("kubectl-canopy v0.3.0 (commit 0123abcd)\n"))
}
