package control

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/healthroute/healthroute/route53"
)

// A record set held encoded keeps the state file's format: a state written
// before (the Go struct encoded) reads into it and writes out the same, and a
// value that is no record set is refused when the state is read.
func TestStoredSetKeepsTheStateFilesFormat(t *testing.T) {
	ttl, w := int64(60), int64(10)
	rs := route53.ResourceRecordSet{Name: "www.example.org.", Type: "A", SetIdentifier: "one", Weight: &w, TTL: &ttl,
		ResourceRecords: []route53.ResourceRecord{{Value: "192.0.2.1"}}, HealthCheckId: "web"}
	before, err := json.Marshal(map[string]route53.ResourceRecordSet{RecordKey(&rs): rs})
	if err != nil {
		t.Fatal(err)
	}
	var held map[string]StoredSet
	if err := json.Unmarshal(before, &held); err != nil {
		t.Fatal(err)
	}
	after, err := json.Marshal(held)
	if err != nil || string(after) != string(before) {
		t.Fatalf("written again:\n%s\nwant\n%s (%v)", after, before, err)
	}
	got := held[RecordKey(&rs)].Set()
	if !sameRecordSet(got, rs) || !held[RecordKey(&rs)].has("HealthCheckId") || held[RecordKey(&rs)].has("AliasTarget") {
		t.Fatalf("decoded %+v, want %+v", got, rs)
	}
	if keyName(RecordKey(&rs)) != "www.example.org." {
		t.Fatalf("the key's name: %q", keyName(RecordKey(&rs)))
	}
	err = json.Unmarshal([]byte(`{"k":{"Name":"x.","Type":"A","TTL":"sixty"}}`), &held)
	if err == nil || !strings.Contains(err.Error(), "TTL") {
		t.Fatalf("a record set whose TTL is a string: %v, want refused", err)
	}
}
