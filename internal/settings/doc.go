// Package settings reads a process's whole configuration once: every
// variable each role of the one binary uses (serve, index, worker, mcp,
// local), through every package's own parser, before anything connects.
// A bad value anywhere is reported with all the others in one error, so
// an operator fixes a deployment in one pass; the role is then built from
// the Settings value, never from the environment again.
package settings
