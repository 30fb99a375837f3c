package inplace

import (
	"fmt"
	"syscall"
	"testing"
)

// BenchmarkPeakRSS measures the process's peak RSS through what the inplace
// Lambda does at worst: Migrate (the batch held in memory), then Restore
// (the undo after a failed pointer write: a second batch) of a seeded
// catalog on versitygw. The peak only grows, so run one size per process:
//
//	go test -run '^$' -bench 'PeakRSS/rows=150000$' -benchtime 1x ./pkg/inplace/
//
// It reports the transformed bytes (what in_place_max_bytes bounds) and the
// peak after each stage; DefaultMaxBytes's doc and docs/workflow.md (In
// place) hold the fit.
func BenchmarkPeakRSS(b *testing.B) {
	for _, rows := range []int{50000, 150000, 300000} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			for range b.N {
				url := places[1].url(b)
				seeded(b, url, rows)
				seededRSS := maxRSS(b)
				o := opts(b, url, "m-peak")
				res, err := Migrate(b.Context(), url, o)
				if err != nil {
					b.Fatal(err)
				}
				migrated := maxRSS(b)
				if _, err := Restore(b.Context(), url, o.WayBack, RestoreOptions{Current: o.To, Landed: res.Landed, Blob: o.Blob}); err != nil {
					b.Fatal(err)
				}
				restored := maxRSS(b)
				b.ReportMetric(float64(res.Bytes)/(1<<20), "MiB-transformed")
				b.ReportMetric(seededRSS, "MiB-peak-seeded")
				b.ReportMetric(migrated, "MiB-peak-migrated")
				b.ReportMetric(restored, "MiB-peak-restored")
			}
		})
	}
}

// maxRSS is the process's peak RSS so far, in MiB.
func maxRSS(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}
