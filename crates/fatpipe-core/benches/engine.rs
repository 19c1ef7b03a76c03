//! Micro-benchmarks of the hot paths, one group per element: the event queue, a link, a
//! queue discipline, the SACK scoreboard, RACK's per-ACK work and each congestion
//! control's on-ACK path.
//!
//! `cargo bench -p fatpipe-core --bench engine` (divan; add `-- NAME` to filter). Figures
//! are per operation; where a window size is a parameter, the cost per ACK must not grow
//! with it (the brief's rule). Whole-simulation figures come from `fatpipe bench`
//! (docs/benchmarks.md); these say where the time of one packet goes.

use divan::{black_box, Bencher};
use fatpipe_core::cc::{scenario_defaults, AckSample, CcSpec, CcState};
use fatpipe_core::event::{Event, EventQueue, TimerKind};
use fatpipe_core::net::link::{Link, LinkSpec, Offered};
use fatpipe_core::net::queue::QueueSpec;
use fatpipe_core::packet::{Ecn, Packet, PacketKind, SackBlocks};
use fatpipe_core::rng::Rng;
use fatpipe_core::tcp::stack::linux::rack::Rack;
use fatpipe_core::tcp::stack::linux::rtx_queue::RtxQueue;
use fatpipe_core::tcp::stack::rfc::scoreboard::Scoreboard;
use fatpipe_core::time::Time;

fn main() {
    divan::main();
}

const MSS: u64 = 1448;
/// 1 Gb/s serialization of a 1538-byte frame, picoseconds.
const TX_1G_PS: Time = 12_304_000;

fn data_packet(seq: u64) -> Packet {
    Packet {
        flow: 0,
        conn: 0,
        src: 0,
        dst: 3,
        kind: PacketKind::Data,
        seq,
        payload_bytes: MSS as u32,
        ip_bytes: 1500,
        ack: 0,
        window_bytes: 0,
        sack: SackBlocks::default(),
        ts_val: 0,
        ts_ecr: 0,
        retransmission: false,
        ecn: Ecn::default(),
    }
}

/// The event queue on a simulation's mix: `pending` events wait (one arrival per link with
/// packets on it, timers, probes); each step pops the earliest and schedules one
/// replacement a pseudo-random interval later, as a hop or a re-armed timer does. The
/// arity is the parameter (4 is what the simulator uses; 2 is a binary heap).
#[divan::bench(consts = [2, 4, 8], args = [16, 256, 4096])]
fn event_queue_pop_schedule<const D: usize>(bencher: Bencher, pending: usize) {
    let mut rng = Rng::new(1);
    let mut q: EventQueue<D> = EventQueue::default();
    for i in 0..pending {
        q.schedule(rng.next_u64() % 1_000_000_000, Event::LinkArrival(i as u32));
    }
    bencher.bench_local(|| {
        let (t, ev) = q.pop().expect("never empty");
        q.schedule(t + 1 + rng.next_u64() % 100_000_000, ev);
        black_box(t)
    });
}

/// The event queue with TCP timers, as with 100 flows and RED: 117 link arrivals pending
/// and a retransmission timer per flow; each step pops the earliest link arrival and
/// schedules its successor, and one flow in eight moves its timer earlier (a tail loss
/// probe armed in front of the RTO). The timers sit in their own heap, where the move
/// shifts the flow's one entry (`event/timer_heap.rs`; a single heap kept the old entry,
/// stale, and grew with them). The parameter is the number of flows.
#[divan::bench(args = [10, 100, 1000])]
fn event_queue_with_timers(bencher: Bencher, flows: u32) {
    const LINKS: u32 = 117;
    const RTO_PS: u64 = 200_000_000_000;
    let mut rng = Rng::new(1);
    let mut q: EventQueue = EventQueue::default();
    for l in 0..LINKS {
        q.schedule(rng.next_u64() % 1_000_000, Event::LinkArrival(l));
    }
    for f in 0..flows {
        q.schedule(RTO_PS + rng.next_u64() % RTO_PS, Event::Timer(f, TimerKind::Retransmission));
    }
    let mut step = 0u64;
    bencher.bench_local(|| {
        let (t, ev) = q.pop().expect("never empty");
        q.schedule(t + 1 + rng.next_u64() % 1_000_000, ev);
        step += 1;
        if step.is_multiple_of(8) {
            let f = (rng.next_u64() % flows as u64) as u32;
            q.schedule(t + RTO_PS / 2 + rng.next_u64() % 1_000_000, Event::Timer(f, TimerKind::Retransmission));
        }
        black_box(t)
    });
}

