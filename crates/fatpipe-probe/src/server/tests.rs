//! The daemon against hostile peers (issue 23), on loopback: a request it fails on, a flow
//! no scenario may have, silent and never-reading connections, and stopping.

use super::*;
use crate::wire::Conn;
use serde_json::{json, Value};
use std::io::Write;
use std::time::Instant;

/// A ping with this number panics in the session (tests only): the way to reach a panic
/// now that every request is validated.
pub(super) const PANIC_SEQ: u64 = u64::MAX - 23;

fn daemon(configure: impl FnOnce(&mut ServerOptions)) -> Server {
    let mut options = ServerOptions { log: false, ..ServerOptions::default() };
    configure(&mut options);
    Server::start("127.0.0.1:0".parse().unwrap(), options).unwrap()
}

struct Client(Conn);

impl Client {
    /// Connected, the daemon's hello read.
    fn connect(server: &Server) -> Client {
        let mut c = Client(Conn::new(TcpStream::connect(server.address()).unwrap(), 1 << 20).unwrap());
        assert_eq!(c.recv().unwrap()["type"], "hello");
        c
    }

    /// Connected and through the handshake (no secret): welcomed.
    fn welcomed(server: &Server) -> Client {
        let mut c = Client::connect(server);
        c.send(json!({"type": "hello", "software": "test", "nonce": "00", "mac": null}));
        let answer = c.recv().unwrap();
        assert_eq!(answer["type"], "welcome", "{answer}");
        c
    }

    fn send(&mut self, message: Value) {
        self.0.send(&message).unwrap();
    }

    fn recv(&mut self) -> Result<Value, WireError> {
        self.0.read::<Value>(Duration::from_secs(10))
    }

    fn ping(&mut self, seq: u64) -> Result<Value, WireError> {
        self.send(json!({"type": "ping", "seq": seq}));
        self.recv()
    }
}

fn error_code(answer: Result<Value, WireError>) -> String {
    match answer {
        Err(WireError::Remote { code, message }) => format!("{code}: {message}"),
        other => panic!("expected an error line, got {other:?}"),
    }
}

