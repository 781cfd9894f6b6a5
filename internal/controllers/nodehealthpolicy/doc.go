// Package nodehealthpolicy keeps the NodeHealthPolicies in force for the
// other controllers (Source), and reports each policy's pool in its status
// (Reconciler): node counts, zone states, whether eviction is allowed and
// why not, and overlaps with other policies.
package nodehealthpolicy
