// SPDX-License-Identifier: BSL-1.0

// Executor anchors: goroutines on Go's scheduler in spindle-bench's executor scenarios, with
// GOMAXPROCS set by --threads (default: every processor).
//
// fib: fib(n) forking at every call: one half in a new goroutine, the other in the calling
// one, joined through a channel of capacity 1. Verified against a serial fib.
//
// spawn: the main goroutine starts --tasks goroutines, each counting itself done on a
// WaitGroup, and waits for all of them; the clock runs from the first start to the end of the
// wait. Verified when an atomic counter of the goroutines that ran equals --tasks.

package main

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

func runExec(workload string, o options) bool {
	switch workload {
	case "fib":
		execFib(o.uint("n", 30))
	case "spawn":
		execSpawn(o.count("tasks", 1000000))
	default:
		return false
	}
	return true
}

// gomaxprocs is the threads field: the run's GOMAXPROCS (--threads, or Go's default).
func gomaxprocs() string {
	return num(uint64(runtime.GOMAXPROCS(0)))
}

func fibForked(n uint64) uint64 {
	if n < 2 {
		return n
	}
	other := make(chan uint64, 1)
	go func() { other <- fibForked(n - 2) }()
	a := fibForked(n - 1)
	return a + <-other
}

func fibSerial(n uint64) uint64 {
	var a, b uint64 = 0, 1
	for i := uint64(0); i < n; i++ {
		a, b = b, a+b
	}
	return a
}

func execFib(n uint64) {
	if n > 40 {
		usage("--n above 40 would start far too many goroutines")
	}
	t0 := time.Now()
	got := fibForked(n)
	d := time.Since(t0)
	ok := got == fibSerial(n)
	if !ok {
		complain("fib(" + num(n) + ") came out as " + num(got))
	}
	reportRun("go", "fib", []field{{"n", num(n)}, {"threads", gomaxprocs()}}, d, ok)
}

func execSpawn(tasks uint64) {
	var ran atomic.Uint64
	var all sync.WaitGroup
	all.Add(int(tasks))
	t0 := time.Now()
	for i := uint64(0); i < tasks; i++ {
		go func() {
			ran.Add(1)
			all.Done()
		}()
	}
	all.Wait()
	d := time.Since(t0)
	ok := ran.Load() == tasks
	if !ok {
		complain("a goroutine ran twice or never")
	}
	reportRun("go", "spawn", []field{{"tasks", num(tasks)}, {"threads", gomaxprocs()}}, d, ok,
		field{"mops", mops(tasks, d)})
}
