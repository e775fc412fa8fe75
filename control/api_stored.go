package control

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/healthroute/healthroute/route53"
)

// StoredSet is an API-managed record set as the state holds it: its JSON
// encoding, the state file's own. A zone of the Route 53 API may hold hundreds
// of thousands of record sets, and the Go struct of one (200 bytes, mostly
// empty fields) with its map slot took 2.7 times the size of its encoding; held
// encoded, a record set costs its encoding, its key and a slot, within twice
// its size (BenchmarkChangeBatch1000Of100k's heap/records). It is decoded where
// a command or a listing needs its fields, and only those sets are.
type StoredSet []byte

// StoreSet encodes rs.
func StoreSet(rs route53.ResourceRecordSet) StoredSet {
	b, err := json.Marshal(rs)
	if err != nil { // a struct of strings, integers and booleans
		panic("encoding a record set: " + err.Error())
	}
	return b
}

// Set decodes the record set. A StoredSet is made by StoreSet or checked by
// UnmarshalJSON, so it decodes.
func (s StoredSet) Set() route53.ResourceRecordSet {
	var rs route53.ResourceRecordSet
	if err := json.Unmarshal(s, &rs); err != nil {
		panic("decoding a stored record set: " + err.Error())
	}
	return rs
}

// has reports whether the record set may set field (an object field: present
// only when set); false means it does not, without decoding it.
func (s StoredSet) has(field string) bool { return bytes.Contains(s, []byte(`"`+field+`":`)) }

// MarshalJSON implements json.Marshaler: the encoding itself.
func (s StoredSet) MarshalJSON() ([]byte, error) { return s, nil }

// UnmarshalJSON implements json.Unmarshaler: it decodes b as a record set (an
// error for one that is not) and keeps its encoding, made again so that it is
// compact and owns its bytes.
func (s *StoredSet) UnmarshalJSON(b []byte) error {
	var rs route53.ResourceRecordSet
	if err := json.Unmarshal(b, &rs); err != nil {
		return err
	}
	*s = StoreSet(rs)
	return nil
}

// keyName returns the name a RecordKey holds, without decoding the set.
func keyName(k string) string {
	if i := strings.IndexByte(k, 0); i >= 0 {
		return k[:i]
	}
	return k
}
