// SPDX-License-Identifier: BSL-1.0

// Synchronisation anchors: Go's sync.Mutex, a buffered-channel semaphore, a capacity-1
// channel as a notification and a channel per receiver as a broadcast, in spindle-bench's sync
// scenarios, with GOMAXPROCS set by --threads (default 2, as spindle-bench's coroutine rows).
// Standard library only.
//
// uncontended: one goroutine locks and unlocks a sync.Mutex --ops times, one step of the
// critical section (below) each time. Figure: ns_per_op. Verified when the state is the one a
// serial run gives.
//
// mutex: --tasks goroutines share --ops Lock/Unlock pairs, each running the critical section,
// 16 steps of a linear congruential generator on the shared state, while it holds the lock.
// The time runs from the first goroutine's start to the last one's end. Figure: mops, million
// lock hand-offs per second. Verified when the state is the one 16 x ops serial steps give and
// the count is ops. sync.Mutex is not FIFO: a running goroutine may take the lock before a
// woken waiter, until a waiter has waited 1 ms (starvation mode).
//
// semaphore: --tasks goroutines share --ops acquire/release pairs of make(chan struct{},
// --permits) (a send acquires, a receive releases); each holder counts itself in and out of a
// shared counter. Figure: mops. Verified when the count is ops and never more than --permits
// held at once.
//
// notify: two goroutines and two make(chan struct{}, 1) used as tokio's Notify is: a
// non-blocking send stores at most one wake-up, a receive waits for it. The pinging goroutine
// writes i into a shared cell, notifies the first and waits on the second; the other waits on
// the first, checks the cell holds i, writes it back negated and notifies the second. Figure:
// ns_per_rtt. Verified when every round trip saw the value sent.
//
// broadcast: one goroutine sends --msgs messages to each of --receivers goroutines over a
// make(chan uint64, --capacity) per receiver (a blocking send into each in turn), each receiver
// receives every one. The time runs from the first goroutine's start to the last receiver's end
// of stream. Figure: mops, million messages sent per second (each delivered to every receiver).
// Verified when every receiver saw 1..msgs in order.

package main

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

func runSync(workload string, o options) bool {
	threads := o.count("threads", 2)
	runtime.GOMAXPROCS(int(threads))
	switch workload {
	case "uncontended":
		syncUncontended(o.count("ops", 10000000), threads)
	case "mutex":
		syncMutex(o.count("tasks", 4), o.count("ops", 1000000), threads)
	case "semaphore":
		syncSemaphore(o.count("tasks", 8), o.count("permits", 4), o.count("ops", 1000000), threads)
	case "notify":
		syncNotify(o.count("rounds", 1000000), threads)
	case "broadcast":
		syncBroadcast(o.count("receivers", 4), o.count("msgs", 1000000), o.count("capacity", 1024),
			threads)
	default:
		return false
	}
	return true
}

// step is one step of the critical section: the same generator as spindle-bench's and
// anchor-rust's.
func step(x uint64) uint64 {
	return x*6364136223846793005 + 1442695040888963407
}

// serial is the state after n steps from 1: what a correct run must end with.
func serial(n uint64) uint64 {
	x := uint64(1)
	for i := uint64(0); i < n; i++ {
		x = step(x)
	}
	return x
}

// (share, in chan.go, splits the ops among the goroutines as it splits messages.)

// guarded is the state a mutex guards: the generator and how many critical sections ran.
type guarded struct {
	mu    sync.Mutex
	x     uint64
	count uint64
}

func syncUncontended(ops, threads uint64) {
	g := &guarded{x: 1}
	t0 := time.Now()
	for i := uint64(0); i < ops; i++ {
		g.mu.Lock()
		g.x = step(g.x)
		g.count++
		g.mu.Unlock()
	}
	d := time.Since(t0)
	ok := g.count == ops && g.x == serial(ops)
	if !ok {
		complain("the mutex lost an update")
	}
	ns := fmt.Sprintf("%.2f", float64(d.Nanoseconds())/float64(ops))
	reportRun("go", "sync-uncontended", []field{{"ops", num(ops)}, {"threads", num(threads)}}, d, ok,
		field{"ns_per_op", ns})
}

