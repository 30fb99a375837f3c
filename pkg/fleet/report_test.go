package fleet

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The notice names every pointer, those that did not get there first, and
// stays small whatever the fleet's size: past its bound it says how many
// more lines the record holds.
func TestTextOrdersAndBounds(t *testing.T) {
	r := Run{ID: "f-1", Kind: ActionMigrate, Sources: []string{"s3://b/t/"}, Started: time.Unix(0, 0)}
	for i := range 5000 {
		l := Line{Pointer: fmt.Sprintf("s3://b/t/%04d/CURRENT", i), State: Migrated, RunID: "m-x", Seconds: 1}
		if i == 4321 {
			l.State, l.ErrorName, l.Error = Refused, "FormatVersionMismatch", "found 99"
		}
		r.Lines = append(r.Lines, l)
	}
	r.count()
	txt := r.Text()
	if len(txt) > maxText+1024 {
		t.Fatalf("the notice is %d bytes, over its bound", len(txt))
	}
	first := strings.SplitN(txt, "\n\n", 2)[1]
	if !strings.HasPrefix(first, "s3://b/t/4321/CURRENT: refused, run m-x") || !strings.Contains(first, "FormatVersionMismatch: found 99") {
		t.Fatalf("the refused pointer is not first:\n%.300s", first)
	}
	if !strings.Contains(txt, "more pointers: the record has them") || !strings.Contains(txt, "record: s3://b/t.fleet/") {
		t.Fatalf("the notice does not say where the rest is:\n%.300s", txt)
	}
	if !strings.Contains(txt, "5000 pointers: 4999 migrated, 1 refused") {
		t.Fatalf("totals: %.200s", txt)
	}
}

// An item is its pointer alone (the definition makes each child's input
// from the run's Child), so that FleetList's output, which the fleet
// definition carries in its state (256 KiB at most on AWS), holds a fleet
// of 4 000 pointers with URLs of 45 characters.
func TestListedHoldsFourThousandPointers(t *testing.T) {
	l := Listed{FleetRun: "f-20261204T220000Z-0123abcd", Source: "s3://bucket/tenants/", Action: ActionMigrate,
		Child: map[string]any{"trigger": Trigger("f-20261204T220000Z-0123abcd"), "target_version": 2, "shards": 8}, Concurrency: 40}
	for i := range 4000 {
		it := Item{Pointer: fmt.Sprintf("s3://rocklake-catalogs/tenants/t%06d/CURRENT", i)}
		if i == 0 {
			l.Canary = append(l.Canary, it)
		} else {
			l.Rest = append(l.Rest, it)
		}
	}
	b, err := json.Marshal(struct {
		List Listed `json:"list"`
	}{l})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 256<<10 {
		t.Fatalf("the state of a fleet run of 4000 pointers is %d bytes, over Step Functions' 256 KiB", len(b))
	}
	t.Logf("4000 pointers: %d bytes of state", len(b))
}
