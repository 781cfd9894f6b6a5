// Command docmaps checks the maps of the code that the documentation draws:
// the Layout table of docs/contributing.md must list every package that
// go list ./internal/... prints and no internal/ path that is gone; every Go
// file that table, its heartbeat's path and its Vocabulary name, and every Go
// file the given doc.go comments name, must exist; and every function or
// method the heartbeat's path and the Vocabulary name (Type.Method,
// pkg.Type.Method, pkg.Func) must be declared in the module's Go code under
// internal/, controllers/ and pkg/. make verify runs it from the repository's
// root:
//
//	go run ./hack/docmaps -doc docs/contributing.md controllers/doc.go ...
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// The sections of the Markdown map, by their level-2 headings.
const (
	layoutSection    = "Layout"
	heartbeatSection = "A heartbeat's path through the files"
	vocabSection     = "Vocabulary"
)

// codeTrees are the directories, relative to the root, whose Go code the
// names of the Markdown map must be declared in.
var codeTrees = []string{"internal", "controllers", "pkg"}

func main() {
	root := flag.String("root", ".", "the repository's root, which every path is relative to")
	doc := flag.String("doc", "docs/contributing.md", "the Markdown file with the Layout table, the heartbeat's path and the Vocabulary")
	flag.Parse()
	problems, err := run(*root, *doc, flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "docmaps:", err)
		os.Exit(1)
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		fmt.Printf("%d stale entries in the maps of the code: fix the docs (or the code)\n", len(problems))
		os.Exit(1)
	}
}

// run checks the Markdown map doc and the Go doc comments of goDocs, all
// relative to root, and returns what is stale, each as file:line: message.
func run(root, doc string, goDocs []string) ([]string, error) {
	pkgs, err := listPackages(root)
	if err != nil {
		return nil, err
	}
	idx, err := loadIndex(root, codeTrees)
	if err != nil {
		return nil, err
	}
	text, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return nil, fmt.Errorf("read the Markdown map: %w", err)
	}
	problems := checkMarkdown(root, doc, string(text), pkgs, idx)
	for _, g := range goDocs {
		text, err := os.ReadFile(filepath.Join(root, g))
		if err != nil {
			return nil, fmt.Errorf("read a doc.go map: %w", err)
		}
		problems = append(problems, checkGoDoc(root, g, string(text))...)
	}
	return problems, nil
}

// listPackages returns the packages go list ./internal/... prints, as paths
// relative to root with slashes (internal/safety/act).
func listPackages(root string) ([]string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", root, err)
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./internal/...")
	cmd.Dir = abs
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list ./internal/...: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(abs, dir)
		if err != nil {
			return nil, fmt.Errorf("package directory %s: %w", dir, err)
		}
		pkgs = append(pkgs, filepath.ToSlash(rel))
	}
	return pkgs, nil
}

// section is the lines of one level-2 section of a Markdown file.
type section struct {
	heading int      // the heading's line number, from 1
	lines   []string // the lines after the heading, fenced code blanked
}

// sections returns a Markdown file's level-2 sections by title.
func sections(text string) map[string]*section {
	out := map[string]*section{}
	var cur *section
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			line = ""
		}
		if fenced {
			line = ""
		}
		if title, ok := strings.CutPrefix(line, "## "); ok {
			cur = &section{heading: i + 1}
			out[strings.TrimSpace(title)] = cur
			continue
		}
		if strings.HasPrefix(line, "# ") {
			cur = nil
			continue
		}
		if cur != nil {
			cur.lines = append(cur.lines, line)
		}
	}
	return out
}

// codeSpan finds a Markdown line's code spans.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// spans returns the contents of a line's code spans.
func spans(line string) []string {
	var out []string
	for _, m := range codeSpan.FindAllStringSubmatch(line, -1) {
		out = append(out, strings.TrimSpace(m[1]))
	}
	return out
}

// checkMarkdown checks the Markdown map doc, whose text is text, against the
// packages pkgs (relative to root), the files under root and the
// declarations in idx.
func checkMarkdown(root, doc, text string, pkgs []string, idx *Index) []string {
	secs := sections(text)
	var problems []string
	for _, title := range []string{layoutSection, heartbeatSection, vocabSection} {
		s := secs[title]
		if s == nil {
			problems = append(problems, fmt.Sprintf("%s:1: no section %q (## %s): docmaps checks it", doc, title, title))
			continue
		}
		if title == layoutSection {
			problems = append(problems, checkLayout(root, doc, s, pkgs)...)
		}
		problems = append(problems, checkMarkdownFiles(root, doc, s)...)
		if title != layoutSection {
			problems = append(problems, checkNames(doc, s, idx)...)
		}
	}
	return problems
}

// row is one row of the Layout table.
type row struct {
	line  int
	first []string // the code spans of the first column
	all   []string // the code spans of the whole row
}

