//go:build race

package app_test

// raceDetector: the race detector is on (sync.Pool then drops items on
// purpose, so allocation counts mean nothing).
const raceDetector = true
