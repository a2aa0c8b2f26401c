//go:build !linux

package controlplane

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

const pdeathsigSupported = false

// ownerID identifies this process; without /proc, by pid alone.
func ownerID() (string, error) { return fmt.Sprintf("%d:0", os.Getpid()), nil }

// processAlive reports whether the pid of an ownerID is in use.
func processAlive(owner string) bool {
	pid, _, _ := strings.Cut(strings.TrimSpace(owner), ":")
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false
	}
	p, err := os.FindProcess(n)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

func ownedProcesses(func(string) bool) []int { return nil }

// ProcessesWithEnv cannot list processes without /proc: it finds none.
func ProcessesWithEnv(string) []int { return nil }

func sweepOrphans() {}
