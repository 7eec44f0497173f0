//go:build race

package chring

// raceEnabled: the race detector's sync.Pool drops items at random, so
// pooled paths allocate now and then.
const raceEnabled = true