fn link_spec(queue: &str) -> LinkSpec {
    serde_json::from_str(&format!(
        r#"{{"name": "bottleneck", "from": 1, "to": 2, "rate_bps": 1000000000, "delay_ps": 50000000000,
            "framing_bytes": 38, "mtu_bytes": 1500, "queue": {queue}}}"#
    ))
    .expect("link spec")
}

const DROPTAIL: &str = r#"{"discipline": "droptail", "limit_packets": 1000}"#;
const RED: &str = r#"{"discipline": "red", "limit_packets": 1000, "max_p": 0.1, "gentle": true,
    "byte_mode": false, "mean_packet_bytes": 1500, "wait": true, "target_delay_ps": 5000000000, "ecn": false}"#;

/// A link at 1 Gb/s, 50 ms: packets offered a little faster than it serializes (so a queue
/// builds and drains), and every packet due at the far end taken off. One iteration = one
/// packet through the link: the whole per-hop cost the simulator pays besides its event.
#[divan::bench(args = ["droptail", "red"])]
fn link_offer_and_arrive(bencher: Bencher, queue: &str) {
    let spec = link_spec(if queue == "red" { RED } else { DROPTAIL });
    let mut link = Link::new(spec, 1);
    let (mut now, mut seq) = (0, 0);
    bencher.bench_local(|| {
        // 10 % above the link rate for 900 packets, then 10 % below: the queue cycles.
        let gap = if (seq / MSS) % 1800 < 900 { TX_1G_PS * 9 / 10 } else { TX_1G_PS * 11 / 10 };
        now += gap;
        while link.next_arrival().is_some_and(|t| t <= now) {
            let t = link.next_arrival().expect("checked");
            black_box(link.pop_arrival(t));
        }
        let pkt = data_packet(seq);
        seq += MSS;
        matches!(link.offer(now, &pkt), Offered::Admitted { .. })
    });
}

/// A queue discipline alone: admit, then depart one packet a serialization later (the
/// link's calls for a packet that waits behind one other).
#[divan::bench(args = ["droptail", "red"])]
fn queue_admit_depart(bencher: Bencher, queue: &str) {
    let spec: QueueSpec = serde_json::from_str(if queue == "red" { RED } else { DROPTAIL }).expect("queue spec");
    let mut q = spec.build(1_000_000_000, Rng::new(1));
    let mut pkt = data_packet(0);
    let mut now = 0;
    bencher.bench_local(|| {
        now += TX_1G_PS;
        let admitted = q.admit(now, &mut pkt, false).is_ok();
        if admitted {
            q.depart(now + TX_1G_PS, pkt.ip_bytes);
        }
        admitted
    });
}

/// The SACK scoreboard in recovery: the first segment of a window of `window` segments was
/// lost; each ACK SACKs the next two segments (delayed ACKs) and the sender asks for the
/// loss boundary and the pipe once. Per-ACK cost must not depend on the window.
#[divan::bench(args = [100, 10_000, 100_000])]
fn scoreboard_sack_ack(bencher: Bencher, window: u64) {
    bencher
        .with_inputs(|| {
            let mut sb = Scoreboard::default();
            sb.start_recovery(0);
            (sb, 1u64)
        })
        .bench_local_refs(|(sb, next)| {
            let snd_max = (window + *next) * MSS;
            let start = *next * MSS;
            *next += 2;
            sb.on_sack_block(MSS, *next * MSS, 0, |a, b| {
                black_box((a, b));
            });
            let lost = sb.loss_boundary(0, MSS, 3, false);
            black_box((start, sb.pipe(0, snd_max, lost)))
        });
}

