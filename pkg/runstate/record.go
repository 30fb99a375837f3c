package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/statemachine"

	"github.com/rocklake/rocklake-migrate/pkg/lock"

	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// How runs are recorded (pkg/history), and what a failed record write does:
//
//   - Check writes the record (in progress) after it takes the lock and
//     before it returns: if that write fails, Check frees the lock and fails
//     with HistoryUnwritable. Nothing has been touched yet, so refusing
//     costs nothing, and no migration runs unrecorded.
//   - The steps between (Run, for the timed steps) leave their time in
//     staging; they never write the record, so that no shard contends for it.
//   - Flip finishes the record after the pointer moved. If that write fails,
//     the flip stands: the pointer is the outcome (its own versions name the
//     migration), and failing the step would send the run to Abort, which
//     refuses a flipped migration, and page on-call for a success. Flip
//     reports it in FlipOutput.HistoryError and logs it at error level.
//   - Abort finishes the record likewise (AbortOutput.HistoryError), and so
//     does Rollback (RollbackOutput.HistoryError).

// TriggerConsole is the trigger of a run whose input names none: someone
// started the state machine by hand (the console, or the AWS CLI). The CLI
// says "cli:<user>" and the release rule "release:<event id>".
const TriggerConsole = "console"

// Trigger is who started a run, as its input says (t), else TriggerConsole.
func Trigger(t string) string {
	if t == "" {
		return TriggerConsole
	}
	return t
}

// Kind is what sort of run m is, for its record and its lock.
func (m Migration) Kind() history.Kind {
	if m.OperatorKind != "" {
		return m.OperatorKind
	}
	if m.RollbackOf != "" {
		return history.KindRollback
	}
	return RunKind(m.DryRun)
}

// RunKind is the kind of a migration's run: a dry run's, or a migration's.
func RunKind(dryRun bool) history.Kind {
	if dryRun {
		return history.KindDryRun
	}
	return history.KindMigrate
}

// recordURL is the record of migration m (Check set StartedAt).
func recordURL(m Migration) string {
	return layout.HistoryRecord(m.Pointer, m.StartedAt, m.MigrationID)
}

// StartRecord writes migration m's record, in progress; Check's time so far
// is its first state time.
func StartRecord(ctx context.Context, env Env, m Migration, checkSeconds float64) error {
	_, err := history.Create(ctx, env.Store, history.Record{
		ID: m.MigrationID, Kind: m.Kind(), Trigger: m.Trigger, Pointer: m.Pointer,
		Source: m.Source, Target: m.Target, From: m.From, To: m.To, Start: m.StartedAt,
		Outcome: history.InProgress, State: statemachine.StepCheck, Shards: m.Shards,
		StateSeconds: map[string]float64{statemachine.StepCheck: checkSeconds},
	})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrHistoryUnwritable, err)
	}
	return nil
}

// RecordOneStateRun writes the whole record of a run of one state
// (rollback, restore, cleanup): its time in rec.State since rec.Start, and
// Failed with the error's name if err, else outcome. A record that cannot
// be written does not undo what the run did: the failure is logged and
// returned as text, for the caller to report beside its result.
func RecordOneStateRun(ctx context.Context, env Env, rec history.Record, err error, outcome history.Outcome) (historyError string) {
	rec.End = time.Now()
	rec.StateSeconds = map[string]float64{rec.State: rec.End.Sub(rec.Start).Seconds()}
	rec.Outcome = outcome
	if err != nil {
		rec.Outcome, rec.ErrorName, rec.Error = history.Failed, ErrorName(err), err.Error()
	}
	if _, herr := history.Create(ctx, env.Store, rec); herr != nil {
		slog.ErrorContext(ctx, "the run's record was not written", "run_id", rec.ID, "kind", rec.Kind, "pointer", rec.Pointer, "error", herr.Error())
		return herr.Error()
	}
	return ""
}

// timing is what a timed step leaves in staging: its time, and its error.
type timing struct {
	Step      string    `json:"step"`
	Index     *int      `json:"index,omitempty"`
	Seconds   float64   `json:"seconds"`
	End       time.Time `json:"end"`
	ErrorName string    `json:"error_name,omitempty"`
}

// RecordTiming leaves a timed step's time in its migration's staging. Best
// effort: a lost timing only makes the record's time per state short.
func RecordTiming(ctx context.Context, env Env, step string, in json.RawMessage, start time.Time, stepErr error) {
	// A step that lost its lock writes nothing, its time neither: its
	// staging may be another run's cleanup's by now.
	if env.Staging == "" || errors.Is(stepErr, lock.ErrLost) {
		return
	}
	var ids struct {
		MigrationID string `json:"migration_id"`
		Index       *int   `json:"index"`
	}
	if json.Unmarshal(in, &ids) != nil || ids.MigrationID == "" || strings.ContainsAny(ids.MigrationID, "/") {
		return
	}
	end := time.Now().UTC()
	t := timing{Step: step, Index: ids.Index, Seconds: end.Sub(start).Seconds(), End: end}
	if stepErr != nil {
		t.ErrorName = ErrorName(stepErr)
	}
	if err := env.Store.PutJSON(ctx, env.StagingOf(ids.MigrationID).Timing(step, ids.Index, end), t); err != nil {
		slog.WarnContext(ctx, "the step's time was not kept", "step", step, "migration_id", ids.MigrationID, "error", err.Error())
	}
}

