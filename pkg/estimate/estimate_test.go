package estimate_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/estimate"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// Transitions walk the real definition: each Map item adds its own states,
// each further Import call the Import and ImportDone states, a dry run
// takes the cleanup branch instead of Flip and its notice, and an online
// run its Snapshot and catch-up instead of Freeze.
func TestTransitionsFollowTheDefinition(t *testing.T) {
	count := func(shards, calls int, dry, online bool) int {
		t.Helper()
		n, err := estimate.Transitions(statemachine.Migration, estimate.Path{Shards: shards, ImportCalls: calls, DryRun: dry, Online: online})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	one := count(1, 1, false, false)
	if per := count(9, 1, false, false) - one; per != 8 {
		t.Fatalf("8 more shards add %d transitions, want 8 (one ExportTransformShard each)", per)
	}
	if loop := count(1, 3, false, false) - one; loop != 4 {
		t.Fatalf("2 more Import calls add %d transitions, want 4", loop)
	}
	if one < 10 || count(1, 1, true, false) >= one {
		t.Fatalf("transitions: %d, dry run %d", one, count(1, 1, true, false))
	}
	// Snapshot for Freeze, then three rounds and their Choices,
	// VerifyCatchUp and Fence: 8 more.
	if extra := count(1, 1, false, true) - one; extra != 8 {
		t.Fatalf("online adds %d transitions, want 8 (3 CatchUp, 3 CaughtUp, VerifyCatchUp, Fence)", extra)
	}
	if _, err := estimate.Transitions([]byte(`{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"A"}}}`), estimate.Path{Shards: 1, ImportCalls: 1}); err == nil {
		t.Fatal("a definition that never ends was counted")
	}
}

// The estimate grows with the catalog and with the shards' imbalance, and
// its cost is the sum of its parts.
func TestRunScales(t *testing.T) {
	in := estimate.Input{Rows: 1_000_000, Bytes: 80 << 20, StoredBytes: 60 << 20, Objects: 40, Shards: 16, Concurrency: 16, Imbalance: 1, Definition: statemachine.Migration}
	small, err := estimate.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Rows, in.Bytes, in.StoredBytes = 10*in.Rows, 10*in.Bytes, 10*in.StoredBytes
	big, err := estimate.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if big.TotalSeconds < 5*small.TotalSeconds || big.Lambda.GBSeconds < 5*small.Lambda.GBSeconds {
		t.Fatalf("10× the rows: %.1f s, %.1f GB-s; 1×: %.1f s, %.1f GB-s", big.TotalSeconds, big.Lambda.GBSeconds, small.TotalSeconds, small.Lambda.GBSeconds)
	}
	in.Imbalance = 3
	skewed, _ := estimate.Run(in)
	if skewed.Seconds["Shards"] < 2.9*big.Seconds["Shards"] {
		t.Fatalf("a 3× skewed shard: Map %.1f s, even %.1f s", skewed.Seconds["Shards"], big.Seconds["Shards"])
	}
	if d := small.TotalUSD - (small.Lambda.USD + small.StepFunctions.USD + small.S3.USD); d > 1e-12 || d < -1e-12 {
		t.Fatalf("total $%f is not the sum of its parts", small.TotalUSD)
	}
	if small.StepFunctions.Transitions == 0 || small.S3.WriteRequests == 0 || len(small.Assumptions) == 0 {
		t.Fatalf("estimate: %+v", small)
	}
	// Cut by the SSTs' block indexes, Freeze costs reads per SST, not a
	// scan of every row.
	in.SSTs = 200
	blocks, _ := estimate.Run(in)
	if blocks.Seconds["Freeze"] >= big.Seconds["Freeze"] || blocks.S3.ReadRequests != big.S3.ReadRequests+estimate.BlockReadsPerSST*in.SSTs {
		t.Fatalf("by blocks: Freeze %.2f s, %d reads; by the scan: %.2f s, %d reads", blocks.Seconds["Freeze"], blocks.S3.ReadRequests, big.Seconds["Freeze"], big.S3.ReadRequests)
	}
	if _, err := estimate.Run(estimate.Input{Shards: 0}); err == nil {
		t.Fatal("0 shards estimated")
	}
}

// Import's compactions rewrite a catalog once per size tier: one pass up to
// ImportFanIn runs of ImportFanIn L0 SSTs, one more per ImportFanIn-fold
// growth; and the estimate's import rate per row falls with them.
func TestImportPassesGrowWithTheCatalog(t *testing.T) {
	run := int64(estimate.ImportFanIn * estimate.L0Bytes) // one first-pass run
	for _, c := range []struct {
		stored int64
		want   int
	}{{0, 1}, {run, 1}, {run*estimate.ImportFanIn - 1, 1}, {run * estimate.ImportFanIn, 2}, {run * estimate.ImportFanIn * estimate.ImportFanIn, 3}} {
		if got := estimate.ImportPasses(c.stored); got != c.want {
			t.Errorf("ImportPasses(%d) = %d, want %d", c.stored, got, c.want)
		}
	}
	in := estimate.Input{Rows: 10_000_000, StoredBytes: 900 << 20, Shards: 40, Concurrency: 40}
	small, err := estimate.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Rows, in.StoredBytes = 10*in.Rows, 10*in.StoredBytes
	big, err := estimate.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if perRow := big.Seconds["Import"] / 10; perRow <= small.Seconds["Import"]*1.05 {
		t.Fatalf("import of 10x the rows, one more pass: %.0f s, 1x: %.0f s", big.Seconds["Import"], small.Seconds["Import"])
	}
}

// Freeze's grace (the wait for the servers' supervisors before the fence)
// is in the plan's duration and the Freeze Lambda's billed time; a dry run
// fences nothing and waits for nobody.
func TestFreezeGraceInThePlan(t *testing.T) {
	in := estimate.Input{Rows: 1_000_000, Bytes: 80 << 20, StoredBytes: 60 << 20, Objects: 40, Shards: 16, Concurrency: 16, Imbalance: 1, SSTs: 20}
	none, err := estimate.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	// A grace is a bound on the wait, which is a supervisor's switch:
	// AckSeconds, or the grace when that is shorter.
	for _, g := range []float64{30, 1} {
		in.FreezeGraceSeconds = g
		grace, err := estimate.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		w := min(g, estimate.AckSeconds)
		if !near(grace.Seconds["Freeze"], none.Seconds["Freeze"]+w) || !near(grace.TotalSeconds, none.TotalSeconds+w) ||
			!near(grace.Lambda.GBSeconds, none.Lambda.GBSeconds+w*float64(estimate.ShardMemoryMB)/1024) {
			t.Fatalf("a %g s grace: Freeze %.2f s, total %.2f s, %.2f GB-s; none: %.2f s, %.2f s, %.2f GB-s",
				g, grace.Seconds["Freeze"], grace.TotalSeconds, grace.Lambda.GBSeconds, none.Seconds["Freeze"], none.TotalSeconds, none.Lambda.GBSeconds)
		}
	}
	in.FreezeGraceSeconds = 5
	grace, _ := estimate.Run(in)
	if !strings.Contains(strings.Join(grace.Assumptions, "\n"), "freeze_grace") {
		t.Fatalf("the assumptions do not name the grace: %q", grace.Assumptions)
	}
	in.DryRun = true
	dry, _ := estimate.Run(in)
	in.FreezeGraceSeconds = 0
	dryNone, _ := estimate.Run(in)
	if !near(dry.TotalSeconds, dryNone.TotalSeconds) {
		t.Fatalf("a dry run waits for the grace: %.2f s against %.2f s", dry.TotalSeconds, dryNone.TotalSeconds)
	}
}

// Issue 25: the read replica's copy (the catalog's stored bytes, server
// side) is in Freeze's time, named in the assumptions; a dry run makes none.
func TestReadReplicaInThePlan(t *testing.T) {
	in := estimate.Input{Rows: 100_000_000, Bytes: 8 << 30, StoredBytes: 6 << 30, Objects: 400, Shards: 64, Concurrency: 40, Imbalance: 1, SSTs: 200}
	none, err := estimate.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	in.ReadReplica = true
	rep, err := estimate.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	want := float64(in.StoredBytes) / estimate.ReplicaBytesPerSec
	if d := rep.Seconds["Freeze"] - none.Seconds["Freeze"]; d < want-1e-9 || d > want+1e-9 {
		t.Fatalf("the replica adds %.2f s to Freeze, want %.2f s", d, want)
	}
	if !strings.Contains(strings.Join(rep.Assumptions, "\n"), "read_replica") {
		t.Fatalf("the assumptions do not name the replica: %q", rep.Assumptions)
	}
	in.DryRun = true
	dry, _ := estimate.Run(in)
	in.ReadReplica = false
	dryNone, _ := estimate.Run(in)
	if dry.Seconds["Freeze"] != dryNone.Seconds["Freeze"] {
		t.Fatalf("a dry run copies a replica: %.2f s against %.2f s", dry.Seconds["Freeze"], dryNone.Seconds["Freeze"])
	}
}

// Offline, writes are frozen from the fence to the flip, the whole copy;
// online only for the fence, the last round, Verify of the change and the
// flip: the same at any size. The online run costs a VerifyCatchUp more.
func TestWriteFreeze(t *testing.T) {
	in := estimate.Input{Rows: 1_000_000, Bytes: 80 << 20, StoredBytes: 60 << 20, Objects: 40, Shards: 16, Concurrency: 16, Imbalance: 1, FreezeGraceSeconds: 5, Definition: statemachine.Migration}
	freeze := func(rows uint64, online bool) estimate.Estimate {
		t.Helper()
		in.Rows, in.Online = rows, online
		e, err := estimate.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	off, on := freeze(1_000_000, false), freeze(1_000_000, true)
	if !near(off.WriteFreezeSeconds, off.TotalSeconds-estimate.CheckSeconds-min(5, estimate.AckSeconds)) {
		t.Fatalf("offline: freeze %.2f s of a %.2f s run, want all of it but Check and the grace", off.WriteFreezeSeconds, off.TotalSeconds)
	}
	if on.WriteFreezeSeconds > 1 || on.WriteFreezeSeconds <= 0 || on.Seconds["VerifyCatchUp"] <= 0 || on.Seconds["Freeze"] != 0 || on.Seconds["Fence"] < min(5, estimate.AckSeconds) {
		t.Fatalf("online: freeze %.2f s, states %v", on.WriteFreezeSeconds, on.Seconds)
	}
	if big := freeze(100_000_000, true); big.WriteFreezeSeconds != on.WriteFreezeSeconds || big.TotalSeconds < 50*on.TotalSeconds {
		t.Fatalf("online at 100× the rows: freeze %.2f s of %.0f s; at 1×: %.2f s of %.0f s", big.WriteFreezeSeconds, big.TotalSeconds, on.WriteFreezeSeconds, on.TotalSeconds)
	}
	if on.StepFunctions.Transitions != off.StepFunctions.Transitions+8 || on.Lambda.Invocations <= off.Lambda.Invocations {
		t.Fatalf("online: %d transitions, %d invocations; offline %d, %d", on.StepFunctions.Transitions, on.Lambda.Invocations, off.StepFunctions.Transitions, off.Lambda.Invocations)
	}
	in.DryRun = true
	if dry := freeze(1_000_000, true); dry.WriteFreezeSeconds != 0 || dry.Seconds["Freeze"] == 0 {
		t.Fatalf("a dry run (which fences nothing, online or not): freeze %.2f s, states %v", dry.WriteFreezeSeconds, dry.Seconds)
	}
}

// near: equal but for floating point's rounding.
func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// Every state an estimate times is a state of the migration definition: a
// state renamed there is a test failure here, not a plan that names a
// state no run has (issue 38 item 3).
func TestEstimatedStatesAreTheDefinitions(t *testing.T) {
	var def struct{ States map[string]json.RawMessage }
	if err := json.Unmarshal(statemachine.Migration, &def); err != nil {
		t.Fatal(err)
	}
	in := estimate.Input{Rows: 1_000_000, Bytes: 80 << 20, StoredBytes: 60 << 20, Objects: 40, Shards: 16, Concurrency: 16, Imbalance: 1, Definition: statemachine.Migration}
	for _, online := range []bool{false, true} {
		in.Online = online
		e, err := estimate.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Seconds) < 5 {
			t.Fatalf("online %v: %d states timed", online, len(e.Seconds))
		}
		for state := range e.Seconds {
			if _, ok := def.States[state]; !ok {
				t.Errorf("online %v: the estimate times %q, which the migration definition does not have", online, state)
			}
		}
	}
}
