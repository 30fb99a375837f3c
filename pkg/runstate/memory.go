package runstate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/inplace"
)

// Where the InPlace step's memory is read from.
const (
	// InPlaceMemoryEnv is set by infra on the check function: the inplace
	// function's memory in MB, which Check and Plan hold the limit to.
	InPlaceMemoryEnv = "ROCKLAKE_INPLACE_MEMORY_MB"
	// lambdaMemoryEnv is a Lambda's own memory in MB (the inplace
	// function's, where the InPlace step runs).
	lambdaMemoryEnv = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"
)

// memoryFromEnvironment is the memory of the function that runs InPlace,
// in bytes: InPlaceMemoryEnv, else this Lambda's own; 0 outside a Lambda.
func memoryFromEnvironment() (int64, error) {
	for _, name := range []string{InPlaceMemoryEnv, lambdaMemoryEnv} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		mb, err := strconv.ParseInt(v, 10, 64)
		if err != nil || mb <= 0 {
			return 0, fmt.Errorf("runstate: %s=%q is not a memory size in MB", name, v)
		}
		return mb << 20, nil
	}
	return 0, nil
}

// InPlaceMemoryHolds refuses (ErrInPlaceLimitTooLarge) a limit maxBytes (0:
// the default) whose peak does not fit the memory the InPlace step runs in:
// env.InPlaceMemory, else this machine's (a local run's).
func InPlaceMemoryHolds(env Env, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = inplace.DefaultMaxBytes
	}
	memory, where := env.InPlaceMemory, "the inplace function's memory"
	if memory <= 0 {
		var err error
		if memory, err = machineMemory(); err != nil {
			return fmt.Errorf("%w: the memory this process may use cannot be read (%w), so the in-place limit of %d bytes cannot be checked against it; nothing was touched", ErrInPlaceLimitTooLarge, err, maxBytes)
		}
		where = "this machine's memory"
	}
	if fits := inplace.MaxBytesFor(memory); maxBytes > fits {
		return fmt.Errorf("%w: an in-place limit of %d bytes needs up to %d MiB (%d MiB + %d bytes per byte of the transformed catalog, the undo included), more than %s (%d MiB, a tenth kept spare) holds: at most %d bytes here; nothing was touched: lower in_place_max_bytes or use Strategy B",
			ErrInPlaceLimitTooLarge, maxBytes, inplace.PeakBytes(maxBytes)>>20, inplace.PeakBaseBytes>>20, inplace.PeakPerByte, where, memory>>20, fits)
	}
	return nil
}

// machineMemory is what this process may use: its cgroup's limit (v2), else
// the machine's RAM.
func machineMemory() (int64, error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v := strings.TrimSpace(string(b)); v != "max" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				return n, nil
			}
		}
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("/proc/meminfo has no MemTotal")
}
