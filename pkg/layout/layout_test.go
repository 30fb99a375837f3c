package layout_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

const (
	ptr    = "s3://b/rocklake/CURRENT"
	source = "s3://b/catalogs/prod"
	id     = "m-20261203T101500Z-1a2b3c4d"
)

var start = time.Date(2026, 12, 3, 10, 15, 0, 123e6, time.FixedZone("CET", 3600))

// TestPaths pins the bytes of every name: objects already in buckets carry
// them, so a change here breaks every reader of those buckets.
func TestPaths(t *testing.T) {
	must := func(u string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	st := layout.Staging{Root: "s3://b/rocklake/migrations/", MigrationID: id}
	three := 3
	for _, c := range []struct{ name, got, want string }{
		{"lock", layout.Lock(ptr), "s3://b/rocklake/CURRENT.lock"},
		{"history dir", layout.HistoryDir(ptr), "s3://b/rocklake/CURRENT.history/"},
		{"history record", layout.HistoryRecord(ptr, start, id), "s3://b/rocklake/CURRENT.history/20261203T091500.123Z-" + id + ".json"},
		{"claims dir", layout.ClaimsDir(ptr), "s3://b/rocklake/CURRENT.claims/"},
		{"claim", layout.Claim(ptr, id), "s3://b/rocklake/CURRENT.claims/" + id + ".json"},
		{"default staging", layout.DefaultStaging(ptr), "s3://b/rocklake/migrations"},
		{"default staging, no dir", layout.DefaultStaging("CURRENT"), ""},
		{"fleet runs, prefix", layout.FleetRuns("s3://b/tenants/"), "s3://b/tenants.fleet/"},
		{"fleet runs, list", layout.FleetRuns("s3://b/tenants.txt"), "s3://b/tenants.txt.fleet/"},
		{"fleet run", layout.FleetRun("s3://b/tenants/", start, "f-1"), "s3://b/tenants.fleet/20261203T091500.123Z-f-1.json"},
		{"fleet staging", layout.FleetStaging("s3://b/tenants/"), "s3://b/tenants.migrations"},
		{"fleet failures", layout.FleetFailures("s3://b/tenants/", "f-1"), "s3://b/tenants.fleet/failures/f-1.json"},
		{"target", must(layout.Target(source, format.V2, id)), "s3://b/catalogs/v2-" + id},
		{"target, trailing slash", must(layout.Target(source+"/", format.V2, id)), "s3://b/catalogs/v2-" + id},
		{"target, file", must(layout.Target("file:///data/catalogs/prod", format.V2, id)), "file:///data/catalogs/v2-" + id},
		{"target in a dir", layout.TargetIn("s3://other/cats/", format.V1, id), "s3://other/cats/v1-" + id},
		{"way back", must(layout.WayBack(source, format.V1, id)), "s3://b/catalogs/v1-" + id},
		{"replica", must(layout.Replica(source, id)), "s3://b/catalogs/replica-" + id},
		{"reader copy", must(layout.ReaderCopy(source, "host-1-ab", 3)), "s3://b/catalogs/reader-host-1-ab-3"},
		{"reader checkpoint", layout.ReaderCheckpoint("host-1-ab"), "rocklake-migrate-reader-host-1-ab"},
		{"servers", layout.Servers(ptr), "s3://b/rocklake/CURRENT.servers/"},
		{"server", layout.Server(ptr, "host-1-ab"), "s3://b/rocklake/CURRENT.servers/host-1-ab.json"},
		{"staging owner", st.Owner(), "s3://b/rocklake/migrations/" + id + "/owner.json"},
		{"freeze checkpoint", layout.FreezeCheckpoint(id), "rocklake-migrate-" + id},
		{"in-place checkpoint", layout.InPlaceCheckpoint(id), "rocklake-migrate-inplace-" + id},
		{"flip checkpoint", layout.FlipCheckpoint(id), "rocklake-migrate-flip-" + id},
		{"export checkpoint", layout.ExportCheckpoint, "rocklake-migrate-export"},
		{"shard file", layout.ShardFile(2, 16, ""), "shard-00002-of-00016.ndjson"},
		{"shard file zst", layout.ShardFile(2, 16, "zst"), "shard-00002-of-00016.ndjson.zst"},
		{"join s3", layout.Join("s3://b/out/", "x"), "s3://b/out/x"},
		{"join file", layout.Join("/tmp/out/", "x"), "/tmp/out/x"},
		{"staging", st.Prefix(), "s3://b/rocklake/migrations/" + id + "/"},
		{"plan", st.Plan(), "s3://b/rocklake/migrations/" + id + "/plan.json"},
		{"shard dir", st.ShardDir(format.V1), "s3://b/rocklake/migrations/" + id + "/v1"},
		{"shard", st.Shard(format.V1, 2, 16), "s3://b/rocklake/migrations/" + id + "/v1/shard-00002-of-00016.ndjson.zst"},
		{"import dir", st.ImportDir(format.V1, format.V2), "s3://b/rocklake/migrations/" + id + "/v2"},
		{"import shard", st.ImportShard(format.V1, format.V2, 2, 16), "s3://b/rocklake/migrations/" + id + "/v2/shard-00002-of-00016.ndjson.zst"},
		{"rebuild import dir", st.ImportDir(format.V1, format.V1), "s3://b/rocklake/migrations/" + id + "/v1-rebuilt"},
		{"rebuild import shard", st.ImportShard(format.V1, format.V1, 0, 1), "s3://b/rocklake/migrations/" + id + "/v1-rebuilt/shard-00000-of-00001.ndjson.zst"},
		{"export result", st.ExportResult(3), "s3://b/rocklake/migrations/" + id + "/results/export-00003.json"},
		{"transform result", st.TransformResult(3), "s3://b/rocklake/migrations/" + id + "/results/transform-00003.json"},
		{"probe", st.Probe(), "s3://b/rocklake/migrations/" + id + "/probe.json"},
		{"import result", st.ImportResult(), "s3://b/rocklake/migrations/" + id + "/import.json"},
		{"target claim", st.TargetClaim(), "s3://b/rocklake/migrations/" + id + "/target-claim.json"},
		{"verify", st.VerifyResult(), "s3://b/rocklake/migrations/" + id + "/verify.json"},
		{"flip intent", st.FlipIntent(), "s3://b/rocklake/migrations/" + id + "/flip-intent.json"},
		{"gate", st.Gate(), "s3://b/rocklake/migrations/" + id + "/gate.json"},
		{"timing", st.Timing("Freeze", nil, start), "s3://b/rocklake/migrations/" + id + "/timing/Freeze-1796289300123000000.json"},
		{"shard timing", st.Timing("ExportTransformShard", &three, start), "s3://b/rocklake/migrations/" + id + "/timing/ExportTransformShard-00003-1796289300123000000.json"},
		{"decision", st.Decision(), "s3://b/rocklake/migrations/decisions/" + id},
		{"decision flip", layout.DecisionFlip, "flip"},
		{"decision abort", layout.DecisionAbort, "abort"},
		{"decision withdrawn", layout.DecisionWithdrawn, "withdrawn"},
		{"decisions dir", layout.DecisionsDir, "decisions"},
	} {
		if c.got != c.want {
			t.Errorf("%s: %q, want %q", c.name, c.got, c.want)
		}
	}
}

// The target is beside the source, in its directory; a source at a root
// has none.
func TestTarget(t *testing.T) {
	for src, want := range map[string]string{
		"s3://b/catalogs/prod":   "s3://b/catalogs/v2-m-1",
		"s3://b/catalogs/prod/":  "s3://b/catalogs/v2-m-1",
		"s3://b/prod":            "s3://b/v2-m-1",
		"file:///data/cats/prod": "file:///data/cats/v2-m-1",
		"s3://b/":                "",
		"s3://b":                 "",
		"file:///prod":           "",
	} {
		got, err := layout.Target(src, format.V2, "m-1")
		if got != want || (want == "") != (err != nil) {
			t.Errorf("Target(%s) = %q, %v; want %q", src, got, err, want)
		}
	}
}

func TestBesideARoot(t *testing.T) {
	for _, cat := range []string{"s3://b", "s3://b/", "file:///prod", "file:///"} {
		if _, err := layout.Target(cat, format.V2, id); !errors.Is(err, layout.ErrAtRoot) {
			t.Errorf("Target(%s): %v, want ErrAtRoot", cat, err)
		}
		if _, err := layout.Replica(cat, id); !errors.Is(err, layout.ErrAtRoot) {
			t.Errorf("Replica(%s): %v, want ErrAtRoot", cat, err)
		}
	}
}

func TestWayBackOf(t *testing.T) {
	p := pointer.Pointer{Catalog: source, PreviousCatalog: source, FormatVersion: format.V2, MigrationID: id}
	if got, ok := layout.WayBackOf(p); !ok || got != "s3://b/catalogs/v1-"+id {
		t.Errorf("in place: %q %v", got, ok)
	}
	for _, q := range []pointer.Pointer{
		{Catalog: source, PreviousCatalog: "s3://b/catalogs/old", FormatVersion: format.V2, MigrationID: id}, // Strategy B
		{Catalog: source, PreviousCatalog: source, FormatVersion: format.V1, MigrationID: id},                // nothing before v1
		{Catalog: source, PreviousCatalog: source, FormatVersion: format.V2},                                 // no migration
	} {
		if got, ok := layout.WayBackOf(q); ok {
			t.Errorf("%+v: way back %q", q, got)
		}
	}
}

// TestParse: the names the tool reads back from listings.
func TestParse(t *testing.T) {
	if got := layout.HistoryRunID(layout.HistoryRecord(ptr, start, id)); got != id {
		t.Errorf("run id %q", got)
	}
	for _, u := range []string{ptr + ".history/x.json", ptr + ".history/20261203T091500.123Z.json"} {
		if got := layout.HistoryRunID(u); got != "" {
			t.Errorf("run id of %s: %q", u, got)
		}
	}
	if !layout.IsRecord(layout.Claim(ptr, id)) || !layout.IsRecord(layout.HistoryRecord(ptr, start, id)) || layout.IsRecord(ptr+".claims/x.tmp") {
		t.Error("IsRecord")
	}
	for name, want := range map[string]string{"OTHER.claims": "OTHER", "OTHER.history": "OTHER", ".claims": "", "catalogs": "", "OTHER.lock": ""} {
		if got, ok := layout.SidecarOwner(name); got != want || ok != (want != "") {
			t.Errorf("SidecarOwner(%s): %q %v", name, got, ok)
		}
	}
	for name, want := range map[string]string{
		layout.FreezeCheckpoint(id):  id,
		layout.InPlaceCheckpoint(id): "inplace-" + id,
		layout.FlipCheckpoint(id):    id,
		layout.ExportCheckpoint:      "export",
		"rocklake-migrate":           "rocklake-migrate",
	} {
		if got, ok := layout.CheckpointOwner(name); !ok || got != want {
			t.Errorf("CheckpointOwner(%s): %q %v", name, got, ok)
		}
	}
	if _, ok := layout.CheckpointOwner("rocklake-backup"); ok {
		t.Error("someone else's checkpoint taken for this tool's")
	}
	if !layout.IsShardName(layout.ShardFile(2, 16, "gz")) || layout.IsShardName("shard-2-of-16.ndjson") || layout.IsShardName("x/"+layout.ShardFile(2, 16, "")) {
		t.Error("IsShardName")
	}
	if !layout.IsShardFile("s3://b/x/"+layout.ShardFile(0, 1, "zst")) || layout.IsShardFile("s3://b/x/") {
		t.Error("IsShardFile")
	}

	st := layout.Staging{Root: "s3://b/rocklake/migrations", MigrationID: id}
	three := 3
	for _, c := range []struct {
		url      string
		from, to format.Version
		want     layout.Object
	}{
		{st.Plan(), 0, 0, layout.Object{Kind: layout.PlanObject}},
		{st.VerifyResult(), 0, 0, layout.Object{Kind: layout.VerifyObject}},
		{st.ExportResult(3), 0, 0, layout.Object{Kind: layout.ExportResultObject, Index: 3}},
		{st.TransformResult(12), 0, 0, layout.Object{Kind: layout.TransformResultObject, Index: 12}},
		{st.Prefix() + "results/transform-x.json", 0, 0, layout.Object{Kind: layout.TransformResultObject, Index: -1}},
		{st.Timing("Freeze", nil, start), 0, 0, layout.Object{Kind: layout.TimingObject, Step: "Freeze"}},
		{st.Timing("ExportTransformShard", &three, start), 0, 0, layout.Object{Kind: layout.TimingObject, Step: "ExportTransformShard"}},
		{st.ImportShard(format.V1, format.V2, 0, 1), format.V1, format.V2, layout.Object{Kind: layout.ImportShardObject}},
		{st.ImportShard(format.V1, format.V1, 0, 1), format.V1, format.V1, layout.Object{Kind: layout.ImportShardObject}},
		{st.Shard(format.V1, 0, 1), format.V1, format.V1, layout.Object{}}, // the audit copy of a rebuild
		{st.ImportShard(format.V1, format.V2, 0, 1), 0, 0, layout.Object{}},
		{st.Gate(), format.V1, format.V2, layout.Object{}},
	} {
		if got := st.Object(c.url, c.from, c.to); got != c.want {
			t.Errorf("Object(%s): %+v, want %+v", c.url, got, c.want)
		}
	}
}
