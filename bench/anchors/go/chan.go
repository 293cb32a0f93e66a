// SPDX-License-Identifier: BSL-1.0

// Channel anchors: a buffered Go channel in spindle-bench's channel scenarios.
//
// mpmc: P producer goroutines share N messages (producer p sends N/P, the first N%P one more)
// through make(chan uint64, K); a goroutine closes the channel once a WaitGroup says every
// producer is done, and C consumer goroutines receive until the channel is closed and drained.
// A message is (producer << 32) | sequence, sequences counting from 1, so none is 0. Each
// consumer keeps per producer the count, sum and xor of the sequences it received and checks
// that each producer's sequences rise strictly (a Go channel is FIFO). The run is verified
// when, for every producer, the counts, sums and xors over all consumers equal what it sent.
// The clock runs from the start gate to the moment the last consumer has seen the close.
//
// pingpong: two channels of capacity 1; one goroutine sends i on the first and waits for i on
// the second, an echo goroutine sends back what it receives. Verified when every round trip
// brought back the value sent; the figure is nanoseconds per round trip.

package main

import (
	"fmt"
	"sync"
	"time"
)

func runChan(workload string, o options) bool {
	switch workload {
	case "mpmc":
		chanMPMC(o.count("producers", 4), o.count("consumers", 2), o.count("messages", 4000000),
			o.uint("capacity", 1024))
	case "pingpong":
		chanPingPong(o.count("rounds", 100000))
	default:
		return false
	}
	return true
}

// tally is what one consumer saw from each producer.
type tally struct {
	last, count, sum, bits []uint64
	malformed, outOfOrder  bool
}

func newTally(producers uint64) *tally {
	return &tally{
		last:  make([]uint64, producers),
		count: make([]uint64, producers),
		sum:   make([]uint64, producers),
		bits:  make([]uint64, producers),
	}
}

func (t *tally) see(v uint64) {
	p := v >> 32
	seq := v & 0xffffffff
	if p >= uint64(len(t.count)) || seq == 0 {
		t.malformed = true
		return
	}
	if seq <= t.last[p] {
		t.outOfOrder = true
	}
	t.last[p] = seq
	t.count[p]++
	t.sum[p] += seq
	t.bits[p] ^= seq
}

// share is how many messages producer p of producers sends when they share total.
func share(total, producers, p uint64) uint64 {
	n := total / producers
	if p < total%producers {
		n++
	}
	return n
}

// verifyTallies checks the consumers' tallies against what each producer sent.
func verifyTallies(tallies []*tally, producers, total uint64) bool {
	ok := true
	for _, t := range tallies {
		if t.malformed {
			complain("a consumer received a message no producer sent")
			ok = false
		}
		if t.outOfOrder {
			complain("a consumer received a producer's messages out of order")
			ok = false
		}
	}
	for p := uint64(0); p < producers; p++ {
		sent := share(total, producers, p)
		var count, sum, bits, wantSum, wantBits uint64
		for _, t := range tallies {
			count += t.count[p]
			sum += t.sum[p]
			bits ^= t.bits[p]
		}
		for s := uint64(1); s <= sent; s++ {
			wantSum += s
			wantBits ^= s
		}
		if count != sent || sum != wantSum || bits != wantBits {
			complain(fmt.Sprintf("producer %d sent %d messages, the consumers received %d, "+
				"or different ones", p, sent, count))
			ok = false
		}
	}
	return ok
}

func chanMPMC(producers, consumers, total, capacity uint64) {
	if total/producers+1 >= 1<<32 {
		usage("--messages / --producers must stay below 2^32")
	}
	ch := make(chan uint64, capacity)
	gate := newStartGate(int(producers + consumers))
	tallies := make([]*tally, consumers)
	finished := make([]time.Time, consumers)
	var producing, consuming sync.WaitGroup
	producing.Add(int(producers))
	consuming.Add(int(consumers))

	for c := uint64(0); c < consumers; c++ {
		go func(c uint64) {
			defer consuming.Done()
			t := newTally(producers)
			gate.wait()
			for v := range ch {
				t.see(v)
			}
			finished[c] = time.Now()
			tallies[c] = t
		}(c)
	}
	for p := uint64(0); p < producers; p++ {
		go func(p uint64) {
			defer producing.Done()
			n := share(total, producers, p)
			gate.wait()
			sendSequence(ch, p, n)
		}(p)
	}
	// The close that ends the consumers' loops, once every producer has sent its last message.
	go func() {
		producing.Wait()
		close(ch)
	}()

	t0 := gate.start()
	consuming.Wait()
	t1 := t0
	for _, f := range finished {
		if f.After(t1) {
			t1 = f
		}
	}
	d := t1.Sub(t0)
	ok := verifyTallies(tallies, producers, total)
	reportRun("go-chan", "mpmc", []field{
		{"producers", num(producers)},
		{"consumers", num(consumers)},
		{"msgs", num(total)},
		{"capacity", num(capacity)},
	}, d, ok, field{"mops", mops(total, d)})
}

func chanPingPong(rounds uint64) {
	there := make(chan uint64, 1)
	back := make(chan uint64, 1)
	gate := newStartGate(2)
	var echoed uint64
	var right bool
	var finished time.Time
	var done sync.WaitGroup
	done.Add(2)

	go func() {
		defer done.Done()
		gate.wait()
		echoed = echo(there, back)
	}()
	go func() {
		defer done.Done()
		gate.wait()
		right = ping(there, back, rounds)
		finished = time.Now()
		close(there) // ends the echo loop
	}()

	t0 := gate.start()
	done.Wait()
	reportRoundTrips("go-chan", "pingpong", []field{{"rounds", num(rounds)}},
		rounds, finished.Sub(t0), right && echoed == rounds)
}
