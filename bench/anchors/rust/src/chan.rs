// SPDX-License-Identifier: BSL-1.0
//! Channel anchors: crossbeam-channel's bounded flavour in spindle-bench's `channel` scenarios.
//!
//! mpmc: P producers share N messages (producer p sends N/P, the first N%P one more) through
//! `bounded(K)` with the blocking `send`; C consumers `recv` until every sender is dropped and
//! the channel is drained. A message is `(producer << 32) | sequence`, sequences counting from
//! 1, so none is 0. Each consumer keeps per producer the count, sum and xor of the sequences it
//! received, and checks that each producer's sequences rise strictly (crossbeam keeps
//! per-producer FIFO order for every consumer). The run is verified when, for every producer,
//! the counts, sums and xors over all consumers equal what it sent. The clock runs from the
//! start gate to the moment the last consumer has seen the end of the stream.
//!
//! pingpong: two `bounded(1)` channels; one thread sends i on the first and waits for i on the
//! second, an echo thread sends back what it receives. Verified when every round trip brought
//! back the value sent; the figure is nanoseconds per round trip.
//!
//! select: four producer threads each send `--msgs` messages into a `bounded(K)` channel of
//! their own and drop their sender; one receiver thread waits in a `Select` over the four,
//! removing a channel from it once it is disconnected and drained. Verified when every
//! producer's sequences arrived one after the other, each once; the figure is million messages
//! per second from the start gate to the receiver's end.

use crate::{complain, mops, report_messages, report_round_trips, report_run, Options, StartGate};
use crossbeam_channel::{bounded, Receiver, Select, Sender};
use std::sync::Arc;
use std::thread;
use std::time::Instant;

pub fn run(workload: &str, o: &Options) -> bool {
    match workload {
        "mpmc" => mpmc(
            o.count("producers", 4),
            o.count("consumers", 2),
            o.count("messages", 4_000_000),
            o.u64("capacity", 1024),
        ),
        "pingpong" => pingpong(o.count("rounds", 100_000)),
        "select" => select(o.count("msgs", 1_000_000), o.u64("capacity", 1024)),
        _ => return false,
    }
    true
}

/// What one consumer saw from each producer.
struct Tally {
    last: Vec<u64>,
    count: Vec<u64>,
    sum: Vec<u64>,
    bits: Vec<u64>,
    malformed: bool,
    out_of_order: bool,
}

impl Tally {
    fn new(producers: usize) -> Tally {
        Tally {
            last: vec![0; producers],
            count: vec![0; producers],
            sum: vec![0; producers],
            bits: vec![0; producers],
            malformed: false,
            out_of_order: false,
        }
    }

    fn see(&mut self, v: u64) {
        let p = (v >> 32) as usize;
        let seq = v & 0xffff_ffff;
        if p >= self.count.len() || seq == 0 {
            self.malformed = true;
            return;
        }
        if seq <= self.last[p] {
            self.out_of_order = true;
        }
        self.last[p] = seq;
        self.count[p] += 1;
        self.sum[p] = self.sum[p].wrapping_add(seq);
        self.bits[p] ^= seq;
    }
}

/// How many messages producer `p` of `producers` sends when they share `total`.
fn share(total: u64, producers: u64, p: u64) -> u64 {
    total / producers + u64::from(p < total % producers)
}

/// Sends producer `id`'s messages `(id << 32) | seq` for seq in 1..=n with the blocking send.
fn send_sequence(tx: &Sender<u64>, id: u64, n: u64) {
    for seq in 1..=n {
        // send fails only when every receiver is gone, which the receivers never are before
        // the senders.
        tx.send((id << 32) | seq)
            .expect("send on a channel with receivers");
    }
}

/// Checks the consumers' tallies against what each producer sent.
fn verify(tallies: &[Tally], producers: u64, total: u64) -> bool {
    let mut ok = true;
    for t in tallies {
        if t.malformed {
            complain("a consumer received a message no producer sent");
            ok = false;
        }
        if t.out_of_order {
            complain("a consumer received a producer's messages out of order");
            ok = false;
        }
    }
    for p in 0..producers {
        let sent = share(total, producers, p);
        let (mut count, mut sum, mut bits) = (0u64, 0u64, 0u64);
        for t in tallies {
            count += t.count[p as usize];
            sum = sum.wrapping_add(t.sum[p as usize]);
            bits ^= t.bits[p as usize];
        }
        let want_sum = (1..=sent).fold(0u64, |a, s| a.wrapping_add(s));
        let want_bits = (1..=sent).fold(0u64, |a, s| a ^ s);
        if count != sent || sum != want_sum || bits != want_bits {
            complain(&format!(
                "producer {} sent {} messages, the consumers received {}, or different ones",
                p, sent, count
            ));
            ok = false;
        }
    }
    ok
}

