//! The traffic engine on loopback, in the test's own namespace (no privileges needed): the
//! applications that `fatpipe emulate` runs inside namespaces and `fatpipe probe` will run
//! between real hosts.

use fatpipe_core::source::udp::{UdpFlow, UdpSchedule};
use fatpipe_core::source::udp_cbr::UdpCbrConfig;
use fatpipe_core::source::SourceSpec;
use fatpipe_core::time::{Time, PS_PER_MS, PS_PER_S};
use fatpipe_emu::clock::Clock;
use fatpipe_emu::traffic::tcp::{self, TcpListener, TcpOptions, TcpStream, Writer};
use fatpipe_emu::traffic::udp::{self, UdpSocket};
use fatpipe_emu::traffic::{Counters, Schedule};
use std::sync::atomic::{AtomicBool, Ordering};

const LOOPBACK: [u8; 4] = [127, 0, 0, 1];

fn pair(sender: &TcpOptions, receiver: &TcpOptions) -> (TcpStream, TcpStream) {
    let listener = TcpListener::bind(LOOPBACK, 0, receiver).unwrap();
    let port = listener.local_port().unwrap();
    let tx = TcpStream::connect((LOOPBACK, 0), (LOOPBACK, port), sender, PS_PER_S).unwrap();
    let rx = listener.accept(PS_PER_S).unwrap();
    (tx, rx)
}

fn schedule(end_ps: Time) -> Schedule {
    Schedule { clock: Clock::start().shifted(5 * PS_PER_MS), start_ps: 0, stop_ps: None, end_ps }
}

#[test]
fn every_burst_cycle_fails_once_the_receiver_stops_reading() {
    // 256 KB bursts every 20 ms into a 16 KB send buffer toward a receiver that never reads:
    // the first burst cannot be written before the second is due, nor any after it. Bursts
    // at 0, 20, ..., 300 ms: 16, of which every one but the first fails (source/burst.rs).
    let small =
        TcpOptions { snd_buffer_bytes: Some(16 << 10), rcv_buffer_bytes: Some(16 << 10), ..TcpOptions::default() };
    let (tx, _rx) = pair(&small, &small);
    let counters = Counters::default();
    let stop = AtomicBool::new(false);
    let writer = Writer::Burst { burst_bytes: 256_000, period_ps: 20 * PS_PER_MS, carry_over: false };
    tcp::send(&tx, writer, &schedule(300 * PS_PER_MS), &counters, &stop).unwrap();
    assert_eq!(counters.bursts.load(Ordering::Relaxed), 16);
    assert_eq!(counters.failed_cycles.load(Ordering::Relaxed), 15);
    assert!(counters.written.load(Ordering::Relaxed) < 256_000, "nothing drains");
}

#[test]
fn bursts_within_what_the_path_carries_never_fail() {
    let (tx, rx) = pair(&TcpOptions::default(), &TcpOptions::default());
    let (sent, read) = (Counters::default(), Counters::default());
    let stop = AtomicBool::new(false);
    let s = schedule(200 * PS_PER_MS);
    std::thread::scope(|scope| {
        scope.spawn(|| tcp::receive(&rx, None, false, &s, &read, &stop).unwrap());
        let writer = Writer::Burst { burst_bytes: 10_000, period_ps: 10 * PS_PER_MS, carry_over: false };
        tcp::send(&tx, writer, &s, &sent, &stop).unwrap();
    });
    assert_eq!(sent.bursts.load(Ordering::Relaxed), 21, "0, 10, ..., 200 ms");
    assert_eq!(sent.failed_cycles.load(Ordering::Relaxed), 0);
    assert_eq!(sent.written.load(Ordering::Relaxed), 210_000);
}

#[test]
fn a_bulk_writer_stops_after_its_bytes_and_the_reader_gets_them_all() {
    let (tx, rx) = pair(&TcpOptions::default(), &TcpOptions::default());
    let (sent, read) = (Counters::default(), Counters::default());
    let stop = AtomicBool::new(false);
    let s = schedule(500 * PS_PER_MS);
    std::thread::scope(|scope| {
        scope.spawn(|| tcp::receive(&rx, None, false, &s, &read, &stop).unwrap());
        tcp::send(&tx, Writer::Bulk { bytes: Some(3_000_000) }, &s, &sent, &stop).unwrap();
    });
    assert!(sent.writer_done.load(Ordering::Relaxed));
    assert_eq!(sent.written.load(Ordering::Relaxed), 3_000_000);
    assert_eq!(read.read.load(Ordering::Relaxed), 3_000_000);
    assert!(tx.info().unwrap().info.bytes_acked >= 3_000_000);
}

#[test]
fn a_rate_limited_reader_reads_at_its_rate() {
    // 8 Mb/s for 0.5 s: 500 kB (core's AppReader), never more; a little less for wake-ups.
    let (tx, rx) = pair(&TcpOptions::default(), &TcpOptions::default());
    let (sent, read) = (Counters::default(), Counters::default());
    let stop = AtomicBool::new(false);
    let s = schedule(500 * PS_PER_MS);
    std::thread::scope(|scope| {
        scope.spawn(|| tcp::send(&tx, Writer::Bulk { bytes: None }, &s, &sent, &stop).unwrap());
        tcp::receive(&rx, Some(8_000_000), false, &s, &read, &stop).unwrap();
    });
    let got = read.read.load(Ordering::Relaxed);
    assert!((450_000..=500_000 + 1_000_000 / 100).contains(&got), "read {got} bytes");
}

#[test]
fn udp_datagrams_leave_on_the_core_schedule() {
    // CBR 10 Mb/s of 1000-byte payloads until 200 ms: datagram k at 0.8 k ms, 250 of them.
    let rx = UdpSocket::bind(LOOPBACK, 0).unwrap();
    let tx = UdpSocket::bind(LOOPBACK, 0).unwrap();
    tx.connect(LOOPBACK, rx.local_port().unwrap()).unwrap();
    let source = SourceSpec::UdpCbr(UdpCbrConfig {
        start_ps: 0,
        stop_ps: Some(200 * PS_PER_MS),
        rate_bps: 10_000_000,
        payload_bytes: 1000,
    });
    let flow = UdpFlow::new(0, 0, 1, UdpSchedule::of(&source).unwrap(), source.stop_ps(), 1_000_000_000, 38);
    let (sent, got) = (Counters::default(), Counters::default());
    let stop = AtomicBool::new(false);
    let s = schedule(400 * PS_PER_MS);
    std::thread::scope(|scope| {
        scope.spawn(|| udp::receive(&rx, &s, &got, &stop).unwrap());
        udp::send(&tx, flow, &s, &sent, &stop).unwrap();
    });
    assert_eq!(sent.datagrams_sent.load(Ordering::Relaxed), 250);
    assert_eq!(got.datagrams_received.load(Ordering::Relaxed), 250);
    assert_eq!(got.read.load(Ordering::Relaxed), 250_000);
    // The last one left at 199.2 ms: well before the end, not at it.
    let last = got.last_read().unwrap();
    assert!((199 * PS_PER_MS..260 * PS_PER_MS).contains(&last), "{last}");
}
