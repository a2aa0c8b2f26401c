package controlplane

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

const pdeathsigSupported = true

// init is the "go" reaper: the wrapper script re-executes the test binary
// with envExec naming the real control-plane binary. Before anything else
// runs, the process asks the kernel to SIGKILL it when its parent dies, then
// becomes the real binary (the setting survives exec).
func init() {
	bin := os.Getenv(envExec)
	if bin == "" {
		return
	}
	runtime.LockOSThread() // prctl and exec must happen on the same thread
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: setting the parent-death signal: %v\n", err)
		os.Exit(126)
	}
	if strconv.Itoa(os.Getppid()) != os.Getenv(envParent) {
		os.Exit(1) // the owner died before prctl: nobody will stop us
	}
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envExec+"=") && !strings.HasPrefix(kv, envParent+"=") {
			env = append(env, kv)
		}
	}
	err := syscall.Exec(bin, append([]string{bin}, os.Args[1:]...), env)
	fmt.Fprintf(os.Stderr, "controlplane: exec %s: %v\n", bin, err)
	os.Exit(127)
}

// ownerID identifies this process across pid reuse: its pid and start time.
func ownerID() (string, error) {
	start, err := startTime(os.Getpid())
	if err != nil {
		return "", fmt.Errorf("reading this process's start time: %w", err)
	}
	return fmt.Sprintf("%d:%s", os.Getpid(), start), nil
}

// processAlive reports whether the process named by an ownerID still runs.
func processAlive(owner string) bool {
	pid, start, ok := strings.Cut(strings.TrimSpace(owner), ":")
	if !ok {
		return false
	}
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	got, err := startTime(n)
	return err == nil && got == start
}

// startTime returns field 22 of /proc/<pid>/stat (start time in clock ticks
// since boot); a zombie counts as gone.
func startTime(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) may contain spaces; fields after it don't.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(stat[i+1:]))
	if len(fields) < 20 {
		return "", fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return "", fmt.Errorf("process %d has exited", pid)
	}
	return fields[19], nil
}

// ownedProcesses returns the pids of live processes started by this package
// whose owner satisfies match.
func ownedProcesses(match func(owner string) bool) []int {
	prefix := []byte(envOwner + "=")
	return withEnv(func(kv []byte) bool {
		owner, ok := bytes.CutPrefix(kv, prefix)
		return ok && match(string(owner))
	})
}

// ProcessesWithEnv returns the pids of live processes of this user whose
// environment holds the entry kv (NAME=value): test-only packages mark the
// processes they start so, and find them again to prove none is left.
func ProcessesWithEnv(kv string) []int {
	want := []byte(kv)
	return withEnv(func(entry []byte) bool { return bytes.Equal(entry, want) })
}

// withEnv returns the pids of live processes, this one aside, with an
// environment entry that satisfies match.
func withEnv(match func(kv []byte) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid)) // only our own uid's are readable; empty for a zombie
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(environ, []byte{0}) {
			if match(kv) {
				if _, err := startTime(pid); err == nil {
					pids = append(pids, pid)
				}
				break
			}
		}
	}
	return pids
}

// sweepOrphans kills control-plane processes whose owner died without
// stopping them: the fallback for when the parent-death signal could not be
// set (reaper "none", or an owner killed between fork and prctl).
func sweepOrphans() {
	for _, pid := range ownedProcesses(func(owner string) bool { return !processAlive(owner) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
