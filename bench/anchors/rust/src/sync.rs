// SPDX-License-Identifier: BSL-1.0
//! Synchronisation anchors: tokio::sync's Mutex, Semaphore, Notify and broadcast in
//! spindle-bench's `sync` scenarios, tasks on a multi-threaded runtime of `--threads` workers
//! (default 2, as spindle-bench's coroutine rows).
//!
//! uncontended: one task locks and unlocks a `Mutex<u64>` `--ops` times, one step of the
//! critical section (below) each time. Figure: `ns_per_op`. Verified when the state is the
//! one a serial run gives.
//!
//! mutex: `--tasks` tasks share `--ops` lock/unlock pairs (as evenly as they divide), each
//! running the critical section, 16 steps of a linear congruential generator on the shared
//! state, while it holds the lock. The time runs from the first spawn to the last task's end.
//! Figure: `mops`, million lock hand-offs per second. Verified when the state is the one
//! 16 x ops serial steps give (a lost update shows there) and the count is ops.
//!
//! semaphore: `--tasks` tasks share `--ops` acquire/release pairs of a Semaphore of
//! `--permits` permits; each holder counts itself in and out of a shared counter. Figure:
//! `mops`. Verified when the count is ops and never more than `--permits` held at once.
//!
//! notify: two tasks and two Notify, `--rounds` round trips: the pinging task writes i into a
//! shared cell, notify_one()s the first and awaits the second; the other awaits the first,
//! checks the cell holds i, writes it back negated and notifies the second. Figure:
//! `ns_per_rtt`. Verified when every round trip saw the value sent.
//!
//! broadcast: one task sends `--msgs` messages into `broadcast::channel(--capacity)`, each of
//! `--receivers` tasks receives every one. tokio's broadcast never blocks its sender (a
//! receiver that falls `--capacity` behind loses messages, `Lagged`), so the sender takes
//! credits from a Semaphore of `--capacity` per receiver, a quarter of the capacity at a time,
//! and each receiver gives them back a quarter at a time: no receiver falls a capacity behind,
//! and every message reaches every receiver, as with a blocking fan-out. The time runs from
//! the first spawn to the last receiver's end of stream. Figure: `mops`, million messages sent
//! per second (each delivered to every receiver). Verified when every receiver saw 1..msgs in
//! order, none lagged.

use crate::{complain, report_messages, report_round_trips, report_run, Options};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::{broadcast, Mutex, Notify, Semaphore};

pub fn run(workload: &str, o: &Options) -> bool {
    let threads = o.count("threads", 2) as usize;
    match workload {
        "uncontended" => uncontended(o.count("ops", 10_000_000), threads),
        "mutex" => mutex(o.count("tasks", 4), o.count("ops", 1_000_000), threads),
        "semaphore" => semaphore(
            o.count("tasks", 8),
            o.count("permits", 4),
            o.count("ops", 1_000_000),
            threads,
        ),
        "notify" => notify(o.count("rounds", 1_000_000), threads),
        "broadcast" => broadcast_fanout(
            o.count("receivers", 4),
            o.count("msgs", 1_000_000),
            o.count("capacity", 1024),
            threads,
        ),
        _ => return false,
    }
    true
}

fn runtime(threads: usize) -> tokio::runtime::Runtime {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .build()
        .expect("a tokio runtime");
    rt.block_on(async {}); // the runtime is up before the clock starts
    rt
}

/// One step of the critical section: the same generator as spindle-bench's and anchor-go's.
fn step(x: u64) -> u64 {
    x.wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
}

/// The state after `n` steps from 1, computed serially: what a correct run must end with.
fn serial(n: u64) -> u64 {
    let mut x = 1u64;
    for _ in 0..n {
        x = step(x);
    }
    x
}

/// How many of `ops` task `t` of `tasks` does.
fn share(ops: u64, tasks: u64, t: u64) -> u64 {
    ops / tasks + u64::from(t < ops % tasks)
}

/// The guarded state: the generator and how many critical sections ran.
struct State {
    x: u64,
    count: u64,
}

