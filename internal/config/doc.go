// Package config provides the common configuration of attestd processes,
// and the means every package reads the environment with: Env, which
// collects every bad value so a process names all of them at once, and Var,
// the entry of a package's list of the variables it reads. A test holds the
// configuration tables of docs/configuration.md to those lists.
package config
