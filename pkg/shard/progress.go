package shard

import "sync/atomic"

// Progress counts work as it happens, for a caller to display; every step
// updates it from its own goroutines. A nil *Progress counts nothing.
type Progress struct {
	Records     atomic.Uint64
	ShardsDone  atomic.Int64
	ShardsTotal atomic.Int64
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
