//go:build !race

package chring

const raceEnabled = false
