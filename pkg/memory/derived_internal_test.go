package memory

import (
	"reflect"
	"testing"
)

// TestDeriveReuses: deriving a digest from the values of the one it
// replaced gives what deriving it afresh gives.
func TestDeriveReuses(t *testing.T) {
	m := &Manager{tokens: estimator{}}
	old := Digest{Summary: "The user likes tea.\nThey live in Lyon.", Through: 4,
		Entities: []EntityFacts{{Name: "user", Facts: []string{"likes tea", "lives in Lyon"}}},
		Triples:  []Triple{{Subject: "user", Relation: "likes", Object: "tea", Turn: 2}}}
	d := Digest{Summary: "They live in Lyon.\nThe user moved to Paris.", Through: 8,
		Entities: []EntityFacts{{Name: "user", Facts: []string{"lives in Lyon", "moved to Paris"}}, {Name: "Ana", Facts: []string{"likes tea"}}},
		Triples: []Triple{{Subject: "user", Relation: "moved to", Object: "Paris", Turn: 7},
			{Subject: "user", Relation: "likes", Object: "tea", Turn: 2}}}
	if got, want := m.derive(d, m.derive(old, nil)), m.derive(d, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("derived from the previous digest's values:\n%+v\nafresh:\n%+v", got, want)
	}
}