/// RACK's per-ACK work on the retransmission queue: a window of `window` segments in
/// flight; each ACK cumulatively acknowledges two segments (each delivered segment updates
/// RACK), two new segments are sent, and RACK looks for losses (none: it stops at the
/// first segment sent after the delivered one, so the walk is O(1) per ACK).
#[divan::bench(args = [100, 10_000, 100_000])]
fn rack_per_ack(bencher: Bencher, window: u64) {
    let rtt: Time = 100_000_000_000;
    let mut q = RtxQueue::default();
    let mut rack = Rack::default();
    let (mut now, mut next_seq) = (0, 0);
    for _ in 0..window {
        q.push(next_seq, next_seq + MSS, now);
        next_seq += MSS;
        now += TX_1G_PS;
    }
    let mut una = 0;
    bencher.bench_local(|| {
        now += 2 * TX_1G_PS;
        una += 2 * MSS;
        q.ack_to(una, |seg| rack.on_delivered(now.max(seg.xmit_ps + rtt), seg, Some(rtt)));
        for _ in 0..2 {
            q.push(next_seq, next_seq + MSS, now);
            next_seq += MSS;
        }
        black_box(rack.mark_lost(&mut q, now, 0))
    });
}

/// Each algorithm at the scenario's defaults (its tables' cc-defaults.json) with these
/// parameters changed: the forms the linux profile runs, where Linux has one.
const ALGORITHMS: &[(&str, &str)] = &[
    ("reno", r#"{"byte_counting": true}"#),
    ("cubic", r#"{"variant": "linux", "hystart": "linux"}"#),
    ("bbr", r#"{"variant": "linux"}"#),
    ("vegas", r#"{"variant": "linux", "alpha": 2.0, "beta": 4.0}"#),
    ("westwood", "{}"),
    ("westwood_plus", r#"{"variant": "linux", "byte_counting": true}"#),
    ("highspeed", r#"{"variant": "linux"}"#),
    ("scalable", "{}"),
    ("htcp", "{}"),
    ("bic", "{}"),
    ("fast", "{}"),
    ("griddt", "{}"),
    ("nocc", "{}"),
    ("bbr3", "{}"),
];

/// Each congestion control's on-ACK path in congestion avoidance: an ACK of two segments
/// with an RTT sample and a delivery rate, through `pkts_acked` and then `cong_control`
/// or `cong_avoid`, as the sender calls them. One iteration = one ACK.
#[divan::bench(args = ALGORITHMS.iter().map(|(name, _)| *name))]
fn cc_on_ack(bencher: Bencher, name: &str) {
    let (_, changed) = ALGORITHMS.iter().find(|(n, _)| *n == name).expect("listed");
    let mut cc: serde_json::Value = scenario_defaults(name);
    let changed: serde_json::Map<String, serde_json::Value> = serde_json::from_str(changed).expect("parameters");
    cc.as_object_mut().expect("a table").extend(changed);
    cc["algorithm"] = name.into();
    let spec: CcSpec = serde_json::from_value(cc).expect("cc spec");
    let mut cc = spec.build();
    let mut s = CcState::new(1000, 800, MSS as u32);
    cc.init(&mut s);
    let mut now: Time = 0;
    bencher.bench_local(|| {
        now += 2 * TX_1G_PS;
        let ack = AckSample {
            rtt: Some(100_000_000_000 + now % 1_000_000_000),
            delivery_rate_bps: Some(1_000_000_000),
            prior_in_flight_bytes: s.cwnd as u64 * MSS,
            in_flight_bytes: s.cwnd as u64 * MSS,
            ..AckSample::of_segments(2, MSS as u32)
        };
        s.now = now;
        cc.pkts_acked(&mut s, &ack);
        if cc.has_cong_control() {
            cc.cong_control(&mut s, &ack);
        } else {
            cc.cong_avoid(&mut s, &ack);
        }
        // Keep the window in a band so every iteration is in congestion avoidance.
        if s.cwnd > 2000 {
            s.cwnd = 1000;
        }
        black_box(s.cwnd)
    });
}
