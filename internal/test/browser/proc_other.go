//go:build !linux

package browser

import "os/exec"

// tieToTest leaves cmd as it is: process groups and the parent-death signal
// are Linux's here; chromedp kills Chromium when the browser ends.
func tieToTest(*exec.Cmd) {}

// processes finds nothing without /proc.
func processes(string) []int { return nil }

func kill(int) {}