fn uncontended(ops: u64, threads: usize) {
    let rt = runtime(threads);
    let (elapsed, state) = rt.block_on(async move {
        tokio::spawn(async move {
            let m = Mutex::new(State { x: 1, count: 0 });
            let t0 = Instant::now();
            for _ in 0..ops {
                let mut g = m.lock().await;
                g.x = step(g.x);
                g.count += 1;
            }
            let elapsed = t0.elapsed();
            (elapsed, m.into_inner())
        })
        .await
        .expect("the locking task")
    });
    let ok = state.count == ops && state.x == serial(ops);
    if !ok {
        complain("the mutex lost an update");
    }
    let s = elapsed.as_secs_f64();
    let ns = format!("{:.2}", s * 1e9 / ops as f64);
    report_run(
        "tokio",
        "sync-uncontended",
        &[("ops", ops.to_string()), ("threads", threads.to_string())],
        s,
        &[("ns_per_op", ns)],
        ok,
    );
}

fn mutex(tasks: u64, ops: u64, threads: usize) {
    const STEPS: u64 = 16;
    let rt = runtime(threads);
    let (elapsed, state) = rt.block_on(async move {
        let m = Arc::new(Mutex::new(State { x: 1, count: 0 }));
        let t0 = Instant::now();
        let mut handles = Vec::new();
        for t in 0..tasks {
            let m = m.clone();
            let mine = share(ops, tasks, t);
            handles.push(tokio::spawn(async move {
                for _ in 0..mine {
                    let mut g = m.lock().await;
                    for _ in 0..STEPS {
                        g.x = step(g.x);
                    }
                    g.count += 1;
                }
            }));
        }
        for h in handles {
            h.await.expect("a locking task");
        }
        let elapsed = t0.elapsed();
        let g = m.lock().await;
        (
            elapsed,
            State {
                x: g.x,
                count: g.count,
            },
        )
    });
    let ok = state.count == ops && state.x == serial(ops * STEPS);
    if !ok {
        complain("the mutex lost an update (mutual exclusion broken)");
    }
    report_run(
        "tokio",
        "sync-mutex",
        &[
            ("tasks", tasks.to_string()),
            ("ops", ops.to_string()),
            ("threads", threads.to_string()),
        ],
        elapsed.as_secs_f64(),
        &[("mops", crate::mops(ops, elapsed.as_secs_f64()))],
        ok,
    );
}

fn semaphore(tasks: u64, permits: u64, ops: u64, threads: usize) {
    let rt = runtime(threads);
    let (elapsed, done, most) = rt.block_on(async move {
        let sem = Arc::new(Semaphore::new(permits as usize));
        let holders = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicU64::new(0));
        let t0 = Instant::now();
        let mut handles = Vec::new();
        for t in 0..tasks {
            let (sem, holders, most, done) =
                (sem.clone(), holders.clone(), most.clone(), done.clone());
            let mine = share(ops, tasks, t);
            handles.push(tokio::spawn(async move {
                for _ in 0..mine {
                    let permit = sem.acquire().await.expect("the semaphore is open");
                    let now = holders.fetch_add(1, Ordering::Relaxed) + 1;
                    most.fetch_max(now, Ordering::Relaxed);
                    holders.fetch_sub(1, Ordering::Relaxed);
                    drop(permit);
                }
                done.fetch_add(mine, Ordering::Relaxed);
            }));
        }
        for h in handles {
            h.await.expect("an acquiring task");
        }
        let elapsed = t0.elapsed();
        (
            elapsed,
            done.load(Ordering::Relaxed),
            most.load(Ordering::Relaxed),
        )
    });
    let ok = done == ops && most as u64 <= permits;
    if !ok {
        complain(&format!(
            "{} of {} acquisitions, {} permits held at once of {}",
            done, ops, most, permits
        ));
    }
    report_run(
        "tokio",
        "sync-semaphore",
        &[
            ("tasks", tasks.to_string()),
            ("permits", permits.to_string()),
            ("ops", ops.to_string()),
            ("threads", threads.to_string()),
        ],
        elapsed.as_secs_f64(),
        &[("mops", crate::mops(ops, elapsed.as_secs_f64()))],
        ok,
    );
}

