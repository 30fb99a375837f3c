package fleet

import (
	"context"
	"errors"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// PointerNow is where one pointer stands now, beside its line in the
// fleet's latest run.
type PointerNow struct {
	Line
	// Catalog and Format are what the pointer names now.
	Catalog string         `json:"catalog_now,omitempty"`
	Format  format.Version `json:"format_now,omitempty"`
	// LockedBy is the run holding its lock now ("" when free).
	LockedBy string `json:"locked_by,omitempty"`
	// Unreadable says why the pointer cannot be read now.
	Unreadable string `json:"unreadable,omitempty"`
}

// Status is where the fleet stands: its latest run (nil when it has none)
// and every pointer discovered now, with its line in that run.
type Status struct {
	Run      *Run         `json:"run,omitempty"`
	Pointers []PointerNow `json:"pointers"`
	Ignored  int          `json:"ignored"`
	// AtFormat counts the pointers by the format they name now.
	AtFormat map[format.Version]int `json:"at_format"`
}

// StatusOf reads the fleet in sources and its latest run record.
func StatusOf(ctx context.Context, store *blob.Store, sources []string) (Status, error) {
	f, err := Discover(ctx, store, sources)
	if err != nil {
		return Status{}, err
	}
	st := Status{Ignored: f.Ignored, AtFormat: map[format.Version]int{}}
	lines := map[string]Line{}
	if r, err := FindRun(ctx, store, sources[0], "", ""); err == nil {
		st.Run = &r
		for _, l := range r.Lines {
			lines[l.Pointer] = l
		}
	} else if !errors.Is(err, ErrNoRun) {
		return st, err
	}
	now := time.Now()
	for _, m := range f.Members {
		pn := PointerNow{Line: lines[m.Pointer]}
		pn.Pointer = m.Pointer
		if p, _, err := pointer.Read(ctx, store, m.Pointer); err != nil {
			pn.Unreadable = err.Error()
		} else {
			pn.Catalog, pn.Format = p.Catalog, p.FormatVersion
			st.AtFormat[p.FormatVersion]++
		}
		id, unknown, _ := lock.Holder(ctx, store, m.Pointer, now)
		pn.LockedBy = id
		if unknown != "" {
			pn.LockedBy = "(" + unknown + ")"
		}
		st.Pointers = append(st.Pointers, pn)
	}
	return st, nil
}
