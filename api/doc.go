// Package api holds the project's API groups. The NodeHealthPolicy types, for
// per-node-pool health policy, live in api/v1alpha1 under the group
// health.nodelifecycle.io.
package api
