package routing

import "net/netip"

// scopeTrie is a binary trie of the prefixes of a PrefixIndex, for ECS scopes
// (RFC 7871 section 7.2.1): the shortest prefix of a client's address within which
// every address gets the same answer. Node 0 is the root (the empty prefix).
type scopeTrie struct {
	nodes []trieNode
}

type trieNode struct {
	child [2]int32 // 0: none (the root is never a child)
	max   uint8    // the longest stored prefix in this subtree
	end   bool     // a stored prefix ends here
}

// addrBits returns a's bytes and its bit length.
func addrBits(a netip.Addr) ([16]byte, int) {
	if a.Is4() {
		var b [16]byte
		a4 := a.As4()
		copy(b[:], a4[:])
		return b, 32
	}
	return a.As16(), 128
}

func bitAt(b *[16]byte, i int) int { return int(b[i/8]>>(7-i%8)) & 1 }

// insert stores p (masked).
func (t *scopeTrie) insert(p netip.Prefix) {
	if len(t.nodes) == 0 {
		t.nodes = append(t.nodes, trieNode{})
	}
	b, _ := addrBits(p.Addr())
	bits := uint8(p.Bits())
	cur := int32(0)
	t.nodes[0].max = max(t.nodes[0].max, bits)
	for d := 0; d < p.Bits(); d++ {
		i := bitAt(&b, d)
		next := t.nodes[cur].child[i]
		if next == 0 {
			next = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{})
			t.nodes[cur].child[i] = next
		}
		cur = next
		t.nodes[cur].max = max(t.nodes[cur].max, bits)
	}
	t.nodes[cur].end = true
}

// scope returns the shortest prefix length S of client's address such that every
// stored prefix either contains client/S or lies outside it, except that a stored
// prefix longer than client and inside it raises S to its own length: the answer
// then depends on bits the client did not send, and S is longer than the source
// prefix. Within client/S the longest-match lookup gives every address the same
// stored prefix (or none). It walks at most client.Bits() nodes and does not allocate.
func (t *scopeTrie) scope(client netip.Prefix) uint8 {
	if len(t.nodes) == 0 || !client.IsValid() {
		return 0
	}
	b, _ := addrBits(client.Addr())
	var s uint8
	cur := int32(0)
	for d := 0; d < client.Bits(); d++ {
		n := &t.nodes[cur]
		if n.end {
			s = max(s, uint8(d)) // a stored prefix containing the client
		}
		i := bitAt(&b, d)
		if n.child[1-i] != 0 {
			s = max(s, uint8(d+1)) // prefixes that part from the client at bit d
		}
		if n.child[i] == 0 {
			return s
		}
		cur = n.child[i]
	}
	return max(s, t.nodes[cur].max) // prefixes the client's prefix holds, and itself
}
