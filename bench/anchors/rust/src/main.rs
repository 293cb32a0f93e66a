// SPDX-License-Identifier: BSL-1.0
//! anchor-rust: the Rust anchors of spindle-bench. Each run executes one scenario with one
//! crate and prints one line of `key=value` pairs, the last being `verified=1` when the program
//! checked its own result (`verified=0` and exit status 1 when the check failed).
//!
//!   anchor-rust chan mpmc --producers P --consumers C --messages N --capacity K
//!   anchor-rust chan pingpong --rounds R
//!   anchor-rust chan select --msgs M --capacity K
//!   anchor-rust deque owner --items N
//!   anchor-rust deque steal|batch --items N [--thieves T]
//!   anchor-rust exec fib --n 30 --threads T
//!   anchor-rust exec pfor --n 10000000 --threads T
//!   anchor-rust exec spawn --tasks 1000000 --threads T [--runtime rayon|tokio]
//!   anchor-rust coro pingpong --rounds R --threads T
//!   anchor-rust coro fanin --tasks 10000 --msgs 100 --capacity 1024 --threads T
//!   anchor-rust coro select --msgs 1000000 --capacity 1024 --threads T
//!   anchor-rust coro bcast --receivers R --msgs 1048576 --capacity 1024 --threads T [--paced 1]
//!
//! The threads of a scenario are created first and wait at a start gate; the clock starts when
//! the gate opens, as in spindle-bench, so thread creation is not part of the figure.
//!
//! The synchronisation scenarios (src/sync.rs; tokio::sync):
//!
//!   anchor-rust sync uncontended --ops N --threads T
//!   anchor-rust sync mutex --tasks W --ops N --threads T
//!   anchor-rust sync semaphore --tasks W --permits P --ops N --threads T
//!   anchor-rust sync notify --rounds R --threads T
//!   anchor-rust sync broadcast --receivers R --msgs M --capacity K --threads T

mod chan;
mod coro;
mod deque;
mod exec;
mod sync;

use std::collections::HashMap;
use std::process;
use std::sync::{Barrier, Condvar, Mutex};
use std::time::Instant;

/// The `--key value` options of one run.
pub struct Options {
    values: HashMap<String, String>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut values = HashMap::new();
        let mut it = args.iter();
        while let Some(key) = it.next() {
            let name = key
                .strip_prefix("--")
                .ok_or_else(|| format!("expected --option, got {}", key))?;
            let value = it
                .next()
                .ok_or_else(|| format!("--{} needs a value", name))?;
            values.insert(name.to_string(), value.clone());
        }
        Ok(Options { values })
    }

    /// The unsigned integer option `name`, or `default` when absent; exits on a malformed one.
    pub fn u64(&self, name: &str, default: u64) -> u64 {
        match self.values.get(name) {
            None => default,
            Some(v) => v.replace('_', "").parse().unwrap_or_else(|_| {
                usage(&format!("--{} wants an unsigned integer, got {}", name, v))
            }),
        }
    }

    /// Like `u64`, for counts that must be at least 1.
    pub fn count(&self, name: &str, default: u64) -> u64 {
        let v = self.u64(name, default);
        if v == 0 {
            usage(&format!("--{} must be at least 1", name));
        }
        v
    }

    pub fn string(&self, name: &str, default: &str) -> String {
        self.values
            .get(name)
            .cloned()
            .unwrap_or_else(|| default.to_string())
    }
}

/// Threads wait here until every one is ready, then until the measuring thread opens the gate.
/// The measuring thread reads the clock between the two, so the figure leaves out thread
/// creation and the time the last thread takes to arrive.
pub struct StartGate {
    ready: Barrier,
    open: Mutex<bool>,
    opened: Condvar,
}

impl StartGate {
    /// A gate for `threads` workers and the measuring thread.
    pub fn new(threads: usize) -> StartGate {
        StartGate {
            ready: Barrier::new(threads + 1),
            open: Mutex::new(false),
            opened: Condvar::new(),
        }
    }

