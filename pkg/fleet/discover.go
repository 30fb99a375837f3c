package fleet

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// Member is one pointer of a fleet, as discovery read it.
type Member struct {
	Pointer string         `json:"pointer"`
	Catalog string         `json:"catalog,omitempty"`
	Format  format.Version `json:"format_version,omitempty"`
	// Unreadable says why a pointer the operator listed by name is not
	// one (it is still a member: the report names it), and ErrorName its
	// error's name.
	Unreadable string `json:"unreadable,omitempty"`
	ErrorName  string `json:"error_name,omitempty"`
}

// Fleet is what discovery found: the pointers, in URL order, and how many
// objects under the prefixes were not pointers (ignored).
type Fleet struct {
	Sources []string `json:"sources"`
	Members []Member `json:"members"`
	Ignored int      `json:"ignored"`
}

// IsPrefix reports whether source names a prefix (it ends in "/"), whose
// every pointer object is a member; any other source is a list: an object
// or file naming one pointer URL per line.
func IsPrefix(source string) bool { return strings.HasSuffix(source, "/") }

// Discover finds the fleet's pointers in sources. Under a prefix a pointer
// is recognised by its content (pointer.Decode: strict, so a lock, a run
// record or a claim beside a pointer is not one), never by its name;
// objects larger than a pointer can be are not read. In a list, each line
// is a pointer URL ("#" starts a comment); one that does not read as a
// pointer is a member with Unreadable set, for the report to name. A
// pointer found twice is one member.
func Discover(ctx context.Context, store *blob.Store, sources []string) (Fleet, error) {
	f := Fleet{Sources: sources}
	if len(sources) == 0 {
		return f, fmt.Errorf("%w: no source of pointers given", ErrNoPointers)
	}
	seen := map[string]bool{}
	add := func(m Member) {
		if !seen[m.Pointer] {
			seen[m.Pointer] = true
			f.Members = append(f.Members, m)
		}
	}
	for _, src := range sources {
		var err error
		if IsPrefix(src) {
			err = underPrefix(ctx, store, src, add, &f.Ignored)
		} else {
			err = listed(ctx, store, src, add)
		}
		if err != nil {
			return f, err
		}
	}
	sort.Slice(f.Members, func(i, j int) bool { return f.Members[i].Pointer < f.Members[j].Pointer })
	if len(f.Members) == 0 {
		return f, fmt.Errorf("%w: %s hold no pointer (%d other objects)", ErrNoPointers, strings.Join(sources, ", "), f.Ignored)
	}
	return f, nil
}

// underPrefix adds every pointer under prefix. A run's staging beside a
// pointer (layout.DefaultStaging) holds objects whose content is a
// pointer too (Flip's intent: the pointer it is about to write): those
// are the run's, not members, and are counted with the other objects.
func underPrefix(ctx context.Context, store *blob.Store, prefix string, add func(Member), ignored *int) error {
	infos, err := store.List(ctx, prefix)
	if err != nil {
		return fmt.Errorf("fleet: list %s: %w", prefix, err)
	}
	var found []Member
	for _, in := range infos {
		if in.Size > pointer.MaxSize || in.Size == 0 {
			*ignored++
			continue
		}
		b, _, err := store.Get(ctx, in.URL)
		if err != nil {
			return fmt.Errorf("fleet: read %s: %w", in.URL, err)
		}
		p, err := pointer.Decode(b)
		if err != nil {
			*ignored++
			continue
		}
		found = append(found, Member{Pointer: in.URL, Catalog: p.Catalog, Format: p.FormatVersion})
	}
	var staging []string
	for _, m := range found {
		if s := layout.DefaultStaging(m.Pointer); s != "" {
			staging = append(staging, s+"/")
		}
	}
	for _, m := range found {
		if slices.ContainsFunc(staging, func(s string) bool { return strings.HasPrefix(m.Pointer, s) }) {
			*ignored++
			continue
		}
		add(m)
	}
	return nil
}

func listed(ctx context.Context, store *blob.Store, list string, add func(Member)) error {
	b, _, err := store.Get(ctx, list)
	if err != nil {
		return fmt.Errorf("fleet: read the list %s: %w", list, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		m := Member{Pointer: line}
		if p, _, err := pointer.Read(ctx, store, line); err != nil {
			m.Unreadable, m.ErrorName = err.Error(), errname.Of(err)
		} else {
			m.Catalog, m.Format = p.Catalog, p.FormatVersion
		}
		add(m)
	}
	return sc.Err()
}
