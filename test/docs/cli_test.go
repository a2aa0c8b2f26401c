package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// helpFunc returns what `kubectl-canopy <path...> --help` prints.
type helpFunc func(path []string) (string, error)

// command is what a command's --help says about it.
type command struct {
	// path is the command's words after kubectl-canopy.
	path []string
	// subcommands are the names of its subcommands ("Available Commands").
	subcommands []string
	// flags maps each long flag name, without the dashes, to whether the
	// flag takes a value ("Flags" and "Global Flags").
	flags map[string]bool
	// shorthands maps each one-letter flag to whether it takes a value.
	shorthands map[string]bool
}

// String is the command as a user types it.
func (c *command) String() string {
	return strings.Join(append([]string{"kubectl canopy"}, c.path...), " ")
}

var (
	// helpSectionRE is a heading of cobra's help: "Flags:", "Global Flags:".
	helpSectionRE = regexp.MustCompile(`^(\S.*):$`)
	// helpCommandRE is a line of "Available Commands:".
	helpCommandRE = regexp.MustCompile(`^  (\S+)\s`)
	// helpFlagRE is a line of "Flags:": "  -o, --output string   ...".
	helpFlagRE = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w-]+)(?: (\w+))?(?:\s|$)`)
)

// parseHelp reads a command's subcommands and flags out of cobra's help.
func parseHelp(path []string, help string) *command {
	c := &command{path: path, flags: map[string]bool{}, shorthands: map[string]bool{}}
	section := ""
	for _, l := range strings.Split(help, "\n") {
		if m := helpSectionRE.FindStringSubmatch(l); m != nil {
			section = m[1]
			continue
		}
		switch section {
		case "Available Commands", "Additional Commands":
			if m := helpCommandRE.FindStringSubmatch(l); m != nil {
				c.subcommands = append(c.subcommands, m[1])
			}
		case "Flags", "Global Flags":
			if m := helpFlagRE.FindStringSubmatch(l); m != nil {
				takesValue := m[3] != ""
				c.flags[m[2]] = takesValue
				if m[1] != "" {
					c.shorthands[m[1]] = takesValue
				}
			}
		}
	}
	return c
}

// cli is kubectl-canopy's command tree, read from its help on demand.
type cli struct {
	help     helpFunc
	commands map[string]*command
}

// newCLI returns the command tree that help describes.
func newCLI(help helpFunc) *cli {
	return &cli{help: help, commands: map[string]*command{}}
}

// command returns the command at path, reading its help the first time.
func (c *cli) command(path []string) (*command, error) {
	key := strings.Join(path, " ")
	if cmd, ok := c.commands[key]; ok {
		return cmd, nil
	}
	help, err := c.help(path)
	if err != nil {
		return nil, fmt.Errorf("reading the help of %s: %w", strings.Join(append([]string{"kubectl-canopy"}, path...), " "), err)
	}
	cmd := parseHelp(path, help)
	c.commands[key] = cmd
	return cmd, nil
}
