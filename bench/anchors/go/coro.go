// SPDX-License-Identifier: BSL-1.0

// Coroutine anchors: goroutines and channels in spindle-bench's coro and select scenarios,
// with GOMAXPROCS set by --threads (default 2, as spindle-bench's coroutine rows).
//
// pingpong: two goroutines pass a counter back and forth over two channels of capacity 1,
// --rounds round trips; the time runs inside the pinging goroutine from its first send to its
// last receive. Verified when every round trip brought back the value sent.
//
// fanin: --tasks goroutines each send --msgs messages into one make(chan uint64, --capacity),
// one goroutine receives them all; a WaitGroup closes the channel after the last sender. The
// time runs from the first spawn to the receiver's end of stream, so it includes starting the
// senders, as in spindle-bench.
//
// select: four goroutines each send --msgs messages into a channel of their own (capacity
// --capacity) and close it; one goroutine receives with a select over the four, setting a
// closed channel to nil so that its case is never ready again, until all four are closed.
// The time runs from the first spawn to the receiver's end.
//
// A message is (sender << 32) | sequence, sequences counting from 1. The receiver checks that
// each sender's sequences arrive in order, one after the other, and the run is verified when
// every sender's count matches what it sent.

package main

import (
	"runtime"
	"sync"
	"time"
)

func runCoro(workload string, o options) bool {
	threads := o.count("threads", 2)
	runtime.GOMAXPROCS(int(threads))
	switch workload {
	case "pingpong":
		coroPingPong(o.count("rounds", 1000000), threads)
	case "fanin":
		coroFanIn(o.count("tasks", 10000), o.count("msgs", 100), o.uint("capacity", 1024), threads)
	case "select":
		coroSelect(o.count("msgs", 1000000), o.uint("capacity", 1024), threads)
	default:
		return false
	}
	return true
}

// inOrder is what a receiver saw: per sender, the last sequence.
type inOrder struct {
	last  []uint64
	right bool
}

func newInOrder(senders uint64) *inOrder {
	return &inOrder{last: make([]uint64, senders), right: true}
}

func (s *inOrder) see(v uint64) {
	p := v >> 32
	seq := v & 0xffffffff
	if p >= uint64(len(s.last)) || seq != s.last[p]+1 {
		s.right = false
		return
	}
	s.last[p] = seq
}

// complete says whether every sender's perSender messages arrived, each once and in order.
func (s *inOrder) complete(perSender uint64) bool {
	if !s.right {
		return false
	}
	for _, l := range s.last {
		if l != perSender {
			return false
		}
	}
	return true
}

// deliver is one select case's result: a message to check, or, when the channel is closed and
// drained, the end of that channel, which leaves the select by becoming nil.
func (s *inOrder) deliver(ch *chan uint64, open *int, v uint64, ok bool) {
	if ok {
		s.see(v)
	} else {
		*ch = nil
		*open--
	}
}

func checkPerSender(perSender uint64) {
	if perSender >= 1<<32 {
		usage("--msgs must stay below 2^32")
	}
}

func coroPingPong(rounds, threads uint64) {
	there := make(chan uint64, 1)
	back := make(chan uint64, 1)
	var echoed uint64
	var right bool
	var elapsed time.Duration
	var done sync.WaitGroup
	done.Add(2)

	go func() {
		defer done.Done()
		echoed = echo(there, back)
	}()
	go func() {
		defer done.Done()
		t0 := time.Now()
		right = ping(there, back, rounds)
		elapsed = time.Since(t0)
		close(there) // ends the echo loop
	}()
	done.Wait()
	ok := right && echoed == rounds
	reportRoundTrips("go", "coro-pingpong", []field{{"rounds", num(rounds)}, {"threads", num(threads)}},
		rounds, elapsed, ok)
}

func coroFanIn(tasks, perTask, capacity, threads uint64) {
	checkPerSender(perTask)
	t0 := time.Now()
	ch := make(chan uint64, capacity)
	var sending sync.WaitGroup
	sending.Add(int(tasks))
	result := make(chan bool)
	var elapsed time.Duration
	go func() {
		seen := newInOrder(tasks)
		for v := range ch {
			seen.see(v)
		}
		elapsed = time.Since(t0)
		result <- seen.complete(perTask)
	}()
	for t := uint64(0); t < tasks; t++ {
		go func(t uint64) {
			defer sending.Done()
			sendSequence(ch, t, perTask)
		}(t)
	}
	// The close that ends the receiver's loop, once every sender has sent its last message.
	go func() {
		sending.Wait()
		close(ch)
	}()
	// The receive comes first: elapsed is written before the result is sent.
	ok := <-result
	reportMessages("go", "coro-fanin", []field{
		{"tasks", num(tasks)},
		{"per_task", num(perTask)},
		{"capacity", num(capacity)},
		{"threads", num(threads)},
	}, tasks*perTask, elapsed, ok)
}

func coroSelect(perSender, capacity, threads uint64) {
	const senders = 4
	checkPerSender(perSender)
	t0 := time.Now()
	var chans [senders]chan uint64
	for p := range chans {
		chans[p] = make(chan uint64, capacity)
		go func(p uint64, ch chan<- uint64) {
			sendSequence(ch, p, perSender)
			close(ch)
		}(uint64(p), chans[p])
	}
	result := make(chan bool)
	var elapsed time.Duration
	go func() {
		seen := newInOrder(senders)
		c0, c1, c2, c3 := chans[0], chans[1], chans[2], chans[3]
		for open := senders; open > 0; {
			// A receive from a nil channel is never ready: a closed channel leaves the select.
			select {
			case v, ok := <-c0:
				seen.deliver(&c0, &open, v, ok)
			case v, ok := <-c1:
				seen.deliver(&c1, &open, v, ok)
			case v, ok := <-c2:
				seen.deliver(&c2, &open, v, ok)
			case v, ok := <-c3:
				seen.deliver(&c3, &open, v, ok)
			}
		}
		elapsed = time.Since(t0)
		result <- seen.complete(perSender)
	}()
	// The receive comes first: elapsed is written before the result is sent.
	ok := <-result
	reportMessages("go", "coro-select", []field{
		{"senders", num(senders)},
		{"per_sender", num(perSender)},
		{"capacity", num(capacity)},
		{"threads", num(threads)},
	}, senders*perSender, elapsed, ok)
}
