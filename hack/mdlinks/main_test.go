package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCheckFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.md", "# Title\n\n## Part two\n\n## Part two\n")
	write("a.md", "[ok](b.md#part-two) [ok too](b.md#part-two-1) [self](#top) [web](https://example.com/x)\n\n"+
		"# Top\n\n[gone](c.md) [no heading](b.md#part-three) `[code](c.md)`\n\n```\n[fenced](c.md)\n```\n")
	broken, err := check(filepath.Join(dir, "a.md"))
	if err != nil {
		t.Fatal(err)
	}
	a := filepath.Join(dir, "a.md")
	want := []string{
		a + ":5: c.md: no such file",
		a + ":5: b.md#part-three: no such heading in " + filepath.ToSlash(filepath.Join(dir, "b.md")),
	}
	if !slices.Equal(broken, want) {
		t.Errorf("check found\n%q\nwant\n%q", broken, want)
	}
}
