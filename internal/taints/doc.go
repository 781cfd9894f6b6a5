// Package taints computes the taints a node should carry from its conditions.
// The functions are pure: they read a node and return the taint list it
// should have, leaving every taint they do not own untouched.
package taints
