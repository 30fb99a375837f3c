package shard

import (
	"sync"
	"sync/atomic"
)

// Progress counts work as it happens, for a caller to display; every step
// updates it from its own goroutines. A nil *Progress counts nothing.
type Progress struct {
	Records     atomic.Uint64
	ShardsDone  atomic.Int64
	ShardsTotal atomic.Int64
	// RecordsTotal is how many records the stage handles, 0 while unknown:
	// exact when shard trailers say it (import, verify), estimated from
	// the catalog's counters for an export and refined as its shards
	// finish.
	RecordsTotal atomic.Uint64

	mu        sync.Mutex
	perShard  float64 // the estimate for a shard not yet finished
	finished  uint64  // records of the finished shards
	remaining int64   // shards not yet finished
}

func (p *Progress) addRecords(n uint64) {
	if p != nil {
		p.Records.Add(n)
	}
}

func (p *Progress) shardDone() {
	if p != nil {
		p.ShardsDone.Add(1)
	}
}

func (p *Progress) total(n int) {
	if p != nil {
		p.ShardsTotal.Store(int64(n))
	}
}

// SetRecordsTotal says how many records the stage handles.
func (p *Progress) SetRecordsTotal(n uint64) {
	if p != nil {
		p.RecordsTotal.Store(n)
	}
}

// estimate starts an estimated total of records over shards of about equal
// size (what Plan aims for).
func (p *Progress) estimate(records uint64, shards int) {
	if p == nil || shards < 1 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.perShard, p.finished, p.remaining = float64(records)/float64(shards), 0, int64(shards)
	p.RecordsTotal.Store(records)
}

// shardExported replaces one shard's estimate with its real count, so the
// total is exact once every shard is done.
func (p *Progress) shardExported(records uint64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.remaining > 0 { // an estimate to refine (Export made one)
		p.finished += records
		p.remaining--
		p.RecordsTotal.Store(p.finished + uint64(p.perShard*float64(p.remaining)))
	}
	p.mu.Unlock()
	p.shardDone()
}
