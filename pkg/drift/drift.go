package drift

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Kind is a finding's stable name.
type Kind string

// The kinds of finding (see the package doc).
const (
	KindPointerMissing          Kind = "PointerMissing"
	KindBadPointer              Kind = "BadPointer"
	KindDanglingPointer         Kind = "DanglingPointer"
	KindMissingVersionKey       Kind = "MissingVersionKey"
	KindBadVersionKey           Kind = "BadVersionKey"
	KindVersionMismatch         Kind = "VersionMismatch"
	KindPointerVersionDisagrees Kind = "PointerVersionDisagrees"
	KindLeftoverCheckpoint      Kind = "LeftoverCheckpoint"
	KindLeftoverStaging         Kind = "LeftoverStaging"
	KindOrphanCheckpoint        Kind = "OrphanCheckpoint"
	KindOrphanStaging           Kind = "OrphanStaging"
	KindUnclaimedTarget         Kind = "UnclaimedTarget"
	KindWayBackKept             Kind = "WayBackKept"
	KindReleasedWayBack         Kind = "ReleasedWayBack"
	KindOrphanReplica           Kind = "OrphanReplica"
	KindOrphanReaderCopy        Kind = "OrphanReaderCopy"
	KindUndecided               Kind = "Undecided"
)

// Removable reports whether findings of kind k name something left over
// that cleanup may delete: a checkpoint, a staging prefix or a target.
func (k Kind) Removable() bool {
	switch k {
	case KindLeftoverCheckpoint, KindOrphanCheckpoint, KindLeftoverStaging, KindOrphanStaging, KindUnclaimedTarget, KindReleasedWayBack,
		KindOrphanReplica, KindOrphanReaderCopy:
		return true
	}
	return false
}

// Defaults of Options.
const (
	DefaultCheckpointMaxAge = 24 * time.Hour
	DefaultStagingMaxAge    = 24 * time.Hour
)

// Options say what to check.
type Options struct {
	// Pointer is the pointer object's URL (required).
	Pointer string
	// Expect is the catalog format the deployed release expects (required).
	// It need not be one this binary supports: a release newer than the
	// checker is still compared against.
	Expect format.Version
	// Staging is the staging root of the migrations (e.g.
	// s3://bucket/staging); empty skips the staging check.
	Staging string
	// CheckpointMaxAge and StagingMaxAge: older checkpoints and staging are
	// leftovers. Zero means the defaults.
	CheckpointMaxAge time.Duration
	StagingMaxAge    time.Duration
	// Active is the migration holding the pointer's lock, as the caller
	// (pkg/workflow, which owns the lock) read it; "" when none does. Its
	// checkpoint, staging and target are in use: never orphans.
	Active string
	// ActiveUnknown, when set, says why the lock could not be read: the
	// check then reports Undecided instead of any orphan.
	ActiveUnknown string
	// Store tunes SlateDB's object-store access.
	Store slatedb.Options
	// Now is the time ages are measured from; zero means time.Now().
	Now time.Time
}

