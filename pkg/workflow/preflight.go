package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// Finding is one preflight check: what was checked, and what was found.
type Finding struct {
	Check     string `json:"check"`
	OK        bool   `json:"ok"`
	Detail    string `json:"detail,omitempty"`
	ErrorName string `json:"error_name,omitempty"`
	err       error
}

// preflight runs the checks Check and Plan share, all read-only: the
// pointer (credentials, bucket, object), versioning on its bucket, the
// catalog it names (startup check against the pointer's format), the
// target format and the path to it, unknown tags, the target location
// (there, and empty), staging (its bucket there, listable) and the lock.
// Check stops at the first failure (all false); Plan goes on as far as
// the checks allow (all true). The error is the first failure.
func preflight(ctx context.Context, env runstate.Env, in CheckInput, id string, now time.Time, all bool) (runstate.Migration, []Finding, error) {
	ch := &checks{all: all}
	m, policy, stop := inputChecks(ctx, env, in, id, now, ch)
	if stop {
		return m, ch.found, ch.first
	}
	p, c, stop := sourceChecks(ctx, env, in, &m, ch)
	if c != nil {
		defer c.Close()
	}
	if stop || targetVersionChecks(ctx, in, &m, p, c, policy, ch) {
		return m, ch.found, ch.first
	}
	if c != nil && !m.NeedsMigration && ch.first == nil {
		return m, ch.found, nil
	}
	placeChecks(ctx, env, in, &m, p, c, policy, id, now, ch)
	return m, ch.found, ch.first
}

// Preflight runs every check Check makes before a migration, read-only,
// past a failed one, so that one run names every problem (the operator's
// plan); the error is the first failure's.
func Preflight(ctx context.Context, env runstate.Env, in CheckInput, id string, now time.Time) (runstate.Migration, []Finding, error) {
	return preflight(ctx, env, in, id, now, true)
}

// checks collects the preflight's findings: a plan's every failed check
// (all), Check's first.
type checks struct {
	all   bool
	found []Finding
	first error
}

// fail records a failed check; it reports whether to go on.
func (ch *checks) fail(check string, err error) bool {
	ch.found = append(ch.found, Finding{Check: check, ErrorName: runstate.ErrorName(err), Detail: err.Error(), err: err})
	if ch.first == nil {
		ch.first = err
	}
	return ch.all
}

func (ch *checks) ok(check, detail string) {
	ch.found = append(ch.found, Finding{Check: check, OK: true, Detail: detail})
}

// inputChecks checks the input and makes the run's Migration from it (a
// rollback's wholly: preflightRollback); stop: nothing more to check.
func inputChecks(ctx context.Context, env runstate.Env, in CheckInput, id string, now time.Time, ch *checks) (m runstate.Migration, policy migration.UnknownTags, stop bool) {
	m = runstate.Migration{Run: runstate.Run{MigrationID: id, Pointer: in.Pointer}, DryRun: in.DryRun, PostponeFlip: in.PostponeFlip, Shards: max(in.Shards, 1),
		UnknownTags: in.UnknownTags, Trigger: runstate.Trigger(in.Trigger), InPlace: in.InPlace, InPlaceMaxBytes: in.InPlaceMaxBytes, Rebuild: in.Rebuild,
		ReadReplica: readReplica(in), Online: in.online() && !in.DryRun, CatchUp: in.CatchUp}
	policy, err := migration.ParseUnknownTags(in.UnknownTags)
	if err != nil {
		ch.fail("input", err)
		return m, policy, true
	}
	if in.Rollback {
		if m, err = preflightRollback(ctx, env, in, m, now); err != nil {
			ch.fail("rollback", err)
			return m, policy, true
		}
		ch.ok("rollback", fmt.Sprintf("%s (%s) back to %s (%s), the pointer's previous version", m.Source, m.From, m.Target, m.To))
		return m, policy, true
	}
	// With in_place_auto, a catalog Strategy A takes migrates in place
	// (frozen, for the seconds its one batch takes); online is Strategy B's.
	if in.Online != nil && *in.Online && in.InPlace {
		ch.fail("input", fmt.Errorf("%w: online copies while the source takes writes; in place (Strategy A) migrates the catalog where it lies, frozen: choose one", ErrBadInput))
		return m, policy, true
	}
	if in.InPlace && (in.Rebuild || in.TargetPrefix != "") {
		ch.fail("input", fmt.Errorf("%w: in place (Strategy A) makes no new catalog, so it takes neither rebuild nor target_prefix", ErrBadInput))
		return m, policy, true
	}
	if m.FreezeGrace, err = runstate.FreezeGraceOf(in.FreezeGrace); err != nil {
		ch.fail("input", err)
		return m, policy, true
	}
	// Without a target version in the input, the one the deployed release
	// expects (the SSM parameter) is the target; a rebuild's is the
	// catalog's own, which the pointer names.
	if !in.Rebuild || in.TargetVersion != 0 {
		if m.To, err = runstate.ResolveVersion(ctx, env, in.TargetVersion); err != nil {
			ch.fail("target-version", err)
			return m, policy, true
		}
	}
	return m, policy, false
}

