// Package logreport holds what the transparency log reports about itself
// to the API: its part of /health (Health, one Witness each) and its newest
// checkpoint for the overview (Status). The log's server (package
// translog) makes them and the API (package app) answers them, without
// either importing the other.
package logreport
