//go:build !linux

package webdriver

import "os/exec"

// ownGroup leaves cmd as it is where process groups are not used.
func ownGroup(*exec.Cmd) {}

// killGroup kills chromedriver.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