fn mpmc(producers: u64, consumers: u64, total: u64, capacity: u64) {
    if total / producers + 1 >= 1 << 32 {
        crate::usage("--messages / --producers must stay below 2^32");
    }
    let (tx, rx): (Sender<u64>, Receiver<u64>) = bounded(capacity as usize);
    let gate = Arc::new(StartGate::new((producers + consumers) as usize));

    let mut consumer_threads = Vec::new();
    for _ in 0..consumers {
        let rx = rx.clone();
        let gate = Arc::clone(&gate);
        consumer_threads.push(thread::spawn(move || {
            let mut tally = Tally::new(producers as usize);
            gate.wait();
            while let Ok(v) = rx.recv() {
                tally.see(v);
            }
            (Instant::now(), tally)
        }));
    }
    let mut producer_threads = Vec::new();
    for p in 0..producers {
        let tx = tx.clone();
        let gate = Arc::clone(&gate);
        producer_threads.push(thread::spawn(move || {
            let n = share(total, producers, p);
            gate.wait();
            send_sequence(&tx, p, n);
            // Dropping `tx` here says "this producer is done"; the last drop disconnects.
        }));
    }
    // The harness's own ends: once they are gone, the channel disconnects when the last
    // producer drops its sender, and the consumers see the end after draining it.
    drop(tx);
    drop(rx);

    let t0 = gate.open();
    for t in producer_threads {
        t.join().expect("producer thread");
    }
    let mut tallies = Vec::new();
    let mut t1 = t0;
    for t in consumer_threads {
        let (finished, tally) = t.join().expect("consumer thread");
        t1 = t1.max(finished);
        tallies.push(tally);
    }
    let s = (t1 - t0).as_secs_f64();
    let ok = verify(&tallies, producers, total);
    report_run(
        "crossbeam-channel",
        "mpmc",
        &[
            ("producers", producers.to_string()),
            ("consumers", consumers.to_string()),
            ("msgs", total.to_string()),
            ("capacity", capacity.to_string()),
        ],
        s,
        &[("mops", mops(total, s))],
        ok,
    );
}

fn pingpong(rounds: u64) {
    let (there_tx, there_rx) = bounded::<u64>(1);
    let (back_tx, back_rx) = bounded::<u64>(1);
    let gate = Arc::new(StartGate::new(2));

    let echo_gate = Arc::clone(&gate);
    let echo = thread::spawn(move || {
        echo_gate.wait();
        let mut echoed = 0u64;
        while let Ok(v) = there_rx.recv() {
            if back_tx.send(v).is_err() {
                break;
            }
            echoed += 1;
        }
        echoed
    });
    let ping_gate = Arc::clone(&gate);
    let ping = thread::spawn(move || {
        ping_gate.wait();
        let mut right = true;
        for i in 1..=rounds {
            there_tx.send(i).expect("the echo thread is alive");
            if back_rx.recv() != Ok(i) {
                right = false;
                break;
            }
        }
        let finished = Instant::now();
        drop(there_tx); // ends the echo loop
        (finished, right)
    });

    let t0 = gate.open();
    let (t1, right) = ping.join().expect("ping thread");
    let echoed = echo.join().expect("echo thread");
    report_round_trips(
        "crossbeam-channel",
        "pingpong",
        &[("rounds", rounds.to_string())],
        rounds,
        (t1 - t0).as_secs_f64(),
        right && echoed == rounds,
    );
}

fn select(per_sender: u64, capacity: u64) {
    const SENDERS: u64 = 4;
    if per_sender >= 1 << 32 {
        crate::usage("--msgs must stay below 2^32");
    }
    let gate = Arc::new(StartGate::new(SENDERS as usize + 1));
    let mut receivers = Vec::new();
    let mut producers = Vec::new();
    for p in 0..SENDERS {
        let (tx, rx) = bounded::<u64>(capacity as usize);
        receivers.push(rx);
        let gate = Arc::clone(&gate);
        producers.push(thread::spawn(move || {
            gate.wait();
            send_sequence(&tx, p, per_sender);
        }));
    }
    let receiver = {
        let gate = Arc::clone(&gate);
        thread::spawn(move || {
            let mut last = vec![0u64; SENDERS as usize];
            let mut right = true;
            let mut sel = Select::new();
            for rx in &receivers {
                sel.recv(rx);
            }
            gate.wait();
            let mut open = SENDERS;
            while open > 0 {
                let op = sel.select();
                let i = op.index();
                match op.recv(&receivers[i]) {
                    Ok(v) => {
                        let (p, seq) = ((v >> 32) as usize, v & 0xffff_ffff);
                        if p != i || seq != last[p] + 1 {
                            right = false;
                        }
                        last[i] = seq;
                    }
                    // Disconnected and drained: this channel leaves the selection.
                    Err(_) => {
                        sel.remove(i);
                        open -= 1;
                    }
                }
            }
            let finished = Instant::now();
            (finished, right && last.iter().all(|&l| l == per_sender))
        })
    };

    let t0 = gate.open();
    for t in producers {
        t.join().expect("producer thread");
    }
    let (t1, ok) = receiver.join().expect("receiver thread");
    report_messages(
        "crossbeam-channel",
        "select",
        &[
            ("senders", SENDERS.to_string()),
            ("per_sender", per_sender.to_string()),
            ("capacity", capacity.to_string()),
        ],
        SENDERS * per_sender,
        (t1 - t0).as_secs_f64(),
        ok,
    );
}
