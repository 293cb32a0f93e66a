// SPDX-License-Identifier: BSL-1.0

// anchor-go: the Go anchors of spindle-bench. Each run executes one scenario and prints one
// line of key=value pairs, the last being verified=1 when the program checked its own result
// (verified=0 and exit status 1 when the check failed). Only the standard library is used.
//
//	anchor-go chan mpmc --producers P --consumers C --messages N --capacity K
//	anchor-go chan pingpong --rounds R
//	anchor-go exec fib --n 30 [--threads T]
//	anchor-go exec spawn --tasks 1000000 [--threads T]
//	anchor-go coro pingpong --rounds R --threads T
//	anchor-go coro fanin --tasks 10000 --msgs 100 --capacity 1024 --threads T
//	anchor-go coro select --msgs 1000000 --capacity 1024 --threads T
//	anchor-go sync uncontended --ops N --threads T
//	anchor-go sync mutex --tasks W --ops N --threads T
//	anchor-go sync semaphore --tasks W --permits P --ops N --threads T
//	anchor-go sync notify --rounds R --threads T
//	anchor-go sync broadcast --receivers R --msgs M --capacity K --threads T
//
// --threads sets GOMAXPROCS; without it Go's default (every processor) applies. The goroutines
// of a scenario are started first and wait at a start gate; the clock starts when the gate
// opens, as in spindle-bench, so goroutine creation is not part of the figure.
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// options holds the --key value pairs of one run.
type options map[string]string

func parseOptions(args []string) options {
	o := options{}
	for i := 0; i < len(args); i += 2 {
		if !strings.HasPrefix(args[i], "--") {
			usage("expected --option, got " + args[i])
		}
		if i+1 >= len(args) {
			usage(args[i] + " needs a value")
		}
		o[strings.TrimPrefix(args[i], "--")] = args[i+1]
	}
	return o
}

// uint returns the unsigned integer option name, or def when absent.
func (o options) uint(name string, def uint64) uint64 {
	v, ok := o[name]
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(strings.ReplaceAll(v, "_", ""), 10, 64)
	if err != nil {
		usage("--" + name + " wants an unsigned integer, got " + v)
	}
	return n
}

// count is uint for counts that must be at least 1.
func (o options) count(name string, def uint64) uint64 {
	n := o.uint(name, def)
	if n == 0 {
		usage("--" + name + " must be at least 1")
	}
	return n
}

// startGate holds goroutines until every one is ready and the measuring goroutine opens it.
// The measuring goroutine reads the clock between the two, so the figure leaves out goroutine
// creation and the time the last one takes to arrive.
type startGate struct {
	ready sync.WaitGroup
	open  chan struct{}
}

func newStartGate(workers int) *startGate {
	g := &startGate{open: make(chan struct{})}
	g.ready.Add(workers)
	return g
}

// wait is called by each worker: arrive, then wait for the gate to open.
func (g *startGate) wait() {
	g.ready.Done()
	<-g.open
}

// start is called by the measuring goroutine: it waits for every worker, then opens the gate
// and returns the instant the measurement starts.
func (g *startGate) start() time.Time {
	g.ready.Wait()
	t0 := time.Now()
	close(g.open)
	return t0
}

// field is one key=value pair of the result line.
type field struct {
	key, value string
}

// report prints the result line and exits with status 1 when verified is false.
func report(fields []field, verified bool) {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f.key + "=" + f.value + " ")
	}
	if verified {
		b.WriteString("verified=1")
	} else {
		b.WriteString("verified=0")
	}
	fmt.Println(b.String())
	if !verified {
		os.Exit(1)
	}
}

// reportRun prints a run's result line in the order every scenario uses: name, workload, the
// scenario's own fields, secs from d, then the figures derived from d (mops, ns_per_rtt).
func reportRun(name, workload string, fields []field, d time.Duration, ok bool, figures ...field) {
	line := append([]field{{"name", name}, {"workload", workload}}, fields...)
	line = append(line, field{"secs", secs(d)})
	report(append(line, figures...), ok)
}

// reportMessages is the tail of a run that passes count messages from senders to a receiver
// that checks them: it complains when ok is false and reports million messages per second.
func reportMessages(name, workload string, fields []field, count uint64, d time.Duration, ok bool) {
	if !ok {
		complain("a message was lost, duplicated or reordered")
	}
	reportRun(name, workload, fields, d, ok, field{"mops", mops(count, d)})
}

// reportRoundTrips is the tail of a ping-pong run of rounds round trips: it complains when ok
// is false and reports nanoseconds per round trip.
func reportRoundTrips(name, workload string, fields []field, rounds uint64, d time.Duration, ok bool) {
	if !ok {
		complain("ping-pong lost, duplicated or reordered a message")
	}
	nsPerRtt := strconv.FormatFloat(float64(d.Nanoseconds())/float64(rounds), 'f', 1, 64)
	reportRun(name, workload, fields, d, ok, field{"ns_per_rtt", nsPerRtt})
}

// sendSequence sends sender id's messages (id << 32) | seq for seq = 1..n into ch, the shape
// every receiver checks: sequences count from 1 and rise by one.
func sendSequence(ch chan<- uint64, id, n uint64) {
	for seq := uint64(1); seq <= n; seq++ {
		ch <- id<<32 | seq
	}
}

// ping is the pinging side of a ping-pong run: it sends 1..rounds on there, each time waiting
// for the same value on back, and says whether every one came back; it stops at the first that
// did not. The caller closes there, after reading the clock.
func ping(there chan<- uint64, back <-chan uint64, rounds uint64) bool {
	for i := uint64(1); i <= rounds; i++ {
		there <- i
		if <-back != i {
			return false
		}
	}
	return true
}

// echo is the other side: it sends back whatever arrives on there until there is closed, and
// returns how many it echoed.
func echo(there <-chan uint64, back chan<- uint64) uint64 {
	var echoed uint64
	for v := range there {
		back <- v
		echoed++
	}
	return echoed
}

func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 6, 64)
}

func mops(count uint64, d time.Duration) string {
	return strconv.FormatFloat(float64(count)/d.Seconds()/1e6, 'f', 2, 64)
}

func num(n uint64) string {
	return strconv.FormatUint(n, 10)
}

// complain reports a failed check on standard error; the caller then reports verified=0.
func complain(what string) {
	fmt.Fprintln(os.Stderr, "anchor-go: verification failed: "+what)
}

func usage(why string) {
	fmt.Fprintln(os.Stderr, "anchor-go: "+why)
	fmt.Fprintln(os.Stderr, "usage: anchor-go chan mpmc|pingpong, exec fib|spawn,")
	fmt.Fprintln(os.Stderr, "       coro pingpong|fanin|select,")
	fmt.Fprintln(os.Stderr, "       sync uncontended|mutex|semaphore|notify|broadcast [--option value ...]")
	fmt.Fprintln(os.Stderr, "(the options are listed at the top of main.go and in README.md)")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 3 {
		usage("missing scenario")
	}
	o := parseOptions(os.Args[3:])
	if _, ok := o["threads"]; ok {
		runtime.GOMAXPROCS(int(o.count("threads", 1)))
	}
	known := false
	switch os.Args[1] {
	case "chan":
		known = runChan(os.Args[2], o)
	case "exec":
		known = runExec(os.Args[2], o)
	case "coro":
		known = runCoro(os.Args[2], o)
	case "sync":
		known = runSync(os.Args[2], o)
	}
	if !known {
		usage("unknown scenario " + os.Args[1] + " " + os.Args[2])
	}
}