// checkLayout checks that the Layout table lists every package of pkgs and
// names no internal/ path that is gone.
func checkLayout(root, doc string, s *section, pkgs []string) []string {
	var rows []row
	for i, line := range s.lines {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(t, "|"), "|")
		if strings.Trim(cells[0], " -:") == "" || strings.TrimSpace(cells[0]) == "Path" {
			continue // the separator and the header
		}
		r := row{line: s.heading + 1 + i, all: spans(t)}
		for _, p := range spans(cells[0]) {
			r.first = append(r.first, strings.TrimSuffix(p, "/"))
		}
		for j, p := range r.all {
			r.all[j] = strings.TrimSuffix(p, "/")
		}
		rows = append(rows, r)
	}
	var problems []string
	if len(rows) == 0 {
		return []string{fmt.Sprintf("%s:%d: the Layout section has no table", doc, s.heading)}
	}
	for _, pkg := range pkgs {
		if !slices.ContainsFunc(rows, func(r row) bool { return lists(r, pkg) }) {
			problems = append(problems, fmt.Sprintf("%s:%d: package %s is not in the Layout table: add a row for it", doc, s.heading, pkg))
		}
	}
	for _, r := range rows {
		for _, p := range r.all {
			if !strings.HasPrefix(p, "internal/") || slices.Contains(pkgs, p) {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: %s no longer exists", doc, r.line, p))
			}
		}
	}
	return problems
}

// lists tells whether a row of the Layout table lists the package pkg: names
// it in a code span, or names its parent in its first column and its last
// element in a code span.
func lists(r row, pkg string) bool {
	if slices.Contains(r.all, pkg) {
		return true
	}
	parent, last := path.Split(pkg)
	return slices.Contains(r.first, strings.TrimSuffix(parent, "/")) && slices.Contains(r.all, last)
}

// checkMarkdownFiles checks that each Go file a section names in a code span
// exists under root, under root/internal or under root/internal/controllers.
func checkMarkdownFiles(root, doc string, s *section) []string {
	var problems []string
	for i, line := range s.lines {
		for _, sp := range spans(line) {
			if !strings.HasSuffix(sp, ".go") || strings.ContainsAny(sp, " \t") {
				continue
			}
			if !existsUnder(root, sp, ".", "internal", "internal/controllers") {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: no such file (nor under internal/ or internal/controllers/)", doc, s.heading+1+i, sp))
			}
		}
	}
	return problems
}

// existsUnder tells whether the file name exists in one of dirs, relative to
// root.
func existsUnder(root, name string, dirs ...string) bool {
	for _, d := range dirs {
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(d), filepath.FromSlash(name)))
		if err == nil && !info.IsDir() {
			return true
		}
	}
	return false
}

// goName finds a name of Go code in a code span: Type.Method, pkg.Type.Method
// or pkg.Func, perhaps called (pkg.Func(a, b)).
var goName = regexp.MustCompile(`^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*){1,2})(?:\(.*\))?$`)

// checkNames checks that each function or method a section names in a code
// span is declared in idx.
func checkNames(doc string, s *section, idx *Index) []string {
	var problems []string
	for i, line := range s.lines {
		for _, sp := range spans(line) {
			m := goName.FindStringSubmatch(sp)
			if m == nil {
				continue
			}
			if why := checkName(strings.Split(m[1], "."), idx); why != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", doc, s.heading+1+i, m[1], why))
			}
		}
	}
	return problems
}

// checkName returns why the name parts (pkg.Func, Type.Method or
// pkg.Type.Method) is not declared in idx, or "" if it is, or is not this
// module's to check.
func checkName(parts []string, idx *Index) string {
	first := parts[0]
	switch {
	case idx.isPackage(first):
		if !upper(parts[1]) {
			return "" // a file (act.go) or a field, not a name to check
		}
		if len(parts) == 2 {
			if idx.Funcs[first][parts[1]] || idx.Types[first][parts[1]] {
				return ""
			}
			return fmt.Sprintf("no function or type %s in package %s", parts[1], first)
		}
		if !idx.Types[first][parts[1]] {
			return fmt.Sprintf("no type %s in package %s", parts[1], first)
		}
		if !idx.hasMethod(first, parts[1], parts[2]) {
			return fmt.Sprintf("no method %s on %s.%s", parts[2], first, parts[1])
		}
		return ""
	case len(parts) == 2 && upper(first) && idx.isType(first):
		if !idx.hasMethod("", first, parts[1]) {
			return fmt.Sprintf("no method %s on any type %s of the module", parts[1], first)
		}
		return ""
	}
	return "" // not this module's: corev1.Node
}

// upper tells whether a name starts with an upper-case letter.
func upper(name string) bool {
	for _, r := range name {
		return unicode.IsUpper(r)
	}
	return false
}

// goFile finds the paths of Go files in a comment: nodehealth/wake.go,
// internal/health/tracker.go.
var goFile = regexp.MustCompile(`[\w./-]*\w\.go\b`)

// checkGoDoc checks that each Go file the comments of the Go file name, whose
// text is text, exists: in name's own directory, in its parent or under root.
func checkGoDoc(root, name, text string) []string {
	dir := path.Dir(filepath.ToSlash(name))
	var problems []string
	for i, line := range strings.Split(text, "\n") {
		comment, ok := strings.CutPrefix(strings.TrimSpace(line), "//")
		if !ok {
			continue
		}
		for _, loc := range goFile.FindAllStringIndex(comment, -1) {
			if rest := comment[loc[1]:]; strings.HasPrefix(rest, "/") || len(rest) > 1 && rest[0] == '.' && (unicode.IsLetter(rune(rest[1])) || unicode.IsDigit(rune(rest[1]))) {
				continue // a host (x.go.dev) or a directory, not a file
			}
			f := comment[loc[0]:loc[1]]
			if !existsUnder(root, f, dir, path.Dir(dir), ".") {
				problems = append(problems, fmt.Sprintf("%s:%d: %s: no such file (in %s/, %s/ or the repository's root)", name, i+1, f, dir, path.Dir(dir)))
			}
		}
	}
	return problems
}
