// Package options holds the controller's configuration: the flags it shares
// with kube-controller-manager, their defaults, and the rules that a valid
// configuration obeys. Validation runs before anything starts, so a bad value
// is refused with one line that names the flag and the rule it broke.
package options
