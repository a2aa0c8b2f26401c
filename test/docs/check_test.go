package docs

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// finding is one problem in a page: where it is and what is wrong.
type finding struct {
	file string
	line int
	what string
}

// String is the finding as file:line: what.
func (f finding) String() string {
	return fmt.Sprintf("%s:%d: %s", f.file, f.line, f.what)
}

// checker checks the references of the markdown pages of a tree.
type checker struct {
	// root is the tree's directory; links starting with "/" start there.
	root string
	// targets are the targets of root's Makefile.
	targets map[string]bool
	// cli is kubectl-canopy's command tree.
	cli *cli
	// pages are the markdown pages read so far, by slash path below root.
	pages    map[string]*page
	findings []finding
}

// checkedPage says whether the page at rel (a slash path below the root)
// is one the docs test checks: README.md, DEVELOPMENT.md, and the markdown
// pages under docs/ and examples/.
func checkedPage(rel string) bool {
	switch {
	case rel == "README.md", rel == "DEVELOPMENT.md":
		return true
	case strings.HasPrefix(rel, "docs/"), strings.HasPrefix(rel, "examples/"):
		return path.Ext(rel) == ".md"
	}
	return false
}

// checkedPages are the pages below root that checkedPage selects, sorted.
func checkedPages(root string) ([]string, error) {
	var pages []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if checkedPage(rel) {
			pages = append(pages, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing the pages of %s: %w", root, err)
	}
	slices.Sort(pages)
	return pages, nil
}

// check checks the pages below root that checkedPage selects against the
// files below root, root's Makefile and the command tree help describes.
func check(root string, help helpFunc) ([]finding, error) {
	targets, err := makeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		return nil, err
	}
	pages, err := checkedPages(root)
	if err != nil {
		return nil, err
	}
	c := &checker{root: root, targets: targets, cli: newCLI(help), pages: map[string]*page{}}
	for _, rel := range pages {
		if err := c.checkPage(rel); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(c.findings, func(a, b finding) int {
		return cmp.Or(strings.Compare(a.file, b.file), cmp.Compare(a.line, b.line))
	})
	return c.findings, nil
}

// report records a finding.
func (c *checker) report(file string, line int, format string, args ...any) {
	c.findings = append(c.findings, finding{file: file, line: line, what: fmt.Sprintf(format, args...)})
}

// page reads and parses the markdown page at rel once.
func (c *checker) page(rel string) (*page, error) {
	if p, ok := c.pages[rel]; ok {
		return p, nil
	}
	text, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	p := parsePage(string(text))
	c.pages[rel] = p
	return p, nil
}

// checkPage checks the links, make targets and commands of one page.
func (c *checker) checkPage(rel string) error {
	p, err := c.page(rel)
	if err != nil {
		return err
	}
	for _, l := range p.lines {
		for _, target := range linkTargets(l.prose) {
			if err := c.checkLink(rel, l.number, target); err != nil {
				return err
			}
		}
		var mentioned []*command
		for _, code := range l.code {
			mentioned = append(mentioned, c.checkCode(rel, l.number, code)...)
		}
		if !l.inBlock && len(mentioned) > 0 {
			for _, code := range l.code {
				c.checkLooseFlag(rel, l.number, code, mentioned)
			}
		}
	}
	return nil
}

var (
	inlineLinkRE = regexp.MustCompile(`\]\(\s*(<[^>]*>|[^\s)]*)`)
	refLinkRE    = regexp.MustCompile(`^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)`)
	htmlLinkRE   = regexp.MustCompile(`\b(?:href|src)\s*=\s*"([^"]*)"`)
	schemeRE     = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// linkTargets are the targets of the links of a line of prose: inline
// links and images, reference definitions, and href and src attributes.
func linkTargets(prose string) []string {
	var targets []string
	for _, re := range []*regexp.Regexp{inlineLinkRE, refLinkRE, htmlLinkRE} {
		for _, m := range re.FindAllStringSubmatch(prose, -1) {
			targets = append(targets, strings.TrimSuffix(strings.TrimPrefix(m[1], "<"), ">"))
		}
	}
	return targets
}

// checkLink checks that a relative link of file leads to a file of the
// tree and, with #anchor into a markdown page, to one of its headings.
// Links with a scheme (https:, mailto:) are not followed.
func (c *checker) checkLink(file string, line int, target string) error {
	if target == "" {
		c.report(file, line, "empty link target")
		return nil
	}
	if schemeRE.MatchString(target) || strings.HasPrefix(target, "//") {
		return nil
	}
	linkPath, anchor, _ := strings.Cut(target, "#")
	linkPath, _, _ = strings.Cut(linkPath, "?")
	decoded, err := url.PathUnescape(linkPath)
	if err != nil {
		c.report(file, line, "link %q: %v", target, err)
		return nil
	}
	var rel string
	switch {
	case decoded == "":
		rel = file
	case strings.HasPrefix(decoded, "/"):
		rel = path.Clean(strings.TrimPrefix(decoded, "/"))
	default:
		rel = path.Join(path.Dir(file), decoded)
	}
	if rel == ".." || strings.HasPrefix(rel, "../") {
		c.report(file, line, "link %q leads out of the repository", target)
		return nil
	}
	info, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		c.report(file, line, "link %q: %s does not exist", target, rel)
		return nil
	}
	if err != nil {
		return fmt.Errorf("following link %q of %s:%d: %w", target, file, line, err)
	}
	if anchor == "" || info.IsDir() || path.Ext(rel) != ".md" {
		return nil
	}
	p, err := c.page(rel)
	if err != nil {
		return err
	}
	if decodedAnchor, err := url.PathUnescape(anchor); err == nil {
		anchor = decodedAnchor
	}
	if !p.anchors[anchor] && !p.anchors[strings.ToLower(anchor)] {
		c.report(file, line, "link %q: %s has no heading with the anchor #%s", target, rel, anchor)
	}
	return nil
}

// ruleRE is a rule's line in a Makefile: "target other: prerequisites",
// not a variable assignment ("X := y").
var ruleRE = regexp.MustCompile(`^([^\s:=#][^:=#]*?)\s*::?(?:[^=]|$)`)

// makeTargets are the targets of a Makefile's rules, variable ones aside.
func makeTargets(makefile string) (map[string]bool, error) {
	text, err := os.ReadFile(makefile)
	if err != nil {
		return nil, fmt.Errorf("reading the Makefile: %w", err)
	}
	targets := map[string]bool{}
	for _, l := range strings.Split(string(text), "\n") {
		m := ruleRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		for _, t := range strings.Fields(m[1]) {
			if !strings.ContainsAny(t, "$%") {
				targets[t] = true
			}
		}
	}
	return targets, nil
}

var (
	// assignmentRE is an environment variable set before a command.
	assignmentRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	// subcommandRE is a word that can only mean a subcommand.
	subcommandRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// separators end a shell command; the next word is a command again.
var separators = map[string]bool{"|": true, "||": true, "&&": true, ";": true, "&": true, "(": true, ")": true,
	"$(": true, "{": true, "}": true, "then": true, "do": true, "else": true,
	"sudo": true, "time": true, "env": true, "exec": true, "nohup": true, "watch": true}

// redirection says whether word redirects the command's input or output,
// which ends its arguments.
func redirection(word string) bool {
	return strings.HasPrefix(word, ">") || strings.HasPrefix(word, "<") ||
		strings.HasPrefix(word, "2>") || strings.HasPrefix(word, "&>")
}

// shellWords splits a line of code into words, a trailing ";" being a
// word of its own.
func shellWords(code string) []string {
	var words []string
	for _, w := range strings.Fields(code) {
		if w != ";" && strings.HasSuffix(w, ";") {
			words = append(words, strings.TrimSuffix(w, ";"), ";")
			continue
		}
		words = append(words, w)
	}
	return words
}

// argsEnd is the index of the word that ends the arguments of a command
// whose arguments start at words[from].
func argsEnd(words []string, from int) int {
	for i := from; i < len(words); i++ {
		if separators[words[i]] || redirection(words[i]) || strings.HasPrefix(words[i], "#") {
			return i
		}
	}
	return len(words)
}

// checkCode checks the make and kubectl-canopy commands of a line of code
// (a code span, or a line of a code block) and returns the kubectl-canopy
// commands it names. A word is a command at the start of the line, after
// a shell prompt ("$ "), a separator ("|", "&&", ...) or environment
// variables; a "#" starts a comment.
func (c *checker) checkCode(file string, line int, code string) []*command {
	var mentioned []*command
	words := shellWords(code)
	atCommand := true
	for i := 0; i < len(words); i++ {
		word := strings.Trim(words[i], `"'`)
		switch {
		case strings.HasPrefix(word, "#"):
			return mentioned
		case separators[word], i == 0 && (word == "$" || word == "%"):
			atCommand = true
		case !atCommand:
		case assignmentRE.MatchString(word):
		case word == "make":
			end := argsEnd(words, i+1)
			c.checkMake(file, line, words[i+1:end])
			i, atCommand = end-1, false
		case word == "kubectl" && i+1 < len(words) && words[i+1] == "canopy":
			end := argsEnd(words, i+2)
			if cmd := c.checkCanopy(file, line, words[i+2:end]); cmd != nil {
				mentioned = append(mentioned, cmd)
			}
			i, atCommand = end-1, false
		case path.Base(word) == "kubectl-canopy":
			end := argsEnd(words, i+1)
			if cmd := c.checkCanopy(file, line, words[i+1:end]); cmd != nil {
				mentioned = append(mentioned, cmd)
			}
			i, atCommand = end-1, false
		default:
			atCommand = false
		}
	}
	return mentioned
}

// placeholder says whether a word stands for something the reader fills
// in: <policy>, [flags], {a,b}, FILE, $VAR, ...
func placeholder(word string) bool {
	return strings.ContainsAny(word, "<>[]{}$…") || strings.Contains(word, "...") ||
		(strings.ToUpper(word) == word && strings.ToLower(word) != word)
}

// checkMake checks that the targets of `make <args>` are the Makefile's.
// A make of another directory or file (-C, -f) is not checked.
func (c *checker) checkMake(file string, line int, args []string) {
	for j := 0; j < len(args); j++ {
		arg := strings.Trim(args[j], `"'`)
		switch {
		case strings.HasPrefix(arg, "-C"), strings.HasPrefix(arg, "-f"),
			strings.HasPrefix(arg, "--directory"), strings.HasPrefix(arg, "--file"), strings.HasPrefix(arg, "--makefile"):
			return
		case arg == "-o", arg == "-W", arg == "-I":
			j++
		case strings.HasPrefix(arg, "-"), strings.Contains(arg, "="), placeholder(arg):
		case !c.targets[arg]:
			c.report(file, line, "`make %s`: the Makefile has no target %q", strings.Join(args, " "), arg)
		}
	}
}

// checkCanopy checks `kubectl canopy <args>`: each word that selects a
// subcommand names one, and each flag is a flag of the command it follows.
// It returns the command the words select, or nil when they name none
// (an unknown subcommand, a placeholder such as <command>, or a path:
// then the line is about the binary, not a command).
func (c *checker) checkCanopy(file string, line int, args []string) *command {
	cmd, err := c.cli.command(nil)
	if err != nil {
		c.report(file, line, "%v", err)
		return nil
	}
	for j := 0; j < len(args); j++ {
		word := strings.Trim(args[j], `"'`)
		arg := strings.Trim(word, "[]()")
		switch {
		case arg == "--":
			return cmd
		case strings.HasPrefix(arg, "-") && len(arg) > 1:
			unknown, needsValue := flagUse(cmd, arg)
			for _, u := range unknown {
				c.report(file, line, "`%s`: unknown flag %s", cmd, u)
			}
			if needsValue {
				j++
			}
		case len(cmd.subcommands) == 0:
			// An argument of the command.
		case slices.Contains(cmd.subcommands, arg):
			if cmd, err = c.cli.command(append(slices.Clone(cmd.path), arg)); err != nil {
				c.report(file, line, "%v", err)
				return nil
			}
		case placeholder(word) || !subcommandRE.MatchString(arg):
			return nil
		default:
			c.report(file, line, "`%s %s`: no such command (%s has %s)", cmd, arg, cmd, strings.Join(cmd.subcommands, ", "))
			return nil
		}
	}
	return cmd
}

// checkLooseFlag checks a code span that is a flag alone ("--history 5"),
// on a prose line that names kubectl-canopy commands: it must be a flag
// of one of them.
func (c *checker) checkLooseFlag(file string, line int, code string, mentioned []*command) {
	words := strings.Fields(code)
	if len(words) == 0 || !strings.HasPrefix(words[0], "-") || len(words[0]) < 2 {
		return
	}
	names := make([]string, len(mentioned))
	for i, cmd := range mentioned {
		if unknown, _ := flagUse(cmd, words[0]); len(unknown) == 0 {
			return
		}
		names[i] = cmd.String()
	}
	c.report(file, line, "`%s`: not a flag of %s", words[0], strings.Join(slices.Compact(names), " or "))
}

// flagUse reads one word of flags against cmd: "--name", "--name=value",
// "-n", "-ojson", or alternatives such as "-A/--all-namespaces". It
// returns the flags cmd does not have, and whether the next word is the
// last flag's value.
func flagUse(cmd *command, word string) (unknown []string, needsValue bool) {
	alternatives := strings.Split(word, "/")
	for _, alt := range alternatives {
		if !strings.HasPrefix(alt, "-") {
			alternatives = []string{word}
			break
		}
	}
	for _, alt := range alternatives {
		needsValue = false
		if long, ok := strings.CutPrefix(alt, "--"); ok {
			name, _, hasValue := strings.Cut(long, "=")
			takesValue, known := cmd.flags[name]
			if !known {
				unknown = append(unknown, "--"+name)
			}
			needsValue = takesValue && !hasValue
			continue
		}
		letters := strings.TrimPrefix(alt, "-")
		for k := range len(letters) {
			takesValue, known := cmd.shorthands[letters[k:k+1]]
			if !known {
				unknown = append(unknown, "-"+letters[k:k+1])
				break
			}
			if takesValue { // the rest of the word is the value
				needsValue = k == len(letters)-1
				break
			}
		}
	}
	return unknown, needsValue
}
