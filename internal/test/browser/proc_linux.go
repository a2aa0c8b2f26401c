package browser

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// tieToTest runs Chromium in a process group of its own, killed as a whole
// when chromedp ends the browser, and asks the kernel to kill Chromium when
// the test binary dies (its helper processes exit when it does). It replaces
// chromedp's own setting, which sets only the parent-death signal.
//
// Note: the parent-death signal fires when the OS thread that started the
// child exits, not only the process. The Go runtime ends a thread only when a
// goroutine exits while locked to it (runtime.LockOSThread), which neither
// chromedp nor the testing package does.
func tieToTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Chromium is unreaped until Wait returns, so its pid, and the group's
	// id, cannot name another process here.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// processes returns the pids of live processes of the browser with
// profileDir: those whose command line holds --user-data-dir=profileDir, and
// those whose environment holds envProfile=profileDir (Chromium's crash
// handlers run outside its process group and without the flag). Chromium
// rewrites its command line, over its environment, into one
// space-separated string, so the flag is matched as a word, not an argument.
func processes(profileDir string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	flag := []byte("--user-data-dir=" + profileDir)
	env := []byte(envProfile + "=" + profileDir)
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline") // empty for a zombie
		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		if hasWord(cmdline, flag) || hasEntry(environ, env) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hasWord reports whether word occurs in s followed by its end, a NUL or a
// space (so /tmp/x/001 does not match /tmp/x/0010).
func hasWord(s, word []byte) bool {
	for {
		i := bytes.Index(s, word)
		if i < 0 {
			return false
		}
		s = s[i+len(word):]
		if len(s) == 0 || s[0] == 0 || s[0] == ' ' {
			return true
		}
	}
}

// hasEntry reports whether the NUL-separated environ holds the entry kv.
func hasEntry(environ, kv []byte) bool {
	for entry := range bytes.SplitSeq(environ, []byte{0}) {
		if bytes.Equal(entry, kv) {
			return true
		}
	}
	return false
}

func kill(pid int) { _ = syscall.Kill(pid, syscall.SIGKILL) }
