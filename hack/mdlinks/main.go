// Command mdlinks checks the links between the repository's Markdown files:
// each relative link must name a file or directory that exists and, when it
// has a #fragment, a heading of that file (as GitHub makes anchors of
// headings). Links to other sites are not followed. make verify runs it over
// every tracked .md file.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/nodelifecycle/node-lifecycle-controller/internal/markdown"
)

func main() {
	var broken []string
	for _, path := range os.Args[1:] {
		b, err := check(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mdlinks:", err)
			os.Exit(1)
		}
		broken = append(broken, b...)
	}
	for _, b := range broken {
		fmt.Println(b)
	}
	if len(broken) > 0 {
		fmt.Printf("%d broken links\n", len(broken))
		os.Exit(1)
	}
}

// link finds inline links and images: [text](target) or [text](target "title").
var link = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// inlineCode finds code spans, whose brackets are not links.
var inlineCode = regexp.MustCompile("`[^`]*`")

// check returns the broken links of one file, each as file:line: message.
func check(path string) ([]string, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var broken []string
	fenced := false
	for i, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = inlineCode.ReplaceAllString(line, "")
		for _, m := range link.FindAllStringSubmatch(line, -1) {
			if why := checkTarget(path, m[1]); why != "" {
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", path, i+1, m[1], why))
			}
		}
	}
	return broken, nil
}

// checkTarget returns why a link from the file at from is broken, or "".
func checkTarget(from, target string) string {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return ""
	}
	file, fragment, _ := strings.Cut(target, "#")
	dest := from
	if file != "" {
		dest = filepath.Join(filepath.Dir(from), filepath.FromSlash(file))
		info, err := os.Stat(dest)
		if err != nil {
			return "no such file"
		}
		if info.IsDir() {
			if fragment != "" {
				return "a fragment on a directory"
			}
			return ""
		}
	}
	if fragment == "" || !strings.HasSuffix(dest, ".md") {
		return ""
	}
	anchors, err := headings(dest)
	if err != nil {
		return err.Error()
	}
	if !anchors[fragment] {
		return "no such heading in " + filepath.ToSlash(dest)
	}
	return ""
}

// headings returns the anchors GitHub makes of a Markdown file's headings.
func headings(path string) (map[string]bool, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(string(text), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(line, "#"))
		a := markdown.Slug(title)
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors, nil
}