fn notify(rounds: u64, threads: usize) {
    let rt = runtime(threads);
    let (elapsed, ok) = rt.block_on(async move {
        let there = Arc::new(Notify::new());
        let back = Arc::new(Notify::new());
        // The cell is written by one side before its notify_one and read by the other after
        // its wait: Notify orders the two, so Relaxed suffices for the value itself.
        let cell = Arc::new(AtomicU64::new(0));
        let (there2, back2, cell2) = (there.clone(), back.clone(), cell.clone());
        let pong = tokio::spawn(async move {
            let mut right = true;
            for i in 1..=rounds {
                there2.notified().await;
                if cell2.load(Ordering::Relaxed) != i {
                    right = false;
                }
                cell2.store(i.wrapping_neg(), Ordering::Relaxed);
                back2.notify_one();
            }
            right
        });
        let ping = tokio::spawn(async move {
            let t0 = Instant::now();
            let mut right = true;
            for i in 1..=rounds {
                cell.store(i, Ordering::Relaxed);
                there.notify_one();
                back.notified().await;
                if cell.load(Ordering::Relaxed) != i.wrapping_neg() {
                    right = false;
                }
            }
            (t0.elapsed(), right)
        });
        let (elapsed, right) = ping.await.expect("ping task");
        let echoed = pong.await.expect("pong task");
        (elapsed, right && echoed)
    });
    report_round_trips(
        "tokio",
        "sync-notify",
        &[
            ("rounds", rounds.to_string()),
            ("threads", threads.to_string()),
        ],
        rounds,
        elapsed.as_secs_f64(),
        ok,
    );
}

fn broadcast_fanout(receivers: u64, msgs: u64, capacity: u64, threads: usize) {
    let rt = runtime(threads);
    let (elapsed, ok) = rt.block_on(async move {
        let (tx, _) = broadcast::channel::<u64>(capacity as usize);
        // The sender's flow control: a semaphore of `capacity` credits per receiver. The
        // sender takes a batch of credits from each before sending a batch of messages, and a
        // receiver gives a batch back each time it has taken one, so no receiver is ever more
        // than `capacity` messages behind (none lags).
        let batch = (capacity / 4).max(1);
        let credits: Arc<Vec<Semaphore>> = Arc::new(
            (0..receivers)
                .map(|_| Semaphore::new(capacity as usize))
                .collect(),
        );
        let t0 = Instant::now();
        let mut handles = Vec::new();
        for r in 0..receivers as usize {
            let mut rx = tx.subscribe();
            let credits = credits.clone();
            handles.push(tokio::spawn(async move {
                let mut last = 0u64;
                let mut right = true;
                loop {
                    match rx.recv().await {
                        Ok(v) => {
                            right &= v == last + 1;
                            last = v;
                            if last % batch == 0 {
                                credits[r].add_permits(batch as usize);
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => break,
                        Err(broadcast::error::RecvError::Lagged(_)) => right = false,
                    }
                }
                right && last == msgs
            }));
        }
        let sender = tokio::spawn(async move {
            for i in 1..=msgs {
                if (i - 1) % batch == 0 {
                    let n = batch.min(msgs - i + 1) as u32;
                    for c in credits.iter() {
                        c.acquire_many(n).await.expect("open").forget();
                    }
                }
                tx.send(i).expect("receivers are alive");
            }
            // tx drops here: each receiver sees Closed after the last message.
        });
        sender.await.expect("the sending task");
        let mut ok = true;
        for h in handles {
            ok &= h.await.expect("a receiving task");
        }
        (t0.elapsed(), ok)
    });
    report_messages(
        "tokio",
        "sync-broadcast",
        &[
            ("receivers", receivers.to_string()),
            ("msgs", msgs.to_string()),
            ("capacity", capacity.to_string()),
            ("threads", threads.to_string()),
        ],
        msgs,
        elapsed.as_secs_f64(),
        ok,
    );
}
