//go:build !unix

package fleet

// msgTrunc is the flag of a datagram longer than the buffer it was read into; where
// the system does not say, a datagram as long as the buffer is refused as a member's
// could not be (memberlist sends at most 1400 bytes).
const msgTrunc = 0
