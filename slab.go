package healthroute

// slab hands out values of T carved from arrays it allocates a chunk at a time, for
// the structs a large configuration holds one or a few of per name: each value then
// costs its size, not the allocator's next size class, and a chunk is one allocation
// instead of hundreds. The chunks grow with use, so a small configuration wastes at
// most a few values. A chunk lives as long as any value carved from it: use it for
// values that live and die together (one parse, one plan). Not safe for concurrent
// use.
type slab[T any] struct {
	free []T // the rest of the current chunk
	size int // the length of the next chunk
}

// slabMin and slabMax bound a chunk's length: the first is small, each doubles the
// last, up to slabMax values.
const slabMin, slabMax = 8, 1024

// one returns a zero value of T.
func (s *slab[T]) one() *T {
	return &s.take(1)[0]
}

// take returns k zero values of T, in one array whose capacity is k: appending to it
// copies rather than runs into its neighbours.
func (s *slab[T]) take(k int) []T {
	if k > len(s.free) {
		if k > slabMax/8 {
			return make([]T, k) // its own array: a chunk would waste too much of itself
		}
		s.size = min(max(2*s.size, slabMin, k), slabMax)
		s.free = make([]T, s.size) // the last chunk's rest, under k values, is wasted
	}
	v := s.free[:k:k]
	s.free = s.free[k:]
	return v
}
