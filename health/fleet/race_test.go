//go:build race

package fleet

// raceDetector: the race detector slows the simulation's own bookkeeping (20 members
// × every check probed and decided each poll) several times over.
const raceDetector = true