/// Waits up to `seconds` for `done`.
fn within(seconds: f64, mut done: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    while Instant::now() < until {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}

fn udp_sender(rate_bps: u64) -> Value {
    json!({"type": "setup", "test": {"duration_ps": PS_PER_S, "sample_interval_ps": PS_PER_S / 10, "flows": [{
        "spec": {"name": "u", "src": 0, "dst": 1, "start_jitter_ps": 0,
                 "source": {"kind": "udp_cbr", "start_ps": 0, "stop_ps": null, "rate_bps": rate_bps, "payload_bytes": 1472}},
        "sends": true, "tcp": null, "quick_ack": false, "port": null, "peer_udp_port": 9}]}})
}

#[test]
fn a_flow_no_scenario_may_have_is_refused_in_one_line_and_locks_nobody_out() {
    // Before: a UDP sender at 0 b/s panicked the client's thread (a division by zero in
    // UdpSchedule) and its slot was never given back; two such clients locked out a daemon
    // of two slots.
    let server = daemon(|o| o.max_clients = 2);
    for _ in 0..5 {
        let mut c = Client::welcomed(&server);
        c.send(udp_sender(0));
        let e = error_code(c.recv());
        assert_eq!(e, "setup: test.flows[0].spec.source.rate_bps: 0 is not allowed: must be positive");
        // The connection stays usable, and closing it frees its slot.
        assert_eq!(c.ping(1).unwrap()["type"], "pong");
    }
    assert!(within(2.0, || server.stats().clients.load(Ordering::SeqCst) == 0));
    assert_eq!(server.stats().panics.load(Ordering::SeqCst), 0);
    Client::welcomed(&server);
}

#[test]
fn a_panic_in_a_session_is_answered_and_gives_its_slot_back() {
    let server = daemon(|o| o.max_clients = 1);
    for _ in 0..3 {
        let mut c = Client::welcomed(&server);
        let e = error_code(c.ping(PANIC_SEQ));
        assert!(e.starts_with("internal: the daemon failed on this request (test: a panic in a session)"), "{e}");
        assert!(within(2.0, || server.stats().clients.load(Ordering::SeqCst) == 0), "the slot is released");
    }
    assert_eq!(server.stats().panics.load(Ordering::SeqCst), 3);
    let mut c = Client::welcomed(&server);
    assert_eq!(c.ping(2).unwrap()["type"], "pong");
}

#[test]
fn silent_connections_cannot_keep_a_client_from_proving_itself() {
    // Before: 200 silent connections took every slot, and a valid client was refused `busy`
    // for the 10 s of their handshake timeout, again and again.
    let server = daemon(|o| {
        o.max_handshakes = 4;
        o.max_clients = 2;
        o.timeouts.handshake = Duration::from_millis(600);
    });
    let mut silent: Vec<Client> = (0..30).map(|_| Client::connect(&server)).collect();
    // A valid client gets through at once, its handshake closing the oldest silent one.
    let mut c = Client::welcomed(&server);
    assert_eq!(c.ping(1).unwrap()["type"], "pong");
    // The silent ones: all but the newest few closed as `busy`, the rest at the deadline.
    let answers: Vec<String> = silent.iter_mut().map(|s| error_code(s.recv())).collect();
    let busy = answers.iter().filter(|a| a.starts_with("busy: too many connections are in their handshake")).count();
    let late = answers.iter().filter(|a| a.starts_with("timeout: no message for")).count();
    assert!(busy >= 26 && busy + late == 30, "{answers:?}");
    assert!(within(2.0, || server.stats().handshakes.load(Ordering::SeqCst) == 0));
    // Silent connections never took a client slot.
    assert_eq!(server.stats().clients.load(Ordering::SeqCst), 1);
}

#[test]
fn past_the_client_slots_a_proven_client_is_told_busy() {
    let server = daemon(|o| o.max_clients = 1);
    let _first = Client::welcomed(&server);
    let mut second = Client::connect(&server);
    second.send(json!({"type": "hello", "software": "test", "nonce": "00", "mac": null}));
    let e = error_code(second.recv());
    assert_eq!(e, "busy: this daemon serves 1 clients at once and has 1; try again later");
}

#[test]
fn a_client_that_sends_and_never_reads_is_dropped_when_writes_stall() {
    // Before: the daemon's writes had no timeout, and such a client kept its thread for
    // over 80 s (the idle drop never came: it kept sending).
    let server = daemon(|o| o.timeouts.write = Duration::from_millis(300));
    let started = Instant::now();
    // Its pongs fill both socket buffers, the daemon's write stalls past the timeout and it
    // closes the connection.
    let _c = stall_writes(&server);
    assert!(within(10.0, || server.stats().clients.load(Ordering::SeqCst) == 0), "the slot is released");
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// Proves itself, then sends pings until the daemon's answers fill every buffer on the way.
fn stall_writes(server: &Server) -> Client {
    let c = Client::welcomed(server);
    let mut stream = c.0.stream().try_clone().unwrap();
    stream.set_write_timeout(Some(Duration::from_millis(200))).unwrap();
    let pings: Vec<u8> =
        (0..1000).flat_map(|i| format!("{{\"version\":1,\"type\":\"ping\",\"seq\":{i}}}\n").into_bytes()).collect();
    let started = Instant::now();
    while stream.write_all(&pings).is_ok() && started.elapsed() < Duration::from_secs(20) {}
    c
}

#[test]
fn stop_ends_every_session_at_once() {
    let server = daemon(|o| o.timeouts.handshake = Duration::from_secs(30));
    let _silent: Vec<Client> = (0..3).map(|_| Client::connect(&server)).collect();
    let _idle: Vec<Client> = (0..3).map(|_| Client::welcomed(&server)).collect();
    let _stalled = stall_writes(&server);
    assert!(within(2.0, || server.stats().threads.load(Ordering::SeqCst) == 7));
    let started = Instant::now();
    server.stop();
    assert!(server.wait(Duration::from_secs(1)), "stopped within a second");
    assert!(started.elapsed() < Duration::from_secs(1));
}
