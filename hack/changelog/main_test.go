package main

import (
	"strings"
	"testing"
)

const changelog = `# Changelog

Intro.

## [Unreleased]

### Added

- Next thing.

## [v0.2.0] - 2027-01-10

### Fixed

- A fix.

## [v0.1.0] - 2026-12-01

- First.
`

func TestNotesOfAVersion(t *testing.T) {
	for _, tc := range []struct{ version, want string }{
		{"v0.2.0", "# node-lifecycle-controller v0.2.0\n\n### Fixed\n\n- A fix.\n"},
		{"v0.1.0", "# node-lifecycle-controller v0.1.0\n\n- First.\n"},
		{"v0.3.0", "# node-lifecycle-controller v0.3.0\n\n### Added\n\n- Next thing.\n"},
	} {
		var b strings.Builder
		if err := write(&b, changelog, tc.version); err != nil {
			t.Fatalf("%s: %v", tc.version, err)
		}
		if b.String() != tc.want {
			t.Errorf("%s: got\n%q\nwant\n%q", tc.version, b.String(), tc.want)
		}
	}
	if err := write(&strings.Builder{}, "# Changelog\n\n## [v0.1.0]\n\n- First.\n", "v0.2.0"); err == nil {
		t.Error("a version with no section and no Unreleased section gave notes")
	}
}