// RunStats is what the record says of a run's work, from its staging.
type RunStats struct {
	Seconds   map[string]float64
	LastState string // the state that ran last (the failed one, if any failed)
	Rows      uint64
	Bytes     int64
}

// CollectStats reads migration m's timings, transform results and shards
// from staging. What cannot be read is left out (a note says so).
func CollectStats(ctx context.Context, env Env, m Migration) (RunStats, []string) {
	st := env.StagingOf(m.MigrationID)
	s := RunStats{Seconds: map[string]float64{}}
	var notes []string
	infos, err := env.Store.List(ctx, st.Prefix())
	if err != nil {
		return s, []string{fmt.Sprintf("staging could not be listed for the run's statistics: %v", err)}
	}
	var timings []timing
	for _, in := range infos {
		switch st.Object(in.URL, m.From, m.To).Kind {
		case layout.TimingObject:
			var t timing
			if err := env.Store.GetJSON(ctx, in.URL, &t); err == nil {
				timings = append(timings, t)
			}
		case layout.TransformResultObject:
			var r ShardResult
			if err := env.Store.GetJSON(ctx, in.URL, &r); err == nil {
				s.Rows += r.Records
			} else {
				notes = append(notes, "a transform result was unreadable: "+err.Error())
			}
		case layout.ImportShardObject:
			s.Bytes += in.Size
		}
	}
	sort.Slice(timings, func(i, j int) bool { return timings[i].End.Before(timings[j].End) })
	for _, t := range timings {
		s.Seconds[t.Step] += t.Seconds
		s.LastState = t.Step
	}
	for _, t := range timings {
		if t.ErrorName != "" {
			s.LastState = t.Step
		}
	}
	return s, notes
}

// FinishRecord ends migration m's record with what staging says of the run
// and what fn sets; it returns the error to report ("" if written).
func FinishRecord(ctx context.Context, env Env, m Migration, stats RunStats, notes []string, fn func(*history.Record)) string {
	if m.StartedAt.IsZero() {
		return "" // a migration from before runs were recorded
	}
	_, err := history.Update(ctx, env.Store, recordURL(m), func(r *history.Record) {
		if r.StateSeconds == nil {
			r.StateSeconds = map[string]float64{}
		}
		for k, v := range stats.Seconds {
			r.StateSeconds[k] = v
		}
		if stats.LastState != "" {
			r.State = stats.LastState
		}
		r.Rows, r.Bytes, r.End = stats.Rows, stats.Bytes, time.Now().UTC()
		r.Notes = append(r.Notes, notes...)
		fn(r)
	})
	if err != nil {
		slog.ErrorContext(ctx, "the run's record was not finished", "migration_id", m.MigrationID, "pointer", m.Pointer, "record", recordURL(m), "error", err.Error())
		return err.Error()
	}
	return ""
}

// endRecord ends run id's record with fn if it is still in progress, so
// that no dead run stays "in progress" in the history. Best effort: logged.
func endRecord(ctx context.Context, env Env, pointerURL, id string, fn func(*history.Record)) {
	url, rec, err := history.Find(ctx, env.Store, pointerURL, id)
	if err == nil && !rec.Done() {
		_, err = history.Update(ctx, env.Store, url, func(r *history.Record) {
			fn(r)
			r.End = time.Now().UTC()
		})
	}
	if err != nil {
		slog.WarnContext(ctx, "the run's record was not ended", "migration_id", id, "pointer", pointerURL, "error", err.Error())
	}
}

// OnlineReport is what online run m's rounds did, and its write freeze
// until now (the pointer written). A round record that cannot be read is
// left out of it.
func OnlineReport(ctx context.Context, env Env, m Migration, p Plan) *history.Online {
	o := &history.Online{Rounds: []history.Round{}, Offline: m.OfflineBecause, Backlog: p.FenceBacklog}
	fencedAt := p.FencedAt
	if fencedAt.IsZero() {
		fencedAt = m.FencedAt
	}
	if !fencedAt.IsZero() {
		o.FreezeSeconds = time.Since(fencedAt).Seconds()
	}
	for n := 1; n <= m.Round; n++ {
		var r Round
		if err := env.Store.GetJSON(ctx, env.StagingOf(m.MigrationID).Round(n), &r); err != nil {
			continue
		}
		o.Rounds = append(o.Rounds, history.Round{Round: n, Keys: r.Result.Keys, Candidates: r.Result.Changes.Candidates, Method: r.Result.Changes.Method, Reason: r.Result.Changes.Reason, Seconds: r.Seconds, Last: r.Last})
	}
	return o
}
