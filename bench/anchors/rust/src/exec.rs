// SPDX-License-Identifier: BSL-1.0
//! Executor anchors: rayon and tokio in spindle-bench's `executor` scenarios. Each run builds
//! its pool of `--threads` workers (default: every processor) before the clock starts.
//!
//! fib (rayon): fib(n) forking at every call with `rayon::join` inside `ThreadPool::install`;
//! verified against fib(n) computed serially after the run.
//!
//! pfor (rayon): `par_iter_mut` over a Vec of n u32 holding data[i] = i, with the body
//! data[i] = data[i] * 3 + 1 (wrapping), as spindle-bench's parallel_for; verified by the sum of
//! the elements.
//!
//! spawn (rayon or tokio, `--runtime`): the main thread, outside the pool, spawns `--tasks`
//! tasks (`ThreadPool::spawn`, `Runtime::spawn`); each counts itself down on a shared counter,
//! and the one that reaches 0 wakes the main thread. The clock runs from the first spawn to the
//! wake-up; verified when the counter ends at exactly 0 after the pool has shut down.

use crate::{complain, mops, report_run, Options};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

pub fn run(workload: &str, o: &Options) -> bool {
    let threads = o.u64("threads", 0) as usize; // 0: the pool's default, one per processor
    let runtime = o.string("runtime", "rayon");
    match (workload, runtime.as_str()) {
        ("fib", "rayon") => fib(o.u64("n", 30), threads),
        ("pfor", "rayon") => pfor(o.count("n", 10_000_000), threads),
        ("spawn", "rayon") => spawn_rayon(o.count("tasks", 1_000_000), threads),
        ("spawn", "tokio") => spawn_tokio(o.count("tasks", 1_000_000), threads),
        _ => return false,
    }
    true
}

fn rayon_pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a rayon thread pool")
}

/// The worker count a run reports: the requested one, or what the pool chose.
fn threads_field(threads: usize) -> String {
    if threads == 0 {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
            .to_string()
    } else {
        threads.to_string()
    }
}

fn fib_join(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| fib_join(n - 1), || fib_join(n - 2));
    a + b
}

fn fib_serial(n: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        let next = a.wrapping_add(b);
        a = b;
        b = next;
    }
    a
}

fn fib(n: u64, threads: usize) {
    if n > 60 {
        crate::usage("--n above 60 would fork for far too long");
    }
    let pool = rayon_pool(threads);
    pool.install(|| {}); // the workers are up before the clock starts
    let t0 = Instant::now();
    let got = pool.install(|| fib_join(n));
    let s = t0.elapsed().as_secs_f64();
    let ok = got == fib_serial(n);
    if !ok {
        complain(&format!("fib({}) came out as {}", n, got));
    }
    report_run(
        "rayon",
        "fib",
        &[("n", n.to_string()), ("threads", threads_field(threads))],
        s,
        &[],
        ok,
    );
}

fn pfor(n: u64, threads: usize) {
    let pool = rayon_pool(threads);
    let mut data: Vec<u32> = (0..n).map(|i| i as u32).collect();
    let want: u64 = (0..n)
        .map(|i| u64::from((i as u32).wrapping_mul(3).wrapping_add(1)))
        .sum();
    pool.install(|| {});
    let t0 = Instant::now();
    pool.install(|| {
        data.par_iter_mut()
            .for_each(|x| *x = x.wrapping_mul(3).wrapping_add(1))
    });
    let s = t0.elapsed().as_secs_f64();
    let got: u64 = data.iter().map(|&x| u64::from(x)).sum();
    let ok = got == want;
    if !ok {
        complain("the elements' checksum differs: an element was skipped or updated twice");
    }
    report_run(
        "rayon",
        "pfor",
        &[("n", n.to_string()), ("threads", threads_field(threads))],
        s,
        &[("mops", mops(n, s))],
        ok,
    );
}

/// Counts tasks down; the task that reaches 0 wakes the waiting thread.
struct Countdown {
    left: AtomicU64,
    zero: Mutex<bool>,
    reached: Condvar,
}

impl Countdown {
    fn new(n: u64) -> Arc<Countdown> {
        Arc::new(Countdown {
            left: AtomicU64::new(n),
            zero: Mutex::new(false),
            reached: Condvar::new(),
        })
    }

    fn count_down(&self) {
        // AcqRel: the task that reaches 0 has seen every other task's decrement.
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            *self.zero.lock().unwrap() = true;
            self.reached.notify_all();
        }
    }

    fn wait(&self) {
        let mut zero = self.zero.lock().unwrap();
        while !*zero {
            zero = self.reached.wait(zero).unwrap();
        }
    }

    fn left(&self) -> u64 {
        self.left.load(Ordering::Acquire)
    }
}

fn report_spawn(name: &str, tasks: u64, threads: usize, s: f64, left: u64) {
    let ok = left == 0;
    if !ok {
        complain("a task ran twice or never");
    }
    report_run(
        name,
        "spawn",
        &[
            ("tasks", tasks.to_string()),
            ("threads", threads_field(threads)),
        ],
        s,
        &[("mops", mops(tasks, s))],
        ok,
    );
}

fn spawn_rayon(tasks: u64, threads: usize) {
    let pool = rayon_pool(threads);
    pool.install(|| {});
    let countdown = Countdown::new(tasks);
    let t0 = Instant::now();
    for _ in 0..tasks {
        let c = Arc::clone(&countdown);
        pool.spawn(move || c.count_down());
    }
    countdown.wait();
    let s = t0.elapsed().as_secs_f64();
    drop(pool);
    report_spawn("rayon", tasks, threads, s, countdown.left());
}

fn spawn_tokio(tasks: u64, threads: usize) {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if threads != 0 {
        builder.worker_threads(threads);
    }
    let rt = builder.build().expect("a tokio runtime");
    rt.block_on(async {}); // the runtime is up before the clock starts
    let countdown = Countdown::new(tasks);
    let t0 = Instant::now();
    for _ in 0..tasks {
        let c = Arc::clone(&countdown);
        // The JoinHandle is dropped: the task runs detached, like rayon's spawn.
        rt.spawn(async move { c.count_down() });
    }
    countdown.wait();
    let s = t0.elapsed().as_secs_f64();
    drop(rt);
    report_spawn("tokio", tasks, threads, s, countdown.left());
}