// Finding is one thing found wrong. Fields other than Kind and Message are
// set where they apply.
type Finding struct {
	Kind    Kind   `json:"kind"`
	Message string `json:"message"`

	Catalog  string         `json:"catalog,omitempty"`
	Found    format.Version `json:"found_version,omitempty"`
	Expected format.Version `json:"expected_version,omitempty"`

	CheckpointID   string     `json:"checkpoint_id,omitempty"`
	CheckpointName string     `json:"checkpoint_name,omitempty"`
	CreatedAt      *time.Time `json:"created_at,omitempty"`
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`

	Prefix      string     `json:"prefix,omitempty"`
	MigrationID string     `json:"migration_id,omitempty"`
	Objects     int        `json:"objects,omitempty"`
	Bytes       int64      `json:"bytes,omitempty"`
	LastWritten *time.Time `json:"last_written,omitempty"`

	// AgeSeconds is how old the checkpoint or the newest staging object is.
	AgeSeconds int64 `json:"age_seconds,omitempty"`
}

// Report is the outcome of one check.
type Report struct {
	Pointer          string           `json:"pointer"`
	PointerVersionID string           `json:"pointer_version_id,omitempty"`
	Current          *pointer.Pointer `json:"current,omitempty"` // the pointer's content, if valid
	Catalog          string           `json:"catalog,omitempty"`
	// FoundVersion is the catalog's format; 0 when it could not be read.
	FoundVersion format.Version `json:"found_version"`
	Expected     format.Version `json:"expected_version"`
	// ActiveMigration holds the pointer's lock (Options.Active).
	ActiveMigration string    `json:"active_migration,omitempty"`
	Findings        []Finding `json:"findings"`
	// FindingsOmitted counts findings left out to keep the report small
	// (pkg/notify trims to SNS's message size); 0 from Check.
	FindingsOmitted int       `json:"findings_omitted,omitempty"`
	Healthy         bool      `json:"healthy"`
	CheckedAt       time.Time `json:"checked_at"`
}

// Find runs the drift check. It returns an error only when it could not
// look; what it found is in the Report.
func Find(ctx context.Context, store *blob.Store, opts Options) (Report, error) {
	if opts.Pointer == "" {
		return Report{}, errors.New("drift: no pointer URL")
	}
	if opts.Expect == 0 {
		return Report{}, errors.New("drift: no expected format version")
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	c := checker{store: store, opts: opts, now: now,
		r: Report{Pointer: opts.Pointer, Expected: opts.Expect, ActiveMigration: opts.Active, Findings: []Finding{}, CheckedAt: now}}
	if err := c.run(ctx); err != nil {
		return Report{}, err
	}
	c.r.Healthy = len(c.r.Findings) == 0
	return c.r, nil
}

type checker struct {
	store *blob.Store
	opts  Options
	now   time.Time
	r     Report
	// decided: the pointer, its history and the lock were read, so what
	// is in use is known and orphans can be told from it.
	decided bool
	// replaced is the migration of the pointer version the current one
	// replaced: after a rollback, the migration rolled back, whose staging
	// is its audit trail.
	replaced string
	// pinned names the flip pins the current pointer version keeps for a
	// rollback (layout.FlipCheckpoint of its migration; "" when none).
	pinned string
	// keptWayBacks are the in-place migrations whose way back is kept
	// (claimed, not released), read once: their flip pins stay, since
	// deleting one would move the catalog a restore holds to the batch's
	// state.
	keptWayBacks map[string]bool
}

// wayBackKept reports whether migration id's way back is kept.
func (c *checker) wayBackKept(ctx context.Context, id string) (bool, error) {
	if c.keptWayBacks == nil {
		entries, err := claim.List(ctx, c.store, c.opts.Pointer)
		if err != nil {
			return false, fmt.Errorf("drift: %w", err)
		}
		c.keptWayBacks = map[string]bool{}
		for _, e := range entries {
			if e.ReadError == "" && e.Claim.Kind == claim.KindWayBack && e.Claim.Released == nil {
				c.keptWayBacks[e.Claim.MigrationID] = true
			}
		}
	}
	return c.keptWayBacks[id], nil
}

func (c *checker) add(f Finding) { c.r.Findings = append(c.r.Findings, f) }

// undecided reports that the check cannot tell orphans from what is in use.
func (c *checker) undecided(why string) {
	c.decided = false
	c.add(Finding{Kind: KindUndecided,
		Message: why + ": the check cannot tell what is left over from what is in use, so it reports no orphans and cleanup removes nothing"})
}

func (c *checker) run(ctx context.Context) error {
	p, ref, err := pointer.Read(ctx, c.store, c.opts.Pointer)
	switch {
	case errors.Is(err, pointer.ErrPointerMissing):
		c.add(Finding{Kind: KindPointerMissing, Message: fmt.Sprintf("there is no pointer at %s: RockLake has no catalog to open", c.opts.Pointer)})
		return c.staging(ctx, nil)
	case errors.Is(err, pointer.ErrBadPointer):
		c.r.PointerVersionID = ref.VersionID
		c.add(Finding{Kind: KindBadPointer, Message: err.Error()})
		return c.staging(ctx, nil)
	case err != nil:
		return fmt.Errorf("drift: %w", err)
	}
	c.r.PointerVersionID, c.r.Current, c.r.Catalog = ref.VersionID, &p, p.Catalog
	c.decided = true
	if p.FlipPoint != nil {
		c.pinned = layout.FlipCheckpoint(p.MigrationID)
	}
	if c.opts.ActiveUnknown != "" {
		c.undecided("the migration lock cannot be read (" + c.opts.ActiveUnknown + ")")
	}
	named, err := c.named(ctx, p)
	if err != nil {
		return err
	}

	exists, err := c.catalog(ctx, p)
	if err != nil {
		return err
	}
	for i, url := range named {
		if i == 0 && !exists {
			continue
		}
		if i > 0 && !c.decided {
			break
		}
		if err := c.checkpoints(ctx, url, i == 0); err != nil {
			return err
		}
	}
	if err := c.staging(ctx, &p); err != nil {
		return err
	}
	return c.claims(ctx, named)
}

// named lists every catalog the pointer ever named (each version's catalog,
// previous catalog and in-place way back), without a trailing slash, the
// current one first.
// If the history cannot be read, that is an Undecided finding and only the
// current catalog is named.
func (c *checker) named(ctx context.Context, p pointer.Pointer) ([]string, error) {
	named := []string{strings.TrimSuffix(p.Catalog, "/")}
	hist, err := pointer.History(ctx, c.store, c.opts.Pointer)
	if ctx.Err() != nil {
		return nil, fmt.Errorf("drift: pointer history: %w", ctx.Err())
	}
	if err != nil {
		c.undecided(fmt.Sprintf("the pointer's history cannot be read (%v)", err))
		return named, nil
	}
	for _, v := range hist {
		if v.DeleteMarker {
			continue
		}
		if v.Pointer != nil && !v.Current && c.replaced == "" {
			c.replaced = v.Pointer.MigrationID // newest first
		}
		if v.Pointer == nil {
			c.undecided(fmt.Sprintf("version %s of the pointer is not a valid pointer (%s), so what it named is unknown", v.VersionID, v.Problem))
			continue
		}
		wb, _ := layout.WayBackOf(*v.Pointer)
		for _, u := range []string{v.Pointer.Catalog, v.Pointer.PreviousCatalog, wb} {
			if u = strings.TrimSuffix(u, "/"); u != "" && !slices.Contains(named, u) {
				named = append(named, u)
			}
		}
	}
	return named, nil
}

// catalog opens the catalog read-only and records its version; it reports
// whether a database exists there.
func (c *checker) catalog(ctx context.Context, p pointer.Pointer) (bool, error) {
	cat, err := catalog.Open(ctx, p.Catalog, catalog.Options{Store: c.opts.Store})
	var mismatch *format.FormatVersionMismatch
	switch {
	case err == nil:
		c.r.FoundVersion = cat.Version()
		if cerr := cat.Close(); cerr != nil {
			return false, fmt.Errorf("drift: close %s: %w", p.Catalog, cerr)
		}
	case errors.Is(err, catalog.ErrNoCatalog), errors.Is(err, slatedb.ErrNoSuchBucket):
		c.add(Finding{Kind: KindDanglingPointer, Catalog: p.Catalog,
			Message: fmt.Sprintf("the pointer names %s, where there is no catalog (no SlateDB database): RockLake cannot start; restore the catalog or roll the pointer back", p.Catalog)})
		return false, nil
	case errors.As(err, &mismatch) && mismatch.Missing:
		c.add(Finding{Kind: KindMissingVersionKey, Catalog: p.Catalog, Expected: c.opts.Expect,
			Message: fmt.Sprintf("catalog %s has no catalog-format-version key: it is uninitialized (an import that never finished?) and no binary opens it", p.Catalog)})
		return true, nil
	case errors.As(err, &mismatch):
		// A format this binary does not know: still a version to compare.
		c.r.FoundVersion = format.Version(mismatch.Found)
	case isStoreError(err):
		return false, fmt.Errorf("drift: open %s: %w", p.Catalog, err)
	default:
		c.add(Finding{Kind: KindBadVersionKey, Catalog: p.Catalog,
			Message: fmt.Sprintf("catalog %s: the catalog-format-version key cannot be read: %v", p.Catalog, err)})
		return true, nil
	}
	found := c.r.FoundVersion
	if found != c.opts.Expect {
		c.add(Finding{Kind: KindVersionMismatch, Catalog: p.Catalog, Found: found, Expected: c.opts.Expect,
			Message: fmt.Sprintf("catalog %s is in format %s but the deployed release expects %s: RockLake refuses to open it (FormatVersionMismatch); migrate it (rocklake-migrate migrate --pointer %s --to %s) or roll the release back",
				p.Catalog, found, c.opts.Expect, c.opts.Pointer, c.opts.Expect)})
	}
	if p.FormatVersion != found {
		c.add(Finding{Kind: KindPointerVersionDisagrees, Catalog: p.Catalog, Found: found, Expected: p.FormatVersion,
			Message: fmt.Sprintf("the pointer says catalog %s is in format %s, but the catalog's catalog-format-version is %s: the pointer was written by hand or the catalog changed under it",
				p.Catalog, p.FormatVersion, found)})
	}
	return true, nil
}

// isStoreError tells failures to reach the catalog (which make the check
// fail) from a version key that cannot be decoded (a finding).
func isStoreError(err error) bool {
	var se *slatedb.Error
	return errors.As(err, &se) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// checkpoints reports this tool's checkpoints on catalog url: on the current
// catalog, those older than CheckpointMaxAge (LeftoverCheckpoint, as
// always); on any catalog, those of a migration other than the active one
// (OrphanCheckpoint). Expired ones are left to garbage collection, and a
// by-hand export's to its own expiry (it may be running).
func (c *checker) checkpoints(ctx context.Context, url string, current bool) error {
	maxAge := cmp.Or(c.opts.CheckpointMaxAge, DefaultCheckpointMaxAge)
	cps, err := slatedb.ListCheckpoints(ctx, url, c.opts.Store)
	if !current && (errors.Is(err, slatedb.ErrNoDatabase) || errors.Is(err, slatedb.ErrNoSuchBucket)) {
		return nil // a catalog deleted since: nothing left on it
	}
	if err != nil {
		return fmt.Errorf("drift: list checkpoints of %s: %w", url, err)
	}
	slices.SortFunc(cps, func(a, b slatedb.Checkpoint) int {
		return cmp.Or(a.CreateTime.Compare(b.CreateTime), strings.Compare(a.ID, b.ID))
	})
	for _, cp := range cps {
		owner, ours := layout.CheckpointOwner(cp.Name)
		if !ours {
			continue // someone else's
		}
		if cp.ExpireTime != nil && !cp.ExpireTime.After(c.now) {
			continue // expired: garbage collection removes it
		}
		if c.pinned != "" && cp.Name == c.pinned {
			continue // the flip's pin, kept for a rollback while the pointer is that flip's
		}
		if strings.HasPrefix(cp.Name, layout.FlipCheckpoint("")) {
			kept, err := c.wayBackKept(ctx, owner)
			if err != nil {
				return err
			}
			if kept {
				continue // an in-place run's pin: part of the state its way back's restore holds the catalog to
			}
		}
		age := c.now.Sub(cp.CreateTime)
		created := cp.CreateTime.UTC()
		f := Finding{Catalog: url, CheckpointID: cp.ID, CheckpointName: cp.Name,
			CreatedAt: &created, AgeSeconds: int64(age / time.Second)}
		expiry := "never expires"
		if cp.ExpireTime != nil {
			e := cp.ExpireTime.UTC()
			f.ExpiresAt = &e
			expiry = "expires " + e.Format(time.RFC3339)
		}
		switch {
		case current && age > maxAge:
			f.Kind = KindLeftoverCheckpoint
			f.Message = fmt.Sprintf("catalog %s has checkpoint %s (%q), made %s ago, older than %s and %s: a migration left it behind; it keeps old files from garbage collection (delete it once no run uses it)",
				url, cp.ID, cp.Name, roundAge(age), maxAge, expiry)
		case !c.decided || cp.Name == layout.ExportCheckpoint || c.opts.Active != "" && layout.OfRun(cp.Name, c.opts.Active) ||
			c.opts.Active != "" && cp.Name == layout.InPlaceCheckpoint(c.opts.Active):
			continue
		default:
			f.Kind, f.MigrationID = KindOrphanCheckpoint, owner
			f.Message = fmt.Sprintf("catalog %s, which the pointer names or named, has checkpoint %s (%q), made %s ago and %s, of a migration that is not running (the lock names %s): no run uses it; it keeps old files from garbage collection",
				url, cp.ID, cp.Name, roundAge(age), expiry, orNone(c.opts.Active))
		}
		c.add(f)
	}
	return nil
}

// rollbackRun is the run that wrote p when a rollback did ("" otherwise):
// its staging is the rollback's audit trail, as the rolled-back
// migration's is.
func rollbackRun(p *pointer.Pointer) string {
	if p.RolledBack == nil {
		return ""
	}
	return p.RolledBack.By
}

func orNone(id string) string {
	if id == "" {
		return "none"
	}
	return id
}

// staging reports the migrations' staging directories, <staging>/<id>/,
// except those of the current and previous pointer's migrations and of the
// pointer version the current one replaced (a rolled-back run's) and of the
// rollback run that wrote the current one (p nil:
// none is excepted) and never decisions/: untouched for longer than
// StagingMaxAge, LeftoverStaging (as always); younger, and not the active
// migration's, OrphanStaging.
func (c *checker) staging(ctx context.Context, p *pointer.Pointer) error {
	if c.opts.Staging == "" {
		return nil
	}
	maxAge := cmp.Or(c.opts.StagingMaxAge, DefaultStagingMaxAge)
	root := strings.TrimSuffix(c.opts.Staging, "/") + "/"
	dirs, err := c.store.ListDirs(ctx, root)
	if err != nil {
		return fmt.Errorf("drift: list staging %s: %w", root, err)
	}
	keep := map[string]bool{layout.DecisionsDir: true}
	if p != nil {
		for _, id := range []string{p.MigrationID, p.PreviousMigrationID, c.replaced, rollbackRun(p)} {
			if id != "" {
				keep[id] = true
			}
		}
	}
	for _, d := range dirs {
		id := path.Base(strings.TrimSuffix(d, "/"))
		if keep[id] {
			continue
		}
		st := layout.Staging{Root: c.opts.Staging, MigrationID: id}
		prefix := st.Prefix()
		owner, err := c.stagingOwner(ctx, st)
		if err != nil {
			return err
		}
		if owner != "" && owner != c.opts.Pointer {
			continue // another pointer's run (staging shared by pointers beside each other)
		}
		g, err := c.group(ctx, prefix)
		if err != nil {
			return err
		}
		if g.objects == 0 {
			continue // deleted since the listing
		}
		age := c.now.Sub(g.newest)
		newest := g.newest.UTC()
		f := Finding{Prefix: prefix, MigrationID: id, Objects: g.objects, Bytes: g.bytes, LastWritten: &newest, AgeSeconds: int64(age / time.Second)}
		switch {
		case age > maxAge:
			f.Kind = KindLeftoverStaging
			f.Message = fmt.Sprintf("staging %s holds %d objects (%d bytes) last written %s ago, of a migration that is neither the current nor the previous pointer's: left by an aborted or abandoned run; delete it",
				prefix, g.objects, g.bytes, roundAge(age))
		case !c.decided || p == nil || id == c.opts.Active:
			continue // a run may still be writing there
		default:
			f.Kind = KindOrphanStaging
			f.Message = fmt.Sprintf("staging %s holds %d objects (%d bytes) last written %s ago, of a migration that is neither running (the lock names %s) nor the current or previous pointer's: no run or rollback needs it",
				prefix, g.objects, g.bytes, roundAge(age), orNone(c.opts.Active))
		}
		c.add(f)
	}
	return nil
}

// stagingOwner is the pointer whose migration staged in st, as Check's
// owner object (or the plan) says; "" when none says (not one this tool
// wrote).
func (c *checker) stagingOwner(ctx context.Context, st layout.Staging) (string, error) {
	// Check's owner object; runs from before it have only their plan.
	for _, url := range []string{st.Owner(), st.Plan()} {
		b, _, err := c.store.Get(ctx, url)
		if errors.Is(err, blob.ErrNotFound) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("drift: read %s: %w", url, err)
		}
		var owner struct {
			Pointer string `json:"pointer"`
		}
		if json.Unmarshal(b, &owner) == nil && owner.Pointer != "" {
			return owner.Pointer, nil
		}
	}
	return "", nil
}

type group struct {
	objects int
	bytes   int64
	newest  time.Time
}

// group sums the objects under prefix.
func (c *checker) group(ctx context.Context, prefix string) (group, error) {
	infos, err := c.store.List(ctx, prefix)
	if err != nil {
		return group{}, fmt.Errorf("drift: list %s: %w", prefix, err)
	}
	var g group
	for _, in := range infos {
		g.objects++
		g.bytes += in.Size
		if in.LastModified.After(g.newest) {
			g.newest = in.LastModified
		}
	}
	return g, nil
}

// claims reports the directories this pointer's runs claimed (pkg/claim)
// that no pointer version ever named and the active migration is not
// making: a Strategy B target whose run never flipped (UnclaimedTarget,
// removable), an in-place migration's way back (WayBackKept, never
// removable, or ReleasedWayBack once a later run recorded it unneeded).
// Directories without this pointer's claim are never reported, whatever
// their name: another pointer's catalog beside this one's, a backup, a
// target being imported for another pointer all look like v<N>-<id>.
func (c *checker) claims(ctx context.Context, named []string) error {
	if !c.decided {
		return nil
	}
	entries, err := claim.List(ctx, c.store, c.opts.Pointer)
	if err != nil {
		return fmt.Errorf("drift: %w", err)
	}
	// The supervisors that serve reader copies now.
	live, err := presence.Live(ctx, c.store, c.opts.Pointer, c.now)
	if err != nil {
		return fmt.Errorf("drift: %w", err)
	}
	serving := map[string]bool{}
	for _, r := range live {
		serving[r.ID] = true
	}
	for _, e := range entries {
		cl := e.Claim
		url := strings.TrimSuffix(cl.Catalog, "/")
		if e.ReadError != "" || cl.Pointer != c.opts.Pointer || cl.MigrationID == c.opts.Active || slices.Contains(named, url) ||
			cl.Kind == claim.KindTarget && cl.Named != nil ||
			cl.Kind == claim.KindReplica && cl.MigrationID == claim.ReplicaID(c.opts.Active) ||
			cl.Kind == claim.KindReaderCopy && serving[cl.CreatedBy] {
			continue // a claim that proves nothing, or a directory in use or once live
		}
		g, err := c.group(ctx, url+"/")
		if errors.Is(err, blob.ErrNoSuchBucket) {
			continue
		}
		if err != nil {
			return err
		}
		if g.objects == 0 {
			continue // gone (an abort, a cleanup), the claim left behind
		}
		newest := g.newest.UTC()
		f := Finding{Catalog: url, MigrationID: cl.MigrationID, Objects: g.objects, Bytes: g.bytes, LastWritten: &newest,
			AgeSeconds: int64(c.now.Sub(g.newest) / time.Second)}
		switch {
		case cl.Kind == claim.KindReplica:
			f.Kind = KindOrphanReplica
			f.Message = fmt.Sprintf("%s holds %d objects (%d bytes), a read replica of %s this pointer's run claimed (%s), which no running migration holds: left by a run that died",
				url, g.objects, g.bytes, cl.Source, layout.Claim(c.opts.Pointer, cl.MigrationID))
		case cl.Kind == claim.KindReaderCopy:
			f.Kind = KindOrphanReaderCopy
			f.Message = fmt.Sprintf("%s holds %d objects (%d bytes), a copy of %s that supervisor %s served reads from; no live supervisor of the pointer is %s: left by one that died",
				url, g.objects, g.bytes, cl.Source, cl.CreatedBy, cl.CreatedBy)
		case cl.Kind == claim.KindTarget:
			f.Kind = KindUnclaimedTarget
			f.Message = fmt.Sprintf("%s holds %d objects (%d bytes), the target migration %s of this pointer claimed (%s), which no version of the pointer ever named and no running migration is making (the lock names %s): left by a run that never flipped",
				url, g.objects, g.bytes, cl.MigrationID, layout.Claim(c.opts.Pointer, cl.MigrationID), orNone(c.opts.Active))
		case cl.Released != nil:
			f.Kind = KindReleasedWayBack
			f.Message = fmt.Sprintf("%s holds %d objects (%d bytes), the way back of in-place migration %s, which %s recorded as no longer needed at %s (%s), and which no version of the pointer names",
				url, g.objects, g.bytes, cl.MigrationID, cl.Released.By, cl.Released.At.Format(time.RFC3339), cl.Released.Note)
		default:
			f.Kind = KindWayBackKept
			f.Message = wayBackMessage(c.opts.Pointer, url, g, cl)
		}
		c.add(f)
	}
	return nil
}

// wayBackMessage says why a way back no pointer version names is kept, and
// what the operator can do.
func wayBackMessage(ptr, url string, g group, cl claim.Claim) string {
	s := fmt.Sprintf("%s holds %d objects (%d bytes), the way back of in-place migration %s (the catalog as it was before it), which no version of the pointer names: ",
		url, g.objects, g.bytes, cl.MigrationID)
	switch {
	case cl.Restored != nil:
		s += fmt.Sprintf("the catalog was restored from it by %s at %s; it is kept until a run records it unneeded (cleanup never deletes a way back before that)",
			cl.Restored.By, cl.Restored.At.Format(time.RFC3339))
	case cl.Named != nil:
		s += fmt.Sprintf("pointer version %s named the migrated catalog, and that version is no longer kept; it is kept until a run records it unneeded",
			cl.Named.PointerVersionID)
	default:
		s += fmt.Sprintf("the run died after copying it and before moving the pointer; if the catalog is now in the new format while the pointer says the old one, `rocklake-migrate restore --pointer %s --migration-id %s` brings it back from the way back; it is kept meanwhile",
			ptr, cl.MigrationID)
	}
	return s
}

func roundAge(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

// Kinds lists the kinds of the findings, in order, each once.
func (r Report) Kinds() []Kind {
	var ks []Kind
	for _, f := range r.Findings {
		if !slices.Contains(ks, f.Kind) {
			ks = append(ks, f.Kind)
		}
	}
	return ks
}

// Summary is one line: healthy, or how many findings of which kinds.
func (r Report) Summary() string {
	if r.Healthy {
		return fmt.Sprintf("healthy: %s in format %s, as the release expects", r.Catalog, r.Expected)
	}
	n := len(r.Findings) + r.FindingsOmitted
	kinds := make([]string, 0, len(r.Findings))
	for _, k := range r.Kinds() {
		kinds = append(kinds, string(k))
	}
	s := "s"
	if n == 1 {
		s = ""
	}
	return fmt.Sprintf("%d finding%s (%s)", n, s, strings.Join(kinds, ", "))
}

// Text renders the report for people.
func (r Report) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "drift check of %s at %s: %s\n", r.Pointer, r.CheckedAt.Format(time.RFC3339), r.Summary())
	if r.Current != nil {
		fmt.Fprintf(&b, "  pointer:  catalog %s, format %s", r.Current.Catalog, r.Current.FormatVersion)
		if r.Current.MigrationID != "" {
			fmt.Fprintf(&b, ", migration %s", r.Current.MigrationID)
		}
		if r.PointerVersionID != "" {
			fmt.Fprintf(&b, ", version %s", r.PointerVersionID)
		}
		b.WriteString("\n")
	}
	if r.Catalog != "" {
		found := "unknown"
		if r.FoundVersion != 0 {
			found = r.FoundVersion.String()
		}
		fmt.Fprintf(&b, "  catalog:  format %s, release expects %s\n", found, r.Expected)
	}
	if r.ActiveMigration != "" {
		fmt.Fprintf(&b, "  lock:     held by %s (its checkpoint, staging and target are in use)\n", r.ActiveMigration)
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "  %s: %s\n", f.Kind, f.Message)
	}
	if r.FindingsOmitted > 0 {
		fmt.Fprintf(&b, "  (%d more findings omitted)\n", r.FindingsOmitted)
	}
	return b.String()
}
