package crossbuild

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// TestResolve checks that Resolve fails for a platform on which a package
// imports what does not exist, or has no Go files, and passes elsewhere.
func TestResolve(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":             "module example.com/m\n\ngo 1.26\n",
		"main.go":            "package main\n\nfunc main() {}\n",
		"missing_darwin.go":  "package main\n\nimport _ \"example.com/m/nothere\"\n",
		"only/only_linux.go": "package only\n",
		"user/user.go":       "package user\n\nimport _ \"example.com/m/only\"\n",
	}
	for name, text := range files {
		path := filepath.Join(dir, name)
		g.Expect(os.MkdirAll(filepath.Dir(path), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(path, []byte(text), 0o644)).To(Succeed())
	}
	linux, darwin := Platform{"linux", "amd64"}, Platform{"darwin", "arm64"}
	g.Expect(Resolve(t.Context(), dir, linux, ".", "./user")).To(Succeed())
	g.Expect(Resolve(t.Context(), dir, darwin, ".")).To(MatchError(ContainSubstring("nothere")))
	g.Expect(Resolve(t.Context(), dir, darwin, "./user")).To(MatchError(ContainSubstring("build constraints exclude all Go files")))
}

// TestToBuild checks that tests build this machine's platform unless
// every platform is asked for.
func TestToBuild(t *testing.T) {
	g := NewWithT(t)
	all := []Platform{{"plan9", "386"}, Host()}
	t.Setenv(AllPlatformsEnv, "")
	g.Expect(ToBuild(all)).To(Equal([]Platform{Host()}))
	_, err := ToBuild(all[:1])
	g.Expect(err).To(MatchError(ContainSubstring("is not a release platform")))
	t.Setenv(AllPlatformsEnv, "1")
	g.Expect(ToBuild(all)).To(Equal(all))
}
