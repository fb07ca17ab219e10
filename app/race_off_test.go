//go:build !race

package app_test

// raceDetector: the race detector is off.
const raceDetector = false
