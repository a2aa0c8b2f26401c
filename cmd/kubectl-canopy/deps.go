package main

import "github.com/spf13/cobra"

// PLACEHOLDER: replaced by the owner of this command.
func newDepsCommand(*globalOptions) *cobra.Command { return notYet("deps") }
