//go:build !linux

package ocmagents

import "os/exec"

// tieToTest does nothing where there is no parent-death signal: there, as
// with internal/test/controlplane's etcd and kube-apiserver, the OCM processes of
// a test process that dies without stopping its Env outlive it.
func tieToTest(*exec.Cmd) {}
