// Package markdown holds what the repository's checks of its Markdown share.
package markdown

import (
	"strings"
	"unicode"
)

// Slug returns the anchor GitHub gives a heading: lower case, spaces as
// hyphens, every character but letters, digits, hyphens and underscores
// dropped.
func Slug(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