// sourceChecks reads the pointer, checks its bucket's versioning and opens
// the catalog it names (nil when it does not open); stop: nothing more to
// check.
func sourceChecks(ctx context.Context, env runstate.Env, in CheckInput, m *runstate.Migration, ch *checks) (pointer.Pointer, *catalog.Catalog, bool) {
	p, ref, err := pointer.Read(ctx, env.Store, in.Pointer)
	if err != nil {
		check := "pointer"
		if errors.Is(err, blob.ErrNoCredentials) || errors.Is(err, blob.ErrAccessDenied) {
			check = "credentials"
		}
		ch.fail(check, err)
		return p, nil, true // nothing else can be found without it
	}
	if strings.HasPrefix(in.Pointer, "s3://") {
		ch.ok("credentials", "S3 accepted them: the pointer was read")
	}
	m.PointerETag, m.Source = ref.ETag, p.Catalog
	if m.To == 0 {
		m.To = p.FormatVersion
	}
	ch.ok("pointer", fmt.Sprintf("%s names %s (%s), version %s", in.Pointer, p.Catalog, p.FormatVersion, ref.VersionID))
	if err := pointer.RequireVersioning(ctx, env.Store, in.Pointer); err != nil {
		if !ch.fail("pointer-versioning", err) {
			return p, nil, true
		}
	} else {
		ch.ok("pointer-versioning", "enabled: a flip can be rolled back")
	}
	c, err := catalog.Open(ctx, p.Catalog, catalog.Options{Expect: p.FormatVersion, Store: env.SlateDB})
	if err != nil {
		return p, nil, !ch.fail("source", fmt.Errorf("workflow: check %s: %w", p.Catalog, err))
	}
	m.From = c.Version()
	ch.ok("source", fmt.Sprintf("%s opens as %s, as the pointer says", p.Catalog, m.From))
	return p, c, false
}

// targetVersionChecks checks the way from the source's format to the
// target's, and the unknown tags the policy refuses; it reports whether to
// stop.
func targetVersionChecks(ctx context.Context, in CheckInput, m *runstate.Migration, p pointer.Pointer, c *catalog.Catalog, policy migration.UnknownTags, ch *checks) (stop bool) {
	to := m.To
	switch {
	case !format.Supported(to):
		if !ch.fail("target-version", &format.FormatVersionMismatch{Found: uint64(to), Expected: uint64(catalog.Newest)}) {
			return true
		}
	case c == nil:
	case in.Rebuild && m.From != to:
		if !ch.fail("target-version", fmt.Errorf("%w: a rebuild keeps the catalog's format, %s; the input names %s", ErrBadInput, m.From, to)) {
			return true
		}
	case in.Rebuild:
		// The identity: migration.Path(v, v) is empty, and every record
		// moves as it is.
		m.NeedsMigration = true
		ch.ok("target-version", fmt.Sprintf("%s → %s: a rebuild, every record moved as it is", m.From, to))
	default:
		m.NeedsMigration = m.From != to
		if _, err := migration.Path(m.From, to); err != nil && m.NeedsMigration {
			if !ch.fail("target-version", fmt.Errorf("workflow: check: %w", err)) {
				return true
			}
		} else if m.NeedsMigration {
			ch.ok("target-version", fmt.Sprintf("%s → %s", m.From, to))
		} else {
			ch.ok("target-version", fmt.Sprintf("the catalog is at %s already: nothing to do", to))
		}
	}
	if c == nil || !m.NeedsMigration {
		return false
	}
	if policy != migration.UnknownFail {
		ch.ok("unknown-tags", "not checked: the policy is "+in.UnknownTags)
		return false
	}
	// Refused here, before anything is fenced or written, rather than by a
	// shard's transform after others were written (DESIGN 2.3). Only the
	// gaps between known tags are scanned.
	unknown, err := c.UnknownTags(ctx)
	switch {
	case err != nil:
		err = fmt.Errorf("workflow: check %s: %w", p.Catalog, err)
	case len(unknown) > 0:
		err = &migration.UnknownTagsError{Counts: unknown}
	}
	if err != nil {
		return !ch.fail("unknown-tags", err)
	}
	ch.ok("unknown-tags", "none")
	return false
}

