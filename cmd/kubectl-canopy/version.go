package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at link time by make plugin-dist
// (-ldflags "-X main.version=... -X main.commit=..."); empty, they come
// from the build information Go records (the module version of
// `go install ...@v0.1.0`, the VCS revision of a build in a git tree).
var (
	version string
	commit  string
)

// newVersionCommand prints the plugin's version and commit.
func newVersionCommand(opts *globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			info, _ := debug.ReadBuildInfo()
			v, c := versionOf(version, commit, info)
			_, err := fmt.Fprintf(opts.out, "kubectl-canopy %s (commit %s)\n", v, c)
			return err
		},
	}
}

// versionOf is the version and commit to print: the link-time values, else
// what info records, else "(devel)" and "unknown"; a commit built with
// uncommitted changes ends in "-dirty".
func versionOf(linkedVersion, linkedCommit string, info *debug.BuildInfo) (string, string) {
	v, c := linkedVersion, linkedCommit
	if info != nil {
		if v == "" && info.Main.Version != "" {
			v = info.Main.Version
		}
		settings := map[string]string{}
		for _, s := range info.Settings {
			settings[s.Key] = s.Value
		}
		if c == "" && settings["vcs.revision"] != "" {
			c = settings["vcs.revision"]
			if settings["vcs.modified"] == "true" {
				c += "-dirty"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if c == "" {
		c = "unknown"
	}
	return v, c
}
