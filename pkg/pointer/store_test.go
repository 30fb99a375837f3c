package pointer_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

func first() pointer.Pointer {
	return pointer.Pointer{Catalog: "s3://cats/prod-v1", FormatVersion: format.V1, MigrationID: "initial", Generation: 1}
}

// sameContent compares what a pointer says, not when or in which
// generation it was written: a rollback restores content in a new write.
func sameContent(a, b pointer.Pointer) bool {
	a.UpdatedAt, b.UpdatedAt, a.Generation, b.Generation = time.Time{}, time.Time{}, 0, 0
	return a == b
}

// chain writes first() and flips it to v2 and v3 catalogs; it returns the
// pointers as written (UpdatedAt set) and their refs.
func chain(t *testing.T, store *blob.Store, url string) ([]pointer.Pointer, []pointer.Ref) {
	t.Helper()
	ctx := testenv.Context(t)
	ps := []pointer.Pointer{first()}
	ps[0].UpdatedAt = t0
	ref, err := pointer.Create(ctx, store, url, ps[0])
	if err != nil {
		t.Fatal(err)
	}
	refs := []pointer.Ref{ref}
	for i, cat := range []string{"s3://cats/prod-v2", "s3://cats/prod-v3"} {
		next := ps[i].Next(cat, format.V2, "mig-"+cat[len(cat)-2:])
		next.UpdatedAt = t0.Add(time.Duration(i+1) * time.Second)
		ref, err := pointer.Flip(ctx, store, url, next, refs[i])
		if err != nil {
			t.Fatal(err)
		}
		ps, refs = append(ps, next), append(refs, ref)
	}
	return ps, refs
}

func mustRead(t *testing.T, store *blob.Store, url string) (pointer.Pointer, pointer.Ref) {
	t.Helper()
	p, ref, err := pointer.Read(testenv.Context(t), store, url)
	if err != nil {
		t.Fatal(err)
	}
	return p, ref
}

func wantName(t *testing.T, err error, sentinel *errname.Error) *pointer.Error {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v, want %s", err, sentinel.ErrorName())
	}
	var pe *pointer.Error
	if !errors.As(err, &pe) || pe.ErrorName() != sentinel.ErrorName() {
		t.Fatalf("error %v: ErrorName is not %s", err, sentinel.ErrorName())
	}
	return pe
}

func TestCreateRead(t *testing.T) {
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	p := first()
	ref, err := pointer.Create(ctx, store, url, p)
	if err != nil {
		t.Fatal(err)
	}
	if ref.ETag == "" || ref.VersionID == "" {
		t.Fatalf("Create returned %+v: want an ETag and a version id", ref)
	}
	got, gotRef := mustRead(t, store, url)
	if gotRef != ref {
		t.Fatalf("Read ref %+v, Create wrote %+v", gotRef, ref)
	}
	if got.UpdatedAt.IsZero() {
		t.Fatal("Create did not stamp updated_at")
	}
	p.UpdatedAt = got.UpdatedAt
	if got != p {
		t.Fatalf("Read %+v, want %+v", got, p)
	}

	// A second Create refuses to replace it.
	_, err = pointer.Create(ctx, store, url, p.Next("s3://cats/other", format.V2, "m"))
	pe := wantName(t, err, pointer.ErrPointerExists)
	if pe.CurrentETag != ref.ETag {
		t.Fatalf("PointerExists names ETag %q, want %q", pe.CurrentETag, ref.ETag)
	}
	if again, _ := mustRead(t, store, url); again != got {
		t.Fatalf("pointer changed by a refused Create: %+v", again)
	}

	// An invalid pointer is not written.
	_, err = pointer.Create(ctx, store, newURL(t, versioned), pointer.Pointer{Catalog: "nowhere", FormatVersion: 2})
	wantName(t, err, pointer.ErrBadPointer)
}

func TestReadMissing(t *testing.T) {
	_, _, err := pointer.Read(testenv.Context(t), testenv.Store(t), newURL(t, versioned))
	wantName(t, err, pointer.ErrPointerMissing)
	_, _, err = pointer.Read(testenv.Context(t), testenv.Store(t), "s3://no-such-bucket/CURRENT")
	wantName(t, err, pointer.ErrPointerMissing)
}

