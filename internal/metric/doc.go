// Package metric is the one way attestd registers Prometheus collectors.
// Two instances of a component in one process (two indexers in a test, say)
// share their series instead of failing to register.
package metric
