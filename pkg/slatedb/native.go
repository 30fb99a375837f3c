package slatedb

/*
#cgo CFLAGS: -I${SRCDIR}/../../native/include
#cgo LDFLAGS: ${SRCDIR}/../../native/lib/librocklake_slatedb.a -ldl -lm -lpthread
#include <stdlib.h>
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"fmt"
	"time"
	"unsafe"
)

// native runs one blocking call into the library. It turns ctx into the call's
// timeout and cancel token, and the status code and message into an *Error.
func native(ctx context.Context, op string, call func(timeoutMS C.uint64_t, cancel *C.rl_cancel, errOut **C.char) C.int32_t) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("slatedb: %s: %w", op, err)
	}
	var timeoutMS C.uint64_t
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left <= 0 {
			return fmt.Errorf("slatedb: %s: %w", op, context.DeadlineExceeded)
		}
		// Round up so a sub-millisecond deadline still gets a bounded call.
		timeoutMS = C.uint64_t((left + time.Millisecond - 1) / time.Millisecond)
	}
	var cancel *C.rl_cancel
	if ctx.Done() != nil {
		cancel = C.rl_cancel_new()
		done, exited := make(chan struct{}), make(chan struct{})
		defer func() {
			// The token is freed only once the watcher is gone: it may be
			// firing it at this very moment (ctx canceled as the call ended).
			close(done)
			<-exited
			C.rl_cancel_free(cancel)
		}()
		go func() {
			defer close(exited)
			select {
			case <-ctx.Done():
				C.rl_cancel_fire(cancel)
			case <-done:
			}
		}()
	}
	var msg *C.char
	code := call(timeoutMS, cancel, &msg)
	if code == C.RL_OK {
		return nil
	}
	text := C.GoString(msg)
	C.rl_string_free(msg)
	e := &Error{Code: Code(code), Op: op, Msg: text}
	switch e.Code {
	case CodeCanceled, CodeTimeout:
		// The native side stopped because of ctx: report ctx's own error.
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("slatedb: %s: %w", op, ctxErr)
		}
		return fmt.Errorf("slatedb: %s: %w", op, context.DeadlineExceeded)
	}
	return e
}

func cBytes(b []byte) (*C.uint8_t, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b))
}

// takeBytes copies a buffer handed out by the library and frees it.
func takeBytes(p *C.uint8_t, n C.size_t) []byte {
	if p == nil {
		return nil
	}
	b := C.GoBytes(unsafe.Pointer(p), C.int(n))
	C.rl_bytes_free(p, n)
	return b
}

func takeString(p *C.char) string {
	if p == nil {
		return ""
	}
	s := C.GoString(p)
	C.rl_string_free(p)
	return s
}

// LiveHandles reports how many native handles (writers, readers, iterators,
// cancel tokens) are open in this process.
func LiveHandles() int { return int(C.rl_live_handles()) }

// EngineVersion is the exact slatedb crate version linked in.
func EngineVersion() string { return C.GoString(C.rl_slatedb_version()) }
