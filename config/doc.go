// Package config reads attestd's configuration from the environment. Every
// variable is listed in Vars (the README's configuration table is generated
// from the same names) and parsed with a clear error naming the variable.
package config
