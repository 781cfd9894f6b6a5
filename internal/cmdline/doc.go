// Package cmdline is the binary's command line: the controllers' options
// (package pkg/options), which it embeds, and the flags of the process
// around them (the apiserver, its client limits, leader election and what
// the process serves), their defaults, and the rules a valid command line
// obeys. Validation runs before anything starts, so a bad value is refused
// with one line that names the flag and the rule it broke.
package cmdline