func syncMutex(tasks, ops, threads uint64) {
	const steps = 16
	g := &guarded{x: 1}
	var done sync.WaitGroup
	done.Add(int(tasks))
	t0 := time.Now()
	for t := uint64(0); t < tasks; t++ {
		go func(mine uint64) {
			defer done.Done()
			for i := uint64(0); i < mine; i++ {
				g.mu.Lock()
				for s := 0; s < steps; s++ {
					g.x = step(g.x)
				}
				g.count++
				g.mu.Unlock()
			}
		}(share(ops, tasks, t))
	}
	done.Wait()
	d := time.Since(t0)
	g.mu.Lock()
	ok := g.count == ops && g.x == serial(ops*steps)
	g.mu.Unlock()
	if !ok {
		complain("the mutex lost an update (mutual exclusion broken)")
	}
	reportRun("go", "sync-mutex", []field{{"tasks", num(tasks)}, {"ops", num(ops)},
		{"threads", num(threads)}}, d, ok, field{"mops", mops(ops, d)})
}

func syncSemaphore(tasks, permits, ops, threads uint64) {
	sem := make(chan struct{}, permits)
	var holders, most, done int64
	var wg sync.WaitGroup
	wg.Add(int(tasks))
	t0 := time.Now()
	for t := uint64(0); t < tasks; t++ {
		go func(mine uint64) {
			defer wg.Done()
			for i := uint64(0); i < mine; i++ {
				sem <- struct{}{}
				now := atomic.AddInt64(&holders, 1)
				for {
					m := atomic.LoadInt64(&most)
					if now <= m || atomic.CompareAndSwapInt64(&most, m, now) {
						break
					}
				}
				atomic.AddInt64(&holders, -1)
				<-sem
			}
			atomic.AddInt64(&done, int64(mine))
		}(share(ops, tasks, t))
	}
	wg.Wait()
	d := time.Since(t0)
	ok := uint64(done) == ops && uint64(most) <= permits
	if !ok {
		complain(fmt.Sprintf("%d of %d acquisitions, %d permits held at once of %d", done, ops, most,
			permits))
	}
	reportRun("go", "sync-semaphore", []field{{"tasks", num(tasks)}, {"permits", num(permits)},
		{"ops", num(ops)}, {"threads", num(threads)}}, d, ok, field{"mops", mops(ops, d)})
}

// notifyOne stores one wake-up in n unless one is stored already (tokio's notify_one).
func notifyOne(n chan struct{}) {
	select {
	case n <- struct{}{}:
	default:
	}
}

func syncNotify(rounds, threads uint64) {
	there := make(chan struct{}, 1)
	back := make(chan struct{}, 1)
	// The channels order the cell's writes and reads; atomics keep the race detector quiet.
	var cell uint64
	var right, echoed bool
	var elapsed time.Duration
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		echoed = true
		for i := uint64(1); i <= rounds; i++ {
			<-there
			if atomic.LoadUint64(&cell) != i {
				echoed = false
			}
			atomic.StoreUint64(&cell, -i)
			notifyOne(back)
		}
	}()
	go func() {
		defer wg.Done()
		right = true
		t0 := time.Now()
		for i := uint64(1); i <= rounds; i++ {
			atomic.StoreUint64(&cell, i)
			notifyOne(there)
			<-back
			if atomic.LoadUint64(&cell) != -i {
				right = false
			}
		}
		elapsed = time.Since(t0)
	}()
	wg.Wait()
	reportRoundTrips("go", "sync-notify", []field{{"rounds", num(rounds)}, {"threads", num(threads)}},
		rounds, elapsed, right && echoed)
}

func syncBroadcast(receivers, msgs, capacity, threads uint64) {
	chans := make([]chan uint64, receivers)
	for r := range chans {
		chans[r] = make(chan uint64, capacity)
	}
	right := make([]bool, receivers)
	var wg sync.WaitGroup
	wg.Add(int(receivers))
	t0 := time.Now()
	for r := range chans {
		go func(r int) {
			defer wg.Done()
			last := uint64(0)
			ok := true
			for v := range chans[r] {
				ok = ok && v == last+1
				last = v
			}
			right[r] = ok && last == msgs
		}(r)
	}
	go func() {
		for i := uint64(1); i <= msgs; i++ {
			for _, ch := range chans {
				ch <- i
			}
		}
		for _, ch := range chans {
			close(ch)
		}
	}()
	wg.Wait()
	d := time.Since(t0)
	ok := true
	for _, r := range right {
		ok = ok && r
	}
	reportMessages("go", "sync-broadcast", []field{{"receivers", num(receivers)}, {"msgs", num(msgs)},
		{"capacity", num(capacity)}, {"threads", num(threads)}}, msgs, d, ok)
}
