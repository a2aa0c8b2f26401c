package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ReaperEnv is the environment variable that chooses how the life of the
// control-plane processes is tied to their owner: "setpriv" (default when
// util-linux's setpriv is on PATH), "go" (re-exec through this package's
// init, the default otherwise) or "none" (tests of the sweep only).
//
// Note: the variables keep the CANOPY_TESTENV_ prefix of the package they
// came from, so that a sweep also finds processes left by older checkouts.
const ReaperEnv = "CANOPY_TESTENV_REAPER"

// Environment variables of the leak guard. envOwner is set on every
// control-plane process this package starts, naming the process that owns
// it; envExec and envParent pass the real binary and the owner's pid to the
// "go" reaper.
const (
	envOwner  = "CANOPY_TESTENV_OWNER"
	envExec   = "CANOPY_TESTENV_EXEC"
	envParent = "CANOPY_TESTENV_PARENT"
)

// Processes returns the pids of the live etcd and kube-apiserver processes
// that process pid started through this package, and of those it marked
// with OwnerEnv, so that a test can check that none outlives its owner.
func Processes(pid int) []int {
	prefix := strconv.Itoa(pid) + ":"
	return ownedProcesses(func(owner string) bool { return strings.HasPrefix(owner, prefix) })
}

// OwnerEnv returns the environment entry (NAME=value) that marks a process
// as started by this process, as this package marks etcd and
// kube-apiserver: Processes lists it, and Sweep kills it once this process
// is gone. Test-only packages that start processes of their own
// (internal/test/ocmagents) set it on them.
func OwnerEnv() (string, error) {
	owner, err := ownerID()
	if err != nil {
		return "", err
	}
	return envOwner + "=" + owner, nil
}

// wrapBinary writes an executable script at dir/name that runs bin so that it
// dies with this process, and returns the script's path. envtest launches the
// script in place of bin; both exec, so the control-plane process keeps the
// script's pid and is this process's direct child.
//
// Note: the parent-death signal fires when the OS thread that forked the
// child exits, not only the process. The Go runtime ends threads only when a
// goroutine exits while locked to its thread (runtime.LockOSThread), which
// envtest and client-go never do.
func wrapBinary(dir, name, bin string) (string, error) {
	owner, err := ownerID()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Written by internal/test/controlplane: ties this control-plane process to its owner.\n")
	fmt.Fprintf(&b, "%s=%s; export %s\n", envOwner, shellQuote(owner), envOwner)
	switch mode := reaperMode(); mode {
	case "setpriv":
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			return "", fmt.Errorf("finding setpriv: %w", err)
		}
		fmt.Fprintf(&b, "exec %s --pdeathsig KILL -- %s \"$@\"\n", shellQuote(setpriv), shellQuote(bin))
	case "go":
		self, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("finding the test executable: %w", err)
		}
		fmt.Fprintf(&b, "%s=%s; %s=$PPID; export %s %s\n", envExec, shellQuote(bin), envParent, envExec, envParent)
		fmt.Fprintf(&b, "exec %s \"$@\"\n", shellQuote(self))
	case "none":
		fmt.Fprintf(&b, "exec %s \"$@\"\n", shellQuote(bin))
	default:
		return "", fmt.Errorf("%s=%q: want setpriv, go or none", ReaperEnv, mode)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(b.String()), 0o755); err != nil { //nolint:gosec // an executable script
		return "", err
	}
	return path, nil
}

func reaperMode() string {
	if m := os.Getenv(ReaperEnv); m != "" {
		return m
	}
	if !pdeathsigSupported {
		return "none"
	}
	if _, err := exec.LookPath("setpriv"); err == nil {
		return "setpriv"
	}
	return "go"
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ownerFile marks a state directory with the identity of the process using
// it, so that a later run can tell a live directory from a leftover.
const ownerFile = "owner"

// ClaimStateDir creates dir and records this process as its owner, so that
// Sweep removes it once this process is gone. A dir left by a dead owner is
// removed first; one whose owner lives is refused.
func ClaimStateDir(dir string) error {
	if owner, err := os.ReadFile(filepath.Join(dir, ownerFile)); err == nil {
		if processAlive(string(owner)) {
			return fmt.Errorf("%s is in use by process %s", dir, owner)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	owner, err := ownerID()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(owner), 0o600)
}

// tempDirPattern names the directories TempDir creates; sweepTempDirs
// removes those whose StateDirName's owner died.
const tempDirPattern = "canopy-testenv-*"

// TempDir creates a new temporary directory for control planes: Sweep
// removes it once the owner of its StateDirName (see ClaimStateDir) is gone.
func TempDir() (string, error) {
	return os.MkdirTemp("", tempDirPattern)
}

func sweepTempDirs() {
	owners, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPattern, StateDirName, ownerFile))
	for _, f := range owners {
		owner, err := os.ReadFile(f)
		if err != nil || processAlive(string(owner)) {
			continue
		}
		_ = os.RemoveAll(filepath.Dir(filepath.Dir(f)))
	}
}