// placeChecks checks where the run goes: the strategy (in place or not),
// the target location, staging and the lock.
func placeChecks(ctx context.Context, env runstate.Env, in CheckInput, m *runstate.Migration, p pointer.Pointer, c *catalog.Catalog, policy migration.UnknownTags, id string, now time.Time, ch *checks) {
	to := m.To
	if in.InPlace && c != nil && m.NeedsMigration && to != m.From+1 {
		// Strategy A's batch and its way back are one step up.
		if !ch.fail("strategy", fmt.Errorf("%w: in place (Strategy A) migrates one format up; %s → %s goes into a fresh catalog (leave --in-place out)", ErrBadInput, m.From, to)) {
			return
		}
	}
	if (in.InPlace || in.InPlaceAuto && !in.Rebuild && in.TargetPrefix == "") && m.NeedsMigration {
		// The batch is held in memory: a limit the InPlace step's memory
		// cannot hold would fail after the batch landed, or in the undo.
		if err := runstate.InPlaceMemoryHolds(env, in.InPlaceMaxBytes); err != nil {
			if !ch.fail("in-place-limit", err) {
				return
			}
		} else {
			ch.ok("in-place-limit", fmt.Sprintf("the InPlace step's memory holds a batch at the limit (%d MiB at most)", inplace.PeakBytes(in.InPlaceMaxBytes)>>20))
		}
	}
	if in.InPlaceAuto && !in.InPlace && !in.Rebuild && in.TargetPrefix == "" && c != nil && m.NeedsMigration && ch.first == nil {
		fits, detail, err := chooseInPlace(ctx, env, p.Catalog, m.From, to, policy, in.InPlaceMaxBytes)
		if err != nil {
			if !ch.fail("strategy", err) {
				return
			}
		} else {
			m.InPlace = fits
			ch.ok("strategy", detail)
		}
	}
	target, err := newTarget(p.Catalog, in.TargetPrefix, to, id)
	switch {
	case m.InPlace:
		// Strategy A writes where the source lies: there is no new catalog.
		m.Target = p.Catalog
		ch.ok("target", "in place: "+p.Catalog+" itself (Strategy A)")
	case err != nil:
		if !ch.fail("target", err) {
			return
		}
	default:
		m.Target = target
		if err := targetFree(ctx, env, runstate.Migration{Run: runstate.Run{MigrationID: id, Target: target}}); err != nil {
			if !ch.fail("target", err) {
				return
			}
		} else {
			ch.ok("target", target+" is free")
		}
	}
	if err := stagingReadable(ctx, env, id); err != nil {
		if !ch.fail("staging", err) {
			return
		}
	} else {
		ch.ok("staging", env.Staging+" is there and listable (write access is proven only by writing: Check's probe does that before anything is touched)")
	}
	if held, err := lockState(ctx, env, in.Pointer, id, now); err != nil {
		ch.fail("lock", err)
	} else {
		ch.ok("lock", held)
	}
}

// targetFree refuses a target location that holds objects already (someone
// else's catalog, or a previous run's with the same id).
// A target this migration claimed (a resumed run) is its own.
func targetFree(ctx context.Context, env runstate.Env, m runstate.Migration) error {
	if owned, err := ownsTarget(ctx, env, m); err == nil && owned {
		return nil
	}
	// Unclaimed, or the claim unreadable (staging is checked on its own):
	// the target must be empty.
	objs, err := env.Store.List(ctx, strings.TrimSuffix(m.Target, "/")+"/")
	if err != nil {
		return fmt.Errorf("workflow: look at target %s: %w", m.Target, err)
	}
	if len(objs) > 0 {
		return fmt.Errorf("%w: %s already holds %d objects that this migration did not write; choose another migration id, or remove them", shard.ErrTargetNotEmpty, m.Target, len(objs))
	}
	// Import's own check of the location, made before anything is
	// fenced: a target inside another catalog (a target_prefix under the
	// source, say) would mix two SlateDB databases.
	if err := shard.CheckNewLocation(ctx, env.Store, m.Target); err != nil {
		return fmt.Errorf("workflow: target %s: %w", m.Target, err)
	}
	return nil
}

