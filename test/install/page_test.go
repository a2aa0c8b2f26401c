package install

import (
	"bufio"
	"regexp"
	"strings"
)

// command is one shell command of a page: a line, with its continuation
// lines and the body of its here-document.
type command struct {
	// Text is the command as the page writes it, lines joined by "\n".
	Text string
	// Line is the page's line the command starts on, from 1.
	Line int
}

// key is what the test's lists match a command by: its first line,
// without a trailing comment, with spaces collapsed.
func (c command) key() string {
	first, _, _ := strings.Cut(c.Text, "\n")
	if i := strings.Index(first, " # "); i >= 0 && !strings.ContainsAny(first[:i], `'"`) {
		first = first[:i]
	}
	return strings.Join(strings.Fields(first), " ")
}

// heredoc matches the start of a here-document: <<EOF, <<'EOF', <<-"EOF".
var heredoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// commands returns the commands of the page's ```sh blocks, in order.
// Blank lines and lines that are only a comment separate commands; a line
// ending in a backslash continues on the next; a here-document belongs to
// the command that opens it, up to its delimiter.
func commands(page string) []command {
	var (
		out     []command
		inBlock bool
		cur     *command
		until   string // the delimiter of the open here-document
	)
	flush := func() {
		if cur != nil {
			out = append(out, *cur)
			cur = nil
		}
	}
	sc := bufio.NewScanner(strings.NewReader(page))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case !inBlock:
			inBlock = strings.TrimSpace(line) == "```sh"
			continue
		case until != "":
			cur.Text += "\n" + line
			if strings.TrimLeft(line, "\t") == until { // as bash ends it (<<- strips tabs)
				until = ""
				flush()
			}
			continue
		case strings.HasPrefix(strings.TrimSpace(line), "```"):
			inBlock = false
			flush()
			continue
		}
		trimmed := strings.TrimSpace(line)
		if cur == nil && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur == nil {
			cur = &command{Text: line, Line: n}
		} else {
			cur.Text += "\n" + line
		}
		if m := heredoc.FindStringSubmatch(line); m != nil {
			until = m[1]
			continue
		}
		if !strings.HasSuffix(line, `\`) {
			flush()
		}
	}
	flush()
	return out
}

// textBlocks returns the contents of the page's ```text blocks, each
// without its surrounding blank space: the outputs the page shows.
func textBlocks(page string) []string {
	var (
		out   []string
		block *strings.Builder
	)
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case block == nil && strings.TrimSpace(line) == "```text":
			block = &strings.Builder{}
		case block != nil && strings.TrimSpace(line) == "```":
			out = append(out, strings.TrimSpace(block.String()))
			block = nil
		case block != nil:
			block.WriteString(line + "\n")
		}
	}
	return out
}
