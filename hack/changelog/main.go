// Command changelog prints the release notes of one version from a
// CHANGELOG.md kept in the Keep a Changelog shape: the body of its
// "## [vX.Y.Z]" section, or of "## [Unreleased]" for a version not yet
// there, under a title naming the version. make release writes them beside
// the artifacts.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	version := flag.String("version", "", "the version, vX.Y.Z")
	flag.Parse()
	if *version == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: changelog --version=vX.Y.Z CHANGELOG.md")
		os.Exit(2)
	}
	text, err := os.ReadFile(flag.Arg(0))
	if err == nil {
		err = write(os.Stdout, string(text), *version)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "changelog:", err)
		os.Exit(1)
	}
}

// write prints the notes of version from the changelog text.
func write(w io.Writer, text, version string) error {
	body, ok := section(text, version)
	if !ok {
		body, ok = section(text, "Unreleased")
	}
	if !ok {
		return fmt.Errorf("no section for %s, and no Unreleased section", version)
	}
	if strings.TrimSpace(body) == "" {
		return errors.New("the section is empty")
	}
	_, err := fmt.Fprintf(w, "# node-lifecycle-controller %s\n\n%s\n", version, strings.TrimSpace(body))
	return err
}

// section returns the body of the "## [name]" section (a date may follow the
// heading), up to the next section.
func section(text, name string) (string, bool) {
	var body []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "## ") {
			if in {
				break
			}
			heading := strings.TrimSpace(strings.TrimPrefix(line, "## "))
			in = heading == "["+name+"]" || strings.HasPrefix(heading, "["+name+"] ")
			continue
		}
		if in {
			body = append(body, line)
		}
	}
	return strings.Join(body, "\n"), in
}