func TestReadMalformed(t *testing.T) {
	ctx, store := testenv.Context(t), testenv.Store(t)
	for _, body := range []string{
		`{"catalog": "s3://cats/x", "format_version": 2}`, // no updated_at
		`{"catalog": "s3://cats/x", "format_version": 2, "updated_at": "2026-01-01T00:00:00Z", "extra": 1}`,
		`not json at all`,
	} {
		url := newURL(t, versioned)
		if _, err := store.Put(ctx, url, []byte(body)); err != nil {
			t.Fatal(err)
		}
		_, ref, err := pointer.Read(ctx, store, url)
		pe := wantName(t, err, pointer.ErrBadPointer)
		if !strings.Contains(pe.Error(), url) || ref.VersionID == "" || !strings.Contains(pe.Error(), ref.VersionID) {
			t.Fatalf("BadPointer error %q should name %s and the version read (%+v)", pe, url, ref)
		}
	}
}

func TestFlip(t *testing.T) {
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	p0 := first()
	ref0, err := pointer.Create(ctx, store, url, p0)
	if err != nil {
		t.Fatal(err)
	}
	cur, ref := mustRead(t, store, url)
	next := cur.Next("s3://cats/prod-v2", format.V2, "mig-1")
	ref1, err := pointer.Flip(ctx, store, url, next, ref)
	if err != nil {
		t.Fatal(err)
	}
	if ref1.ETag == ref0.ETag || ref1.VersionID == "" || ref1.VersionID == ref0.VersionID {
		t.Fatalf("Flip returned %+v after %+v: want a new version", ref1, ref0)
	}
	got, gotRef := mustRead(t, store, url)
	if gotRef != ref1 || got.Catalog != "s3://cats/prod-v2" || got.FormatVersion != format.V2 ||
		got.PreviousCatalog != p0.Catalog || got.PreviousMigrationID != "initial" || got.UpdatedAt.IsZero() {
		t.Fatalf("after flip: %+v %+v", got, gotRef)
	}

	// The old version is kept, byte for byte readable.
	body, _, err := store.GetVersion(ctx, url, ref0.VersionID)
	if err != nil {
		t.Fatal(err)
	}
	if old, err := pointer.Decode(body); err != nil || old != cur {
		t.Fatalf("old version: %+v, %v; want %+v", old, err, cur)
	}
	hist, err := pointer.History(ctx, store, url)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 2 || !hist[0].Current || hist[0].Ref != ref1 || hist[1].Ref != ref0 || hist[1].Current ||
		*hist[0].Pointer != got || *hist[1].Pointer != cur || hist[0].RestoredFrom != "" {
		t.Fatalf("history %+v", hist)
	}
}

func TestFlipStaleETag(t *testing.T) {
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	ps, refs := chain(t, store, url)
	before, beforeRef := mustRead(t, store, url)

	// A flip prepared against the first version, after two others flipped.
	_, err := pointer.Flip(ctx, store, url, ps[0].Next("s3://cats/late", format.V2, "late"), refs[0])
	pe := wantName(t, err, pointer.ErrPointerConflict)
	if pe.ExpectedETag != refs[0].ETag || pe.CurrentETag != refs[2].ETag {
		t.Fatalf("conflict names %q/%q, want %q/%q", pe.ExpectedETag, pe.CurrentETag, refs[0].ETag, refs[2].ETag)
	}
	if msg := pe.Error(); !strings.Contains(msg, refs[0].ETag) || !strings.Contains(msg, refs[2].ETag) {
		t.Fatalf("message %q should name both ETags", msg)
	}
	after, afterRef := mustRead(t, store, url)
	if after != before || afterRef != beforeRef || after != ps[2] {
		t.Fatalf("pointer changed by a refused flip: %+v %+v", after, afterRef)
	}
	if hist, err := pointer.History(ctx, store, url); err != nil || len(hist) != 3 {
		t.Fatalf("history after refused flip: %d versions, %v", len(hist), err)
	}

	// A pointer deleted since it was read is a conflict too.
	if err := store.Delete(ctx, url); err != nil {
		t.Fatal(err)
	}
	_, err = pointer.Flip(ctx, store, url, ps[2].Next("s3://cats/x", format.V2, "x"), refs[2])
	pe = wantName(t, err, pointer.ErrPointerConflict)
	if pe.CurrentETag != "" || !strings.Contains(pe.Error(), "deleted") {
		t.Fatalf("conflict on a deleted pointer: %v", pe)
	}
}