    /// Called by each worker: arrive, then wait for the gate to open.
    pub fn wait(&self) {
        self.ready.wait();
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }

    /// Called by the measuring thread: waits for every worker, then opens the gate and returns
    /// the instant the measurement starts.
    pub fn open(&self) -> Instant {
        self.ready.wait();
        let t0 = Instant::now();
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
        t0
    }
}

/// Prints the result line and exits with status 1 when `verified` is false.
fn report(fields: &[(&str, String)], verified: bool) {
    let mut line = String::new();
    for (key, value) in fields {
        line.push_str(key);
        line.push('=');
        line.push_str(value);
        line.push(' ');
    }
    line.push_str(if verified { "verified=1" } else { "verified=0" });
    println!("{}", line);
    if !verified {
        process::exit(1);
    }
}

/// Prints a run's result line in the order every scenario uses: `name`, `workload`, the
/// scenario's own `fields`, `secs` from `s`, then the `figures` derived from it (`mops`,
/// `ns_per_rtt`); exits with status 1 when `verified` is false.
pub fn report_run(
    name: &str,
    workload: &str,
    fields: &[(&str, String)],
    s: f64,
    figures: &[(&str, String)],
    verified: bool,
) {
    let mut line = vec![
        ("name", name.to_string()),
        ("workload", workload.to_string()),
    ];
    line.extend_from_slice(fields);
    line.push(("secs", secs(s)));
    line.extend_from_slice(figures);
    report(&line, verified);
}

/// The tail of a run that passes `count` messages from senders to a receiver that checks them:
/// complains when `ok` is false and reports million messages per second.
pub fn report_messages(
    name: &str,
    workload: &str,
    fields: &[(&str, String)],
    count: u64,
    s: f64,
    ok: bool,
) {
    if !ok {
        complain("a message was lost, duplicated or reordered");
    }
    report_run(name, workload, fields, s, &[("mops", mops(count, s))], ok);
}

/// The tail of a ping-pong run of `rounds` round trips: complains when `ok` is false and
/// reports nanoseconds per round trip.
pub fn report_round_trips(
    name: &str,
    workload: &str,
    fields: &[(&str, String)],
    rounds: u64,
    s: f64,
    ok: bool,
) {
    if !ok {
        complain("ping-pong lost, duplicated or reordered a message");
    }
    let ns_per_rtt = format!("{:.1}", s * 1e9 / rounds as f64);
    report_run(name, workload, fields, s, &[("ns_per_rtt", ns_per_rtt)], ok);
}

/// Seconds as a result field.
fn secs(s: f64) -> String {
    format!("{:.6}", s)
}

/// Million per second as a result field.
pub fn mops(count: u64, s: f64) -> String {
    format!("{:.2}", count as f64 / s / 1e6)
}

/// Reports a failed check on standard error; the caller then reports `verified=0`.
pub fn complain(what: &str) {
    eprintln!("anchor-rust: verification failed: {}", what);
}

pub fn usage(why: &str) -> ! {
    eprintln!("anchor-rust: {}", why);
    eprintln!("usage: anchor-rust chan mpmc|pingpong|select, deque owner|steal|batch,");
    eprintln!("       exec fib|pfor|spawn, coro pingpong|fanin|select|bcast [--option value ...]");
    eprintln!("(the scenarios and options are listed at the top of src/main.rs and in README.md)");
    eprintln!("usage: anchor-rust sync uncontended|mutex|semaphore|notify|broadcast [...]");
    process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        usage("missing scenario");
    }
    let options = Options::parse(&args[3..]).unwrap_or_else(|e| usage(&e));
    let (group, workload) = (args[1].as_str(), args[2].as_str());
    let known = match group {
        "chan" => chan::run(workload, &options),
        "deque" => deque::run(workload, &options),
        "exec" => exec::run(workload, &options),
        "coro" => coro::run(workload, &options),
        "sync" => sync::run(workload, &options),
        _ => false,
    };
    if !known {
        usage(&format!("unknown scenario {} {}", group, workload));
    }
}
