package main

import "github.com/spf13/cobra"

// PLACEHOLDER: replaced by the owner of this command.
func newStatusCommand(*globalOptions) *cobra.Command { return notYet("status") }
