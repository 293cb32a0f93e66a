// SPDX-License-Identifier: BSL-1.0
//! Coroutine anchors: tokio tasks and `tokio::sync::mpsc` channels in spindle-bench's `coro`
//! and `select` scenarios, on a multi-threaded runtime of `--threads` workers (default 2, as
//! spindle-bench's coroutine rows).
//!
//! pingpong: two tasks pass a counter back and forth over two channels of capacity 1, `--rounds`
//! round trips; the time runs inside the pinging task from its first send to its last receive.
//! Verified when every round trip brought back the value sent.
//!
//! fanin: `--tasks` tasks each send `--msgs` messages into one `channel(--capacity)`, one task
//! receives them all. The time runs from the first spawn to the receiver's end of stream (every
//! sender dropped), so it includes spawning the senders, as in spindle-bench.
//!
//! select: four tasks each send `--msgs` messages into a `channel(--capacity)` of their own and
//! drop their sender; one task receives with `tokio::select!` over the four until every one is
//! closed and drained. The time runs from the first spawn to the receiver's end.
//!
//! bcast: `--receivers` tasks each subscribe to one `tokio::sync::broadcast::channel(--capacity)`
//! and receive until it is closed; the calling thread (outside the runtime, as sync_bench's
//! BM_BroadcastFanOutCoroutines sends from the benchmark thread) sends `--msgs` messages as fast
//! as it can and drops the sender. The time runs from the first spawn to the last receiver's end
//! of stream; `mops` is messages sent per second. A receiver that falls behind is told how many
//! it lost (`Lagged`); `delivered` is the share of the receivers x messages copies received.
//! Verified when each receiver's received and lagged counts add up to the messages sent and the
//! values it received rise. With `--paced 1` the sender waits whenever it is half the capacity
//! ahead of the slowest receiver, so that none lags: the figure is then delivered throughput.
//!
//! A message is `(sender << 32) | sequence`, sequences counting from 1. The receiver checks
//! that each sender's sequences arrive in order, one after the other (tokio's mpsc is FIFO per
//! sender), and the run is verified when every sender's count matches what it sent.

use crate::{report_messages, report_round_trips, Options};
use std::time::Instant;
use tokio::sync::{broadcast, mpsc};

