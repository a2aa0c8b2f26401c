package docs

import (
	"fmt"
	"html"
	"regexp"
	"strings"
	"unicode"
)

// page is a markdown file read line by line: what its prose links to,
// the code it shows, and the anchors its headings define.
type page struct {
	// lines are the page's lines that carry prose or code.
	lines []line
	// anchors are the fragments a link into the page may name: GitHub's
	// slugs of its headings and the name and id attributes of its HTML.
	anchors map[string]bool
}

// line is one line of a page.
type line struct {
	// number is the line's 1-based number in its file.
	number int
	// prose is the line outside code, each code span replaced by
	// codePlaceholder; empty in a code block.
	prose string
	// code are the line's code spans, or in a fenced code block the line
	// itself (with the lines a trailing backslash continues it onto).
	code []string
	// inBlock says the line is in a fenced code block.
	inBlock bool
}

var (
	fenceRE       = regexp.MustCompile("^\\s*(```+|~~~+)\\s*([^`\\s]*)")
	atxHeadingRE  = regexp.MustCompile(`^ {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$`)
	setextRE      = regexp.MustCompile(`^ {0,3}(=+|-+)\s*$`)
	htmlAnchorRE  = regexp.MustCompile(`\b(?:name|id)\s*=\s*"([^"]+)"`)
	htmlCommentRE = regexp.MustCompile(`<!--.*?-->`)
)

// parsePage splits a markdown text into lines of prose and code and
// collects the anchors of its headings.
func parsePage(text string) *page {
	p := &page{anchors: map[string]bool{}}
	slugs := map[string]int{}
	var fence string   // the open fence's marker, "" outside a block
	continued := -1    // the index of the block line a trailing backslash continues
	var inComment bool // inside a multi-line HTML comment
	var previousProse string
	for i, raw := range strings.Split(text, "\n") {
		number := i + 1
		if fence != "" {
			if m := fenceRE.FindStringSubmatch(raw); m != nil && m[2] == "" &&
				m[1][0] == fence[0] && len(m[1]) >= len(fence) {
				fence, continued = "", -1
				continue
			}
			code := strings.TrimSuffix(strings.TrimSpace(raw), `\`)
			if continued >= 0 {
				p.lines[continued].code[0] += " " + code
			} else {
				p.lines = append(p.lines, line{number: number, code: []string{code}, inBlock: true})
				continued = len(p.lines) - 1
			}
			if !strings.HasSuffix(strings.TrimSpace(raw), `\`) {
				continued = -1
			}
			continue
		}
		if m := fenceRE.FindStringSubmatch(raw); m != nil {
			fence, previousProse = m[1], ""
			continue
		}
		// HTML comments render nothing: what they say is not checked.
		if inComment {
			end := strings.Index(raw, "-->")
			if end < 0 {
				continue
			}
			raw, inComment = raw[end+len("-->"):], false
		}
		raw = htmlCommentRE.ReplaceAllString(raw, "")
		if start := strings.Index(raw, "<!--"); start >= 0 {
			raw, inComment = raw[:start], true
		}
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(raw, -1) {
			p.anchors[m[1]] = true
		}
		if m := atxHeadingRE.FindStringSubmatch(raw); m != nil {
			p.anchors[uniqueSlug(slugs, m[1])] = true
		} else if setextRE.MatchString(raw) && strings.TrimSpace(previousProse) != "" {
			p.anchors[uniqueSlug(slugs, previousProse)] = true
		}
		prose, code := splitCodeSpans(raw)
		p.lines = append(p.lines, line{number: number, prose: prose, code: code})
		previousProse = raw
	}
	return p
}

// codePlaceholder stands for a code span in prose.
const codePlaceholder = "\x00"

// splitCodeSpans returns a line with each code span replaced by
// codePlaceholder,
// and the spans' contents, as CommonMark reads them: a run of n backticks
// opens a span that the next run of exactly n backticks closes.
func splitCodeSpans(s string) (prose string, spans []string) {
	var out strings.Builder
	for {
		start := strings.IndexByte(s, '`')
		if start < 0 {
			out.WriteString(s)
			return out.String(), spans
		}
		n := start
		for n < len(s) && s[n] == '`' {
			n++
		}
		ticks := s[start:n]
		end := closingTicks(s[n:], len(ticks))
		if end < 0 { // no closing run: the backticks are text
			out.WriteString(s[:n])
			s = s[n:]
			continue
		}
		content := s[n : n+end]
		if len(content) > 1 && content[0] == ' ' && content[len(content)-1] == ' ' {
			content = content[1 : len(content)-1]
		}
		out.WriteString(s[:start])
		out.WriteString(codePlaceholder)
		spans = append(spans, content)
		s = s[n+end+len(ticks):]
	}
}

// closingTicks is the index in s of the first run of exactly n backticks,
// or -1.
func closingTicks(s string, n int) int {
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] == '`' {
			j++
		}
		if j-i == n {
			return i
		}
		i = j
	}
	return -1
}

var (
	imageRE     = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	linkRE      = regexp.MustCompile(`\[([^\]]*)\](?:\([^)]*\)|\[[^\]]*\])`)
	htmlTagRE   = regexp.MustCompile(`<[^>]+>`)
	underlineRE = regexp.MustCompile(`(^|[^\pL\pN])_+|_+([^\pL\pN]|$)`)
)

// uniqueSlug is GitHub's anchor of a heading, with "-1", "-2", ... appended
// to the second, third, ... heading of the same slug on a page; seen
// counts the slugs met so far.
func uniqueSlug(seen map[string]int, heading string) string {
	base := slug(heading)
	s := base
	for _, taken := seen[s]; taken; _, taken = seen[s] {
		seen[base]++
		s = fmt.Sprintf("%s-%d", base, seen[base])
	}
	seen[s] = 0
	return s
}

// slug is GitHub's anchor of a heading written in markdown: its rendered
// text, lower case, with spaces as hyphens and every character dropped
// that is not a letter, a decimal or letter number (not "½"), a mark, a
// connector such as "_" or a hyphen.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(renderedText(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || unicode.In(r, unicode.L, unicode.Nd, unicode.Nl, unicode.M, unicode.Pc):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// renderedText is the text a line of inline markdown renders to: code
// spans as their content, links and images as their text, without HTML
// tags, emphasis markers or character references.
func renderedText(s string) string {
	prose, spans := splitCodeSpans(s)
	// Code spans are set aside while the markup around them is removed.
	parts := strings.Split(prose, codePlaceholder)
	var out strings.Builder
	for i, part := range parts {
		part = imageRE.ReplaceAllString(part, "$1")
		part = linkRE.ReplaceAllString(part, "$1")
		part = htmlTagRE.ReplaceAllString(part, "")
		part = strings.NewReplacer("*", "", "~~", "").Replace(part)
		part = underlineRE.ReplaceAllString(part, "$1$2")
		out.WriteString(html.UnescapeString(part))
		if i < len(spans) {
			out.WriteString(spans[i])
		}
	}
	return strings.TrimSpace(out.String())
}
