package slatedb

/*
#include <malloc.h>

// glibc gives each thread that allocates its own arena (up to 8 per core) and
// seldom returns freed arena memory, so SlateDB's bursts on many threads
// (Tokio workers, blocking file I/O: memtables, SST buffers) left peak RSS
// growing with the size of a job. Two arenas keep RSS near what is live.
//
// glibc also raises its mmap threshold to the size of each large block freed,
// so after the first few, write batches (whose copies the memtable holds) and
// SST buffers come from the arenas too, and the holes they leave there made a
// bulk load's free arena memory grow with the database (29 to 75 MiB free
// against 6 to 36 MiB in use over a 1 000 000-row import). A fixed threshold
// keeps blocks of 128 KiB and more in mappings of their own, which go back to
// the system when freed.
//
// This runs when the binary loads, before any thread has picked an arena;
// the settings are process-wide, and only our binaries link this package.
__attribute__((constructor)) static void rl_tune_malloc(void) {
#ifdef M_ARENA_MAX
	mallopt(M_ARENA_MAX, 2);
#endif
#ifdef M_MMAP_THRESHOLD
	mallopt(M_MMAP_THRESHOLD, 128 << 10);
#endif
}
*/
import "C"

// trimMalloc returns the arenas' free pages to the system. A bulk load calls
// it after each memtable it moves to L0: that memtable's memory has just been
// freed, and what the arenas keep free would otherwise add to peak RSS.
func trimMalloc() { C.malloc_trim(0) }
