// Package allvars gathers every package's list of the environment
// variables it reads (their Vars) in one place, for the checks that hold
// documentation and deployment files to what the code reads: the tables
// of docs/configuration.md and the variables deploy/ sets. It is the one
// list to extend when a package starts reading the environment.
package allvars