// stagingReadable lists the migration's staging: the bucket is there and
// listable. It writes nothing (runstate.ProbeStaging writes).
func stagingReadable(ctx context.Context, env runstate.Env, id string) error {
	if env.Staging == "" {
		return fmt.Errorf("%w: no staging location configured", runstate.ErrStagingUnusable)
	}
	if _, err := env.Store.List(ctx, env.StagingOf(id).Prefix()); err != nil {
		return fmt.Errorf("%w: %s: %w", runstate.ErrStagingUnusable, env.Staging, err)
	}
	return nil
}

// lockState says who holds the pointer's lock; a live lock of another
// migration is MigrationInProgress.
func lockState(ctx context.Context, env runstate.Env, pointerURL, id string, now time.Time) (string, error) {
	held, _, err := lock.Get(ctx, env.Store, layout.Lock(pointerURL))
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return "free (never taken)", nil
	case err != nil:
		return "", err
	case held.MigrationID == "":
		return "free", nil
	case held.MigrationID == id:
		return "held by this migration since " + held.AcquiredAt.Format(time.RFC3339), nil
	case now.After(held.ExpiresAt):
		return fmt.Sprintf("held by migration %s, whose lease ran out at %s: the next run takes it over", held.MigrationID, held.ExpiresAt.Format(time.RFC3339)), nil
	}
	return "", lock.InProgress(held, pointerURL)
}

// chooseInPlace is an in_place_auto run's choice: Strategy A when the
// catalog at url (format from) goes to format to in one step and its
// transformed keys and values fit maxBytes (0: inplace.DefaultMaxBytes),
// measured by a read-only transform pass that stops at the limit; else B.
// detail says why, for the run's checks.
func chooseInPlace(ctx context.Context, env runstate.Env, url string, from, to format.Version, policy migration.UnknownTags, maxBytes int64) (bool, string, error) {
	if maxBytes <= 0 {
		maxBytes = inplace.DefaultMaxBytes
	}
	if to != from+1 {
		return false, fmt.Sprintf("export/import (Strategy B): %s to %s is more than one step, which in place does not take", from, to), nil
	}
	fits, n, err := inplace.Fits(ctx, url, inplace.Options{To: to, UnknownTags: policy, MaxBytes: maxBytes, Store: env.SlateDB})
	switch {
	case err != nil:
		return false, "", fmt.Errorf("workflow: choose a strategy for %s: %w", url, err)
	case fits:
		return true, fmt.Sprintf("in place (Strategy A): the catalog's %d transformed bytes fit the in-place limit of %d", n, maxBytes), nil
	default:
		return false, fmt.Sprintf("export/import (Strategy B): the catalog passes the in-place limit of %d bytes", maxBytes), nil
	}
}

// ChooseInPlace is the choice an in_place_auto Check makes, for a caller
// that must know it before the run (the CLI runs A and B differently): the
// pointer read, its catalog opened, chooseInPlace. It writes nothing.
func ChooseInPlace(ctx context.Context, env runstate.Env, in CheckInput) (bool, string, error) {
	policy, err := migration.ParseUnknownTags(in.UnknownTags)
	if err != nil {
		return false, "", err
	}
	if err := runstate.InPlaceMemoryHolds(env, in.InPlaceMaxBytes); err != nil {
		return false, "", err
	}
	to, err := runstate.ResolveVersion(ctx, env, in.TargetVersion)
	if err != nil {
		return false, "", err
	}
	p, _, err := pointer.Read(ctx, env.Store, in.Pointer)
	if err != nil {
		return false, "", err
	}
	c, err := catalog.Open(ctx, p.Catalog, catalog.Options{Expect: p.FormatVersion, Store: env.SlateDB})
	if err != nil {
		return false, "", fmt.Errorf("workflow: choose a strategy: %w", err)
	}
	from := c.Version()
	if err := c.Close(); err != nil {
		return false, "", err
	}
	if from == to {
		return false, "the catalog is at " + to.String() + " already", nil
	}
	return chooseInPlace(ctx, env, p.Catalog, from, to, policy, in.InPlaceMaxBytes)
}

// readReplica is whether the run makes a read replica: asked for, or left
// out of an offline run's input. An online run freezes writes for seconds,
// of which the replica's copy (in proportion to the catalog) would be most.
func readReplica(in CheckInput) bool {
	if in.ReadReplica != nil {
		return *in.ReadReplica
	}
	return !in.online()
}