pub fn run(workload: &str, o: &Options) -> bool {
    let threads = o.count("threads", 2) as usize;
    match workload {
        "pingpong" => pingpong(o.count("rounds", 1_000_000), threads),
        "fanin" => fanin(
            o.count("tasks", 10_000),
            o.count("msgs", 100),
            o.count("capacity", 1024),
            threads,
        ),
        "select" => select(
            o.count("msgs", 1_000_000),
            o.count("capacity", 1024),
            threads,
        ),
        "bcast" => bcast(
            o.count("receivers", 4),
            o.count("msgs", 1 << 20),
            o.count("capacity", 1024),
            threads,
            o.u64("paced", 0) != 0,
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

/// What the receiver saw: per sender, the last sequence and the count.
struct InOrder {
    last: Vec<u64>,
    right: bool,
}

impl InOrder {
    fn new(senders: u64) -> InOrder {
        InOrder {
            last: vec![0; senders as usize],
            right: true,
        }
    }

    fn see(&mut self, v: u64) {
        let p = (v >> 32) as usize;
        let seq = v & 0xffff_ffff;
        match self.last.get_mut(p) {
            Some(last) if seq == *last + 1 => *last = seq,
            _ => self.right = false,
        }
    }

    /// Whether every sender's `per_sender` messages arrived, each once and in order.
    fn complete(&self, per_sender: u64) -> bool {
        self.right && self.last.iter().all(|&l| l == per_sender)
    }
}

/// One select branch's result: a message to check, or the end of that channel.
fn deliver(seen: &mut InOrder, open: &mut bool, v: Option<u64>) {
    match v {
        Some(v) => seen.see(v),
        None => *open = false,
    }
}

/// Spawns sender `id`'s task: it sends `(id << 32) | seq` for seq in 1..=n, then drops `tx`,
/// which closes the channel once every other sender is gone too.
fn spawn_sender(tx: mpsc::Sender<u64>, id: u64, n: u64) {
    tokio::spawn(async move {
        for seq in 1..=n {
            tx.send((id << 32) | seq)
                .await
                .expect("the receiver is alive");
        }
    });
}

fn check_per_sender(senders: u64, per_sender: u64) {
    if per_sender >= 1 << 32 || senders >= 1 << 31 {
        crate::usage("--msgs must stay below 2^32");
    }
}

fn pingpong(rounds: u64, threads: usize) {
    let rt = runtime(threads);
    let (elapsed, ok) = rt.block_on(async move {
        let (there_tx, mut there_rx) = mpsc::channel::<u64>(1);
        let (back_tx, mut back_rx) = mpsc::channel::<u64>(1);
        let echo = tokio::spawn(async move {
            let mut echoed = 0u64;
            while let Some(v) = there_rx.recv().await {
                if back_tx.send(v).await.is_err() {
                    break;
                }
                echoed += 1;
            }
            echoed
        });
        let ping = tokio::spawn(async move {
            let t0 = Instant::now();
            let mut right = true;
            for i in 1..=rounds {
                if there_tx.send(i).await.is_err() || back_rx.recv().await != Some(i) {
                    right = false;
                    break;
                }
            }
            (t0.elapsed(), right)
        });
        let (elapsed, right) = ping.await.expect("ping task");
        let echoed = echo.await.expect("echo task");
        (elapsed, right && echoed == rounds)
    });
    report_round_trips(
        "tokio",
        "coro-pingpong",
        &[
            ("rounds", rounds.to_string()),
            ("threads", threads.to_string()),
        ],
        rounds,
        elapsed.as_secs_f64(),
        ok,
    );
}

fn fanin(tasks: u64, per_task: u64, capacity: u64, threads: usize) {
    check_per_sender(tasks, per_task);
    let rt = runtime(threads);
    let (elapsed, ok) = rt.block_on(async move {
        let t0 = Instant::now();
        let (tx, mut rx) = mpsc::channel::<u64>(capacity as usize);
        let receiver = tokio::spawn(async move {
            let mut seen = InOrder::new(tasks);
            while let Some(v) = rx.recv().await {
                seen.see(v);
            }
            (t0.elapsed(), seen.complete(per_task))
        });
        for t in 0..tasks {
            spawn_sender(tx.clone(), t, per_task);
        }
        drop(tx); // the channel closes when the last sender task is done
        receiver.await.expect("receiver task")
    });
    report_messages(
        "tokio",
        "coro-fanin",
        &[
            ("tasks", tasks.to_string()),
            ("per_task", per_task.to_string()),
            ("capacity", capacity.to_string()),
            ("threads", threads.to_string()),
        ],
        tasks * per_task,
        elapsed.as_secs_f64(),
        ok,
    );
}

fn select(per_sender: u64, capacity: u64, threads: usize) {
    const SENDERS: u64 = 4;
    check_per_sender(SENDERS, per_sender);
    let rt = runtime(threads);
    let (elapsed, ok) = rt.block_on(async move {
        let t0 = Instant::now();
        let mut receivers = Vec::new();
        for p in 0..SENDERS {
            let (tx, rx) = mpsc::channel::<u64>(capacity as usize);
            receivers.push(rx);
            spawn_sender(tx, p, per_sender);
        }
        let mut rx3 = receivers.pop().expect("four channels");
        let mut rx2 = receivers.pop().expect("four channels");
        let mut rx1 = receivers.pop().expect("four channels");
        let mut rx0 = receivers.pop().expect("four channels");
        let receiver = tokio::spawn(async move {
            let mut seen = InOrder::new(SENDERS);
            let mut open = [true; 4];
            // A closed channel's branch is disabled by its precondition, as a nil channel
            // leaves a Go select; the loop ends when all four are closed and drained.
            while open.iter().any(|&o| o) {
                tokio::select! {
                    v = rx0.recv(), if open[0] => deliver(&mut seen, &mut open[0], v),
                    v = rx1.recv(), if open[1] => deliver(&mut seen, &mut open[1], v),
                    v = rx2.recv(), if open[2] => deliver(&mut seen, &mut open[2], v),
                    v = rx3.recv(), if open[3] => deliver(&mut seen, &mut open[3], v),
                }
            }
            (t0.elapsed(), seen.complete(per_sender))
        });
        receiver.await.expect("receiver task")
    });
    report_messages(
        "tokio",
        "coro-select",
        &[
            ("senders", SENDERS.to_string()),
            ("per_sender", per_sender.to_string()),
            ("capacity", capacity.to_string()),
            ("threads", threads.to_string()),
        ],
        SENDERS * per_sender,
        elapsed.as_secs_f64(),
        ok,
    );
}

fn bcast(receivers: u64, msgs: u64, capacity: u64, threads: usize, paced: bool) {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let rt = runtime(threads);
    let progress: Arc<Vec<AtomicU64>> = Arc::new((0..receivers).map(|_| AtomicU64::new(0)).collect());
    let t0 = Instant::now();
    let (tx, first) = broadcast::channel::<u64>(capacity as usize);
    let mut handles = Vec::new();
    for k in 0..receivers as usize {
        let mut rx = tx.subscribe();
        let progress = progress.clone();
        handles.push(rt.spawn(async move {
            let (mut received, mut lagged, mut last, mut rising) = (0u64, 0u64, 0u64, true);
            loop {
                match rx.recv().await {
                    Ok(v) => {
                        rising &= received + lagged == 0 || v > last;
                        last = v;
                        received += 1;
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => lagged += n,
                    Err(broadcast::error::RecvError::Closed) => break,
                }
                progress[k].store(received + lagged, Ordering::Relaxed);
            }
            (received, lagged, rising)
        }));
    }
    drop(first);
    for i in 0..msgs {
        if paced && i % 64 == 0 {
            for p in progress.iter() {
                while i - p.load(Ordering::Relaxed) >= capacity / 2 {
                    std::thread::yield_now();
                }
            }
        }
        let _ = tx.send(i);
    }
    drop(tx);
    let (mut ok, mut received) = (true, 0u64);
    for h in handles {
        let (r, l, rising) = rt.block_on(h).expect("receiver task");
        ok &= rising && r + l == msgs;
        received += r;
    }
    let s = t0.elapsed().as_secs_f64();
    if !ok {
        crate::complain("a receiver lost a message without a lag report, or got one out of order");
    }
    let delivered = format!("{:.4}", received as f64 / (receivers * msgs) as f64);
    crate::report_run(
        "tokio",
        "coro-bcast",
        &[
            ("receivers", receivers.to_string()),
            ("msgs", msgs.to_string()),
            ("capacity", capacity.to_string()),
            ("threads", threads.to_string()),
            ("paced", (paced as u8).to_string()),
        ],
        s,
        &[("mops", crate::mops(msgs, s)), ("delivered", delivered)],
        ok,
    );
}
