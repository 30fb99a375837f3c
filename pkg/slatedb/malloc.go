package slatedb

/*
#include <malloc.h>

// glibc gives each thread that allocates its own arena (up to 8 per core) and
// seldom returns freed arena memory, so SlateDB's bursts on many threads
// (Tokio workers, blocking file I/O: memtables, SST buffers) left peak RSS
// growing with the size of a job. Two arenas keep RSS near what is live. This
// runs when the binary loads, before any thread has picked an arena; the
// setting is process-wide, and only our binaries link this package.
__attribute__((constructor)) static void rl_limit_malloc_arenas(void) {
#ifdef M_ARENA_MAX
	mallopt(M_ARENA_MAX, 2);
#endif
}
*/
import "C"
