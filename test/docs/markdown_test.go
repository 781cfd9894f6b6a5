package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// command is a command a doc shows in a shell code block.
type command struct {
	// doc and line say where: the file, relative to the repository's root,
	// and the line the command starts on.
	doc  string
	line int
	// text is the command as written, without its prompt and its trailing
	// comment; a command continued over lines keeps its backslashes and
	// line breaks.
	text string
	// output is what the doc shows it printing, line by line, trailing
	// blank lines dropped; nil when it shows nothing.
	output []string
}

// block is a fenced code block.
type block struct {
	lang  string
	line  int // the line of its first line of content
	lines []string
}

// promptLangs are the languages of code blocks whose commands follow a
// "$ " prompt, with their output below them; scriptLangs those whose every
// line is a command.
var (
	promptLangs = map[string]bool{"console": true, "shell-session": true}
	scriptLangs = map[string]bool{"sh": true, "bash": true, "shell": true, "zsh": true}
)

// fence opens or closes a code block, indented as the list item it is in.
var fence = regexp.MustCompile("^(\\s*)(```+|~~~+)\\s*([A-Za-z0-9_-]*)")

// blocksOf returns the fenced code blocks of a Markdown text, each line
// without the indentation of its fence.
func blocksOf(text string) []block {
	var (
		blocks []block
		open   *block
		indent string
		marker string
	)
	for i, line := range strings.Split(text, "\n") {
		m := fence.FindStringSubmatch(line)
		switch {
		case open == nil && m != nil:
			open, indent, marker = &block{lang: m[3], line: i + 2}, m[1], m[2]
		case open != nil && m != nil && strings.TrimSpace(line) == marker:
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			open.lines = append(open.lines, strings.TrimPrefix(line, indent))
		}
	}
	return blocks
}

// commandsOf returns the commands of the shell code blocks of a Markdown
// text, in order. doc names the file, for the commands' positions.
func commandsOf(doc, text string) []command {
	var cmds []command
	for _, b := range blocksOf(text) {
		switch {
		case promptLangs[b.lang]:
			cmds = append(cmds, promptCommands(doc, b)...)
		case scriptLangs[b.lang]:
			cmds = append(cmds, scriptCommands(doc, b)...)
		}
	}
	return cmds
}

// promptCommands reads a block of "$ " prompts, each command followed by
// its output.
func promptCommands(doc string, b block) []command {
	var cmds []command
	for i := 0; i < len(b.lines); i++ {
		rest, ok := strings.CutPrefix(b.lines[i], "$ ")
		if !ok {
			if len(cmds) > 0 {
				cmds[len(cmds)-1].output = append(cmds[len(cmds)-1].output, b.lines[i])
			}
			continue
		}
		c := command{doc: doc, line: b.line + i}
		lines := []string{rest}
		for strings.HasSuffix(lines[len(lines)-1], "\\") && i+1 < len(b.lines) {
			i++
			lines = append(lines, b.lines[i])
		}
		c.text = withoutComment(strings.Join(lines, "\n"))
		cmds = append(cmds, c)
	}
	for i := range cmds {
		out := cmds[i].output
		for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
			out = out[:len(out)-1]
		}
		cmds[i].output = out
	}
	return cmds
}

// scriptCommands reads a block of commands without prompts or output.
func scriptCommands(doc string, b block) []command {
	var cmds []command
	for i := 0; i < len(b.lines); i++ {
		if t := strings.TrimSpace(b.lines[i]); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		c := command{doc: doc, line: b.line + i}
		lines := []string{b.lines[i]}
		for strings.HasSuffix(lines[len(lines)-1], "\\") && i+1 < len(b.lines) {
			i++
			lines = append(lines, b.lines[i])
		}
		c.text = withoutComment(strings.Join(lines, "\n"))
		cmds = append(cmds, c)
	}
	return cmds
}

// withoutComment drops a shell comment, a # after a blank outside quotes,
// and the blanks before it.
func withoutComment(text string) string {
	var quote rune
	for i, r := range text {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && i > 0 && (text[i-1] == ' ' || text[i-1] == '\t'):
			return strings.TrimRight(text[:i], " \t")
		}
	}
	return strings.TrimRight(text, " \t")
}

// inlineFlags returns the flags a Markdown text names in inline code
// outside its code blocks, `--name` or `--name=value`, by name (a pattern
// such as --log-* keeps its star).
func inlineFlags(text string) []string {
	var flags []string
	inBlock := false
	for line := range strings.Lines(text) {
		if fence.MatchString(line) {
			inBlock = !inBlock
			continue
		}
		if inBlock {
			continue
		}
		for _, m := range inlineFlag.FindAllStringSubmatch(line, -1) {
			flags = append(flags, m[1])
		}
	}
	return flags
}

// inlineFlag is inline code that starts with a long flag.
var inlineFlag = regexp.MustCompile("`(--[a-z0-9-]+\\*?)[=`]")

// readDoc returns a doc's text; name is relative to the repository's root.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}

func TestCommandsAreReadAsTheDocsShowThem(t *testing.T) {
	const doc = "Text.\n\n" +
		"```console\n" +
		"$ make demo     # the demo\n" +
		"$ grep '^kind:' x.yaml | sort | uniq -c\n" +
		"      5 kind: ClusterRole\n" +
		"\n" +
		"$ helm install x dist/chart \\\n" +
		"    --set-json 'args=[\"--a=#b\"]'\n" +
		"```\n\n" +
		"- A list item:\n\n" +
		"  ```console\n" +
		"  $ kubectl get events -A\n" +
		"  ```\n\n" +
		"```text\n" +
		"$ not a command\n" +
		"```\n\n" +
		"```sh\n" +
		"# a comment\n" +
		"make build\n" +
		"```\n" +
		"`--dry-run` and `--log-*` and `--pod-eviction-timeout=0`, not `-v` nor `--`.\n"
	got := commandsOf("x.md", doc)
	want := []command{
		{doc: "x.md", line: 4, text: "make demo"},
		{doc: "x.md", line: 5, text: "grep '^kind:' x.yaml | sort | uniq -c", output: []string{"      5 kind: ClusterRole"}},
		{doc: "x.md", line: 8, text: "helm install x dist/chart \\\n    --set-json 'args=[\"--a=#b\"]'"},
		{doc: "x.md", line: 15, text: "kubectl get events -A"},
		{doc: "x.md", line: 24, text: "make build"},
	}
	if len(got) != len(want) {
		t.Fatalf("Read %d commands, want %d: %#v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.doc != w.doc || g.line != w.line || g.text != w.text || strings.Join(g.output, "\n") != strings.Join(w.output, "\n") {
			t.Errorf("Command %d:\n got %#v\nwant %#v", i, g, w)
		}
	}
	if flags, want := strings.Join(inlineFlags(doc), " "), "--dry-run --log-* --pod-eviction-timeout"; flags != want {
		t.Errorf("Inline flags %q, want %q", flags, want)
	}
}
