package fleet

import (
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
