// SPDX-License-Identifier: BSL-1.0
//! Deque anchors: crossbeam-deque's LIFO `Worker` (a Chase-Lev deque) and its `Stealer`, in the
//! shapes of spindle-bench's and deque_bench's deque rows. Items are the indices 0..N.
//!
//! owner: one thread pushes 1024 items, then pops them all, until N items have gone through;
//! verified when every pop returns the items in reverse push order and the deque ends empty.
//! The figure counts pushes and pops (2N operations).
//!
//! steal: one owner thread pushes N items and pops one after every fourth push; `--thieves`
//! threads (default 1) steal until the owner has finished pushing and the deque is empty; the
//! owner pops what is left at the end. batch: the same, with each thief taking by
//! `steal_batch_and_pop` into a deque of its own and popping from there. Verified when every
//! index was taken exactly once, by the owner or one thief. The clock runs from the start gate
//! to the moment every thread is done; the figure is items per second.

use crate::{complain, mops, report_run, Options, StartGate};
use crossbeam_deque::{Steal, Stealer, Worker};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

pub fn run(workload: &str, o: &Options) -> bool {
    let items = o.count("items", 10_000_000);
    match workload {
        "owner" => owner(items),
        "steal" => owner_and_thief(items, o.count("thieves", 1), false),
        "batch" => owner_and_thief(items, o.count("thieves", 1), true),
        _ => return false,
    }
    true
}

/// Items the owner pushes before popping them all back in the `owner` scenario.
const OWNER_ROUND: u64 = 1024;

fn owner(items: u64) {
    let worker = Worker::<u64>::new_lifo();
    let mut right = true;
    let t0 = Instant::now();
    let mut next = 0u64;
    while next < items {
        let end = (next + OWNER_ROUND).min(items);
        for i in next..end {
            worker.push(i);
        }
        for i in (next..end).rev() {
            if worker.pop() != Some(i) {
                right = false;
            }
        }
        next = end;
    }
    let s = t0.elapsed().as_secs_f64();
    let ok = right && worker.is_empty();
    if !ok {
        complain("the owner popped a different item than the last one it pushed");
    }
    report_run(
        "crossbeam-deque",
        "owner",
        &[("items", items.to_string())],
        s,
        &[("mops", mops(2 * items, s))],
        ok,
    );
}

/// Marks `v` as taken in `seen`; false when it is out of range or was taken before.
fn take(seen: &mut [u8], v: u64) -> bool {
    match seen.get_mut(v as usize) {
        Some(slot) if *slot == 0 => {
            *slot = 1;
            true
        }
        _ => false,
    }
}

/// The thief's loop: steals (singly or by batches) until the owner is done and the deque is
/// empty. Returns a flag per item, set for those it took, and whether every take was new.
fn thief_loop(
    stealer: Stealer<u64>,
    gate: &StartGate,
    done: &AtomicBool,
    items: u64,
    batch: bool,
) -> (Vec<u8>, bool) {
    let mut seen = vec![0u8; items as usize];
    let mut right = true;
    let local = Worker::<u64>::new_lifo();
    gate.wait();
    loop {
        // Read before the steal: when the owner had finished and the steal then finds the deque
        // empty, nothing more will come.
        let finished = done.load(Ordering::Acquire);
        let got = if batch {
            stealer.steal_batch_and_pop(&local)
        } else {
            stealer.steal()
        };
        match got {
            Steal::Success(v) => {
                right &= take(&mut seen, v);
                while let Some(v) = local.pop() {
                    right &= take(&mut seen, v);
                }
            }
            Steal::Retry => {}
            Steal::Empty => {
                if finished {
                    break;
                }
                std::hint::spin_loop();
            }
        }
    }
    (seen, right)
}

fn owner_and_thief(items: u64, thieves: u64, batch: bool) {
    let worker = Worker::<u64>::new_lifo();
    let gate = Arc::new(StartGate::new(thieves as usize + 1));
    let done = Arc::new(AtomicBool::new(false));

    let mut thief_threads = Vec::new();
    for _ in 0..thieves {
        let stealer = worker.stealer();
        let gate = Arc::clone(&gate);
        let done = Arc::clone(&done);
        thief_threads.push(thread::spawn(move || {
            let r = thief_loop(stealer, &gate, &done, items, batch);
            (Instant::now(), r)
        }));
    }
    let owner = {
        let gate = Arc::clone(&gate);
        let done = Arc::clone(&done);
        thread::spawn(move || {
            let mut seen = vec![0u8; items as usize];
            let mut right = true;
            gate.wait();
            for i in 0..items {
                worker.push(i);
                if i % 4 == 3 {
                    if let Some(v) = worker.pop() {
                        right &= take(&mut seen, v);
                    }
                }
            }
            // Release: a thief's acquire load of `done` sees every push before it.
            done.store(true, Ordering::Release);
            while let Some(v) = worker.pop() {
                right &= take(&mut seen, v);
            }
            (Instant::now(), seen, right)
        })
    };

    let t0 = gate.open();
    let (mut t1, mut taken, mut ok) = owner.join().expect("owner thread");
    let mut stolen = 0usize;
    for t in thief_threads {
        let (end, (seen, right)) = t.join().expect("thief thread");
        t1 = t1.max(end);
        ok &= right;
        stolen += seen.iter().filter(|&&f| f != 0).count();
        for (total, mine) in taken.iter_mut().zip(seen.iter()) {
            *total += mine;
        }
    }
    let s = (t1 - t0).as_secs_f64();
    ok &= taken.iter().all(|&n| n == 1);
    if !ok {
        complain("an item was lost or taken twice");
    }
    report_run(
        "crossbeam-deque",
        if batch { "batch" } else { "steal" },
        &[
            ("items", items.to_string()),
            ("thieves", thieves.to_string()),
            ("stolen", stolen.to_string()),
        ],
        s,
        &[("mops", mops(items, s))],
        ok,
    );
}