func TestRollback(t *testing.T) {
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	ps, refs := chain(t, store, url) // v1 → v2 → v3

	restored, ref, err := pointer.Rollback(ctx, store, url, pointer.RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameContent(restored, ps[1]) {
		t.Fatalf("first rollback restored %+v, want %+v", restored, ps[1])
	}
	if got, gotRef := mustRead(t, store, url); got != restored || gotRef != ref || !sameContent(got, ps[1]) {
		t.Fatalf("after rollback Read gives %+v %+v, want %+v %+v", got, gotRef, ps[1], ref)
	}
	if ref.VersionID == refs[1].VersionID {
		t.Fatal("rollback must write a new version, not remove one")
	}

	// A second rollback goes one further back, not back to v3.
	restored, _, err = pointer.Rollback(ctx, store, url, pointer.RollbackOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameContent(restored, ps[0]) {
		t.Fatalf("second rollback restored %+v, want %+v", restored, ps[0])
	}
	if got, _ := mustRead(t, store, url); !sameContent(got, ps[0]) {
		t.Fatalf("after second rollback Read gives %+v", got)
	}

	// The first pointer has nothing before it.
	_, _, err = pointer.Rollback(ctx, store, url, pointer.RollbackOptions{})
	pe := wantName(t, err, pointer.ErrNoPreviousVersion)
	if !strings.Contains(pe.Error(), "names no previous catalog") {
		t.Fatalf("unclear NoPreviousVersion: %v", pe)
	}
	if got, _ := mustRead(t, store, url); !sameContent(got, ps[0]) {
		t.Fatalf("a refused rollback changed the pointer: %+v", got)
	}

	// Every version is kept; the two rollbacks are marked as restores.
	hist, err := pointer.History(ctx, store, url)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 5 {
		t.Fatalf("history has %d versions, want 5: %+v", len(hist), hist)
	}
	wantCats := []string{"s3://cats/prod-v1", "s3://cats/prod-v2", "s3://cats/prod-v3", "s3://cats/prod-v2", "s3://cats/prod-v1"}
	wantFrom := []string{refs[0].VersionID, refs[1].VersionID, "", "", ""}
	for i, v := range hist {
		if v.Pointer == nil || v.Pointer.Catalog != wantCats[i] || v.RestoredFrom != wantFrom[i] || v.Current != (i == 0) {
			t.Fatalf("history[%d] = %+v (pointer %+v), want catalog %s restored from %q", i, v, v.Pointer, wantCats[i], wantFrom[i])
		}
	}

	// A flip after the rollbacks, then a rollback: back to v1 again.
	cur, curRef := mustRead(t, store, url)
	if _, err := pointer.Flip(ctx, store, url, cur.Next("s3://cats/prod-v4", format.V2, "mig-4"), curRef); err != nil {
		t.Fatal(err)
	}
	if restored, _, err := pointer.Rollback(ctx, store, url, pointer.RollbackOptions{}); err != nil || !sameContent(restored, ps[0]) {
		t.Fatalf("rollback of a flip after rollbacks: %+v, %v; want %+v", restored, err, ps[0])
	}
}

func TestRollbackFirstPointer(t *testing.T) {
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	if _, err := pointer.Create(ctx, store, url, first()); err != nil {
		t.Fatal(err)
	}
	_, _, err := pointer.Rollback(ctx, store, url, pointer.RollbackOptions{})
	wantName(t, err, pointer.ErrNoPreviousVersion)

	_, _, err = pointer.Rollback(ctx, store, newURL(t, versioned), pointer.RollbackOptions{})
	wantName(t, err, pointer.ErrPointerMissing)
}

func TestRollbackPreviousExpired(t *testing.T) {
	// A pointer whose previous one is not among the kept versions (written
	// by hand, or its history expired).
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	p := first().Next("s3://cats/prod-v2", format.V2, "mig-1")
	if _, err := pointer.Create(ctx, store, url, p); err != nil {
		t.Fatal(err)
	}
	_, _, err := pointer.Rollback(ctx, store, url, pointer.RollbackOptions{})
	pe := wantName(t, err, pointer.ErrNoPreviousVersion)
	if !strings.Contains(pe.Error(), "s3://cats/prod-v1") {
		t.Fatalf("error should name the previous catalog: %v", pe)
	}
}

func TestRollbackCorruptCurrent(t *testing.T) {
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	ps, _ := chain(t, store, url)
	if _, err := store.Put(ctx, url, []byte("{garbage")); err != nil {
		t.Fatal(err)
	}
	restored, _, err := pointer.Rollback(ctx, store, url, pointer.RollbackOptions{})
	if err != nil || !sameContent(restored, ps[2]) {
		t.Fatalf("rollback of a corrupt pointer: %+v, %v; want the last good one %+v", restored, err, ps[2])
	}
	hist, err := pointer.History(ctx, store, url)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 5 || hist[1].Pointer != nil || hist[1].Problem == "" {
		t.Fatalf("history should show the corrupt version with its problem: %+v", hist)
	}
}

func TestUnversionedRefused(t *testing.T) {
	ctx, store := testenv.Context(t), testenv.Store(t)
	url := newURL(t, unversioned)

	_, err := pointer.Create(ctx, store, url, first())
	pe := wantName(t, err, pointer.ErrUnversioned)
	if pe.ErrorName() != "PointerUnversioned" || !strings.Contains(pe.Error(), "rollback relies on") ||
		!strings.Contains(pe.Error(), unversioned) {
		t.Fatalf("unclear refusal: %v", pe)
	}
	if _, _, err := store.Get(ctx, url); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("a refused Create wrote the pointer: %v", err)
	}

	// A pointer put there by other means is read, but not flipped or rolled
	// back.
	body, _ := pointer.Pointer{Catalog: "s3://cats/a", FormatVersion: 1, UpdatedAt: t0}.Encode()
	info, err := store.Put(ctx, url, body)
	if err != nil {
		t.Fatal(err)
	}
	p, ref, err := pointer.Read(ctx, store, url)
	if err != nil || ref.ETag != info.ETag {
		t.Fatalf("Read on an unversioned bucket: %v", err)
	}
	_, err = pointer.Flip(ctx, store, url, p.Next("s3://cats/b", 2, "m"), ref)
	wantName(t, err, pointer.ErrUnversioned)
	_, _, err = pointer.Rollback(ctx, store, url, pointer.RollbackOptions{})
	wantName(t, err, pointer.ErrUnversioned)
	_, err = pointer.History(ctx, store, url)
	wantName(t, err, pointer.ErrUnversioned)
	if got, _ := mustRead(t, store, url); got != p {
		t.Fatalf("pointer changed: %+v", got)
	}

	// A local file keeps no versions either.
	file := "file://" + t.TempDir() + "/CURRENT"
	_, err = pointer.Create(ctx, store, file, first())
	pe = wantName(t, err, pointer.ErrUnversioned)
	if !strings.Contains(pe.Error(), "local file") {
		t.Fatalf("unclear refusal for a file: %v", pe)
	}
}

func TestFlipRetryIsIdempotent(t *testing.T) {
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	ref0, err := pointer.Create(ctx, store, url, first())
	if err != nil {
		t.Fatal(err)
	}
	next := first().Next("s3://cats/prod-v2", format.V2, "mig-1")
	next.UpdatedAt = t0
	ref1, err := pointer.Flip(ctx, store, url, next, ref0)
	if err != nil {
		t.Fatal(err)
	}
	// The step retried after its first answer was lost: same input.
	again, err := pointer.Flip(ctx, store, url, next, ref0)
	if err != nil || again != ref1 {
		t.Fatalf("retried flip: %+v, %v; want %+v", again, err, ref1)
	}
	if hist, _ := pointer.History(ctx, store, url); len(hist) != 2 {
		t.Fatalf("a retried flip wrote again: %d versions", len(hist))
	}
	// A different pointer on the stale ETag is still a conflict.
	other := next
	other.MigrationID = "mig-other"
	_, err = pointer.Flip(ctx, store, url, other, ref0)
	wantName(t, err, pointer.ErrPointerConflict)
}

// ABA: a flip prepared before a flip and its rollback must fail, although
// the rollback restored the content it expected; so must a pointer built
// from an older read whose ETag happens to match.
func TestStaleFlipAfterRollbackConflicts(t *testing.T) {
	ctx, store, url := testenv.Context(t), testenv.Store(t), newURL(t, versioned)
	ps, refs := chain(t, store, url) // v1 → v2 → v3
	staleNext := ps[2].Next("s3://cats/stale", format.V2, "mig-stale")
	staleRef := refs[2]
	// Another migration flips to v4; the operator rolls back to v3.
	if _, err := pointer.Flip(ctx, store, url, ps[2].Next("s3://cats/prod-v4", format.V2, "mig-v4"), refs[2]); err != nil {
		t.Fatal(err)
	}
	restored, _, err := pointer.Rollback(ctx, store, url, pointer.RollbackOptions{})
	if err != nil || !sameContent(restored, ps[2]) {
		t.Fatalf("rollback: %+v, %v", restored, err)
	}
	if restored.Generation <= ps[2].Generation+1 {
		t.Fatalf("rollback wrote generation %d: not past the flip's %d", restored.Generation, ps[2].Generation+1)
	}
	_, err = pointer.Flip(ctx, store, url, staleNext, staleRef)
	wantName(t, err, pointer.ErrPointerConflict)
	if got, _ := mustRead(t, store, url); !sameContent(got, ps[2]) {
		t.Fatalf("a stale flip moved the pointer to %+v", got)
	}
	// The current ETag with a pointer built from an older one: refused.
	_, curRef := mustRead(t, store, url)
	_, err = pointer.Flip(ctx, store, url, staleNext, curRef)
	pe := wantName(t, err, pointer.ErrPointerConflict)
	if !strings.Contains(pe.Error(), "generation") {
		t.Fatalf("conflict does not say why: %v", pe)
	}
}

// ReadIfChanged, a watcher's conditional read: ErrNotModified while the
// pointer stays at the ETag it was read at, the new pointer after a flip,
// and Read's named errors for a missing one.
func TestReadIfChanged(t *testing.T) {
	ctx, store := testenv.Context(t), testenv.Store(t)
	url := newURL(t, versioned)
	if _, _, err := pointer.ReadIfChanged(ctx, store, url, ""); !errors.Is(err, pointer.ErrPointerMissing) {
		t.Fatalf("no pointer: %v, want PointerMissing", err)
	}
	ref, err := pointer.Create(ctx, store, url, first())
	if err != nil {
		t.Fatal(err)
	}
	p, got, err := pointer.ReadIfChanged(ctx, store, url, "")
	if err != nil || !sameContent(p, first()) || got.ETag != ref.ETag {
		t.Fatalf("first read: %+v %+v %v", p, got, err)
	}
	if _, _, err := pointer.ReadIfChanged(ctx, store, url, ref.ETag); !errors.Is(err, pointer.ErrNotModified) {
		t.Fatalf("unchanged: %v, want ErrNotModified", err)
	}
	next := first().Next("s3://cats/prod-v2", format.V2, "m-1")
	flipped, err := pointer.Flip(ctx, store, url, next, ref)
	if err != nil {
		t.Fatal(err)
	}
	p, got, err = pointer.ReadIfChanged(ctx, store, url, ref.ETag)
	if err != nil || p.Catalog != "s3://cats/prod-v2" || p.FormatVersion != format.V2 || got.ETag != flipped.ETag {
		t.Fatalf("after the flip: %+v %+v %v", p, got, err)
	}
}
