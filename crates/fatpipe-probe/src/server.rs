//! `fatpipe probe serve`: the daemon. One thread per client, one test at a time per client,
//! several clients at once. It binds to loopback unless told otherwise, opens data sockets
//! only for a client's test and only on ports it owns, stops every test by itself at the
//! test's end (plus a grace), and answers a misbehaving client with an error line and
//! closes that connection, never affecting the others.

use crate::auth;
use crate::end::End;
use crate::ports::PortPool;
use crate::protocol::{HostInfo, TestSetup, ToClient, ToDaemon};
use crate::wire::{Conn, WireError};
use crate::{ip_of, MAX_CLIENT_MESSAGE_BYTES, SOFTWARE};
use fatpipe_core::time::{Time, PS_PER_S};
use fatpipe_emu::clock::Clock;
use std::collections::VecDeque;
use std::net::{Shutdown, SocketAddrV4, TcpListener, TcpStream};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long each stage of a session may take. The defaults are the documented ones
/// (docs/probe.md); tests shorten them.
#[derive(Clone, Debug)]
pub struct Timeouts {
    /// A new connection has this long to say hello and prove the secret: an unauthenticated
    /// peer holds a handshake slot (`ServerOptions::max_handshakes`) at most this long.
    pub handshake: Duration,
    /// An authenticated client that sends nothing for this long is disconnected.
    pub idle: Duration,
    /// After `ready`, the client has this long to connect and say `start`.
    pub start: Duration,
    /// A message to a client not written within this long (plus a second per megabyte: a
    /// client that sends and never reads, whose socket buffers are full) ends its session.
    pub write: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            handshake: Duration::from_secs(5),
            idle: Duration::from_secs(60),
            start: Duration::from_secs(30),
            write: Duration::from_secs(10),
        }
    }
}

/// The latest a test may begin after its `start` arrives.
const MAX_START_DELAY_PS: Time = 30 * PS_PER_S;
/// A wrong secret is answered after this pause: guessing a weak secret goes slowly.
const AUTH_FAILURE_DELAY: Duration = Duration::from_millis(500);
/// How often a waiting thread looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);
/// The longest line an unauthenticated peer may send: a hello is about 200 bytes. Only an
/// authenticated client may send up to `MAX_CLIENT_MESSAGE_BYTES`.
const MAX_HELLO_BYTES: usize = 4096;

#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Clients must prove they know this (auth.rs); None: anyone who reaches the daemon.
    pub secret: Option<Vec<u8>>,
    /// The data ports the daemon owns; None: free ports the kernel picks.
    pub data_ports: Option<(u16, u16)>,
    /// The longest test the daemon runs.
    pub max_duration_ps: Time,
    /// Authenticated clients served at once; more are refused with an error line.
    pub max_clients: usize,
    /// Connections still in their handshake at once, a budget of their own: a new one past
    /// it closes the oldest (answered `busy`), so silent connections can neither hold
    /// client slots nor keep a new client from proving itself.
    pub max_handshakes: usize,
    pub timeouts: Timeouts,
    /// One line on stderr per client event.
    pub log: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            secret: None,
            data_ports: None,
            max_duration_ps: 3600 * PS_PER_S,
            max_clients: 64,
            max_handshakes: 16,
            timeouts: Timeouts::default(),
            log: true,
        }
    }
}

/// Counts a test can read (clients now, and since the start).
#[derive(Debug, Default)]
pub struct Stats {
    /// Authenticated clients now.
    pub clients: AtomicUsize,
    /// Connections in their handshake now (at most `max_handshakes`).
    pub handshakes: AtomicUsize,
    /// Threads serving a connection now (either kind).
    pub threads: AtomicUsize,
    pub connections: AtomicU64,
    pub tests_run: AtomicU64,
    /// Connections refused: clients past `max_clients`, handshakes closed for a newer one.
    pub refused: AtomicU64,
    /// Sessions that ended in a panic (answered `internal`; their slot released).
    pub panics: AtomicU64,
}

/// A count held while something exists: incremented when made, decremented when dropped,
/// on every way out of a thread, a panic's unwinding included.
struct Held<'a>(&'a AtomicUsize);

impl<'a> Held<'a> {
    /// Takes one of `limit` places, or None if all are taken.
    fn within(counter: &'a AtomicUsize, limit: usize) -> Option<Held<'a>> {
        counter
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n < limit).then_some(n + 1))
            .ok()
            .map(|_| Held(counter))
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A connection in its handshake, as the accept loop sees it: closing its read side wakes
/// its thread, which answers `busy` (the flag says why) and ends.
struct Pending {
    id: u64,
    stream: TcpStream,
    evicted: Arc<AtomicBool>,
}

struct Context {
    options: ServerOptions,
    pool: Arc<PortPool>,
    stop: Arc<AtomicBool>,
    stats: Arc<Stats>,
    /// The connections in their handshake, oldest first.
    pending: Mutex<VecDeque<Pending>>,
}

impl Context {
    /// Registers a new connection's handshake; past the budget, closes the oldest.
    fn admit(&self, id: u64, stream: &TcpStream) -> Arc<AtomicBool> {
        let evicted = Arc::new(AtomicBool::new(false));
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        while pending.len() >= self.options.max_handshakes.max(1) {
            let Some(old) = pending.pop_front() else { break };
            old.evicted.store(true, Ordering::SeqCst);
            let _ = old.stream.shutdown(Shutdown::Read);
            self.stats.refused.fetch_add(1, Ordering::Relaxed);
        }
        if let Ok(clone) = stream.try_clone() {
            pending.push_back(Pending { id, stream: clone, evicted: evicted.clone() });
        }
        self.stats.handshakes.store(pending.len(), Ordering::SeqCst);
        evicted
    }

    /// The handshake of connection `id` is over; false if it had been closed for a newer one.
    fn settle(&self, id: u64) -> bool {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        match pending.iter().position(|p| p.id == id) {
            Some(i) => {
                pending.remove(i);
                self.stats.handshakes.store(pending.len(), Ordering::SeqCst);
                true
            }
            None => false,
        }
    }

    /// Wakes every thread still in a handshake (the daemon stops).
    fn close_pending(&self) {
        let pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        for p in pending.iter() {
            let _ = p.stream.shutdown(Shutdown::Read);
        }
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

pub struct Server {
    address: SocketAddrV4,
    stop: Arc<AtomicBool>,
    stats: Arc<Stats>,
    pool: Arc<PortPool>,
    accept: Option<JoinHandle<()>>,
}

/// A failure in a client's session: answered with an error line; `fatal` closes the
/// connection (after a protocol violation nothing more from it can be trusted).
struct Failure {
    code: &'static str,
    message: String,
    fatal: bool,
}

fn fatal(code: &'static str, message: impl Into<String>) -> Failure {
    Failure { code, message: message.into(), fatal: true }
}

impl From<WireError> for Failure {
    fn from(e: WireError) -> Failure {
        let code = match &e {
            WireError::Closed => "closed",
            WireError::Timeout => "timeout",
            WireError::TooLong(_) => "too_long",
            WireError::Malformed(_) => "malformed",
            WireError::Version(_) => "version",
            WireError::Remote { .. } => "client_error",
            WireError::Io(_) => "io",
        };
        fatal(code, e.to_string())
    }
}

impl Server {
    /// Binds the control socket and starts serving on a thread.
    pub fn start(bind: SocketAddrV4, options: ServerOptions) -> Result<Server, String> {
        if let Some((lo, hi)) = options.data_ports {
            if lo == 0 || lo > hi {
                return Err(format!("data ports {lo}-{hi}: give LOW-HIGH with 1 <= LOW <= HIGH"));
            }
        }
        let listener = TcpListener::bind(bind).map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        listener.set_nonblocking(true).map_err(|e| e.to_string())?;
        let address = match listener.local_addr() {
            Ok(std::net::SocketAddr::V4(a)) => a,
            _ => return Err(format!("{bind}: not an IPv4 address")),
        };
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(Stats::default());
        let pool = Arc::new(PortPool::new(options.data_ports));
        let ctx = Arc::new(Context {
            options,
            pool: pool.clone(),
            stop: stop.clone(),
            stats: stats.clone(),
            pending: Mutex::new(VecDeque::new()),
        });
        let accept = std::thread::Builder::new()
            .name("probe-accept".into())
            .spawn(move || accept_loop(listener, ctx))
            .map_err(|e| e.to_string())?;
        Ok(Server { address, stop, stats, pool, accept: Some(accept) })
    }

    /// Where it listens (the port the kernel chose for port 0).
    pub fn address(&self) -> SocketAddrV4 {
        self.address
    }

    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Data ports some test holds now.
    pub fn ports_held(&self) -> Vec<u16> {
        self.pool.held()
    }

    /// Stops accepting and ends every client's session (their tests stop).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    /// Waits up to `timeout` for the server to stop; true once it has.
    pub fn wait(&self, timeout: Duration) -> bool {
        let until = std::time::Instant::now() + timeout;
        loop {
            if self.accept.as_ref().is_none_or(|h| h.is_finished()) && self.stats.threads.load(Ordering::SeqCst) == 0 {
                return true;
            }
            if std::time::Instant::now() >= until {
                return false;
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

fn accept_loop(listener: TcpListener, ctx: Arc<Context>) {
    let mut next_id = 0u64;
    while !ctx.stopping() {
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(POLL);
                continue;
            }
            Err(e) => {
                // Out of descriptors, for instance: wait and go on serving.
                log(&ctx, "-", &format!("accept failed: {e}"));
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let _ = stream.set_nonblocking(false);
        ctx.stats.connections.fetch_add(1, Ordering::Relaxed);
        next_id += 1;
        let (id, who) = (next_id, peer.to_string());
        let evicted = ctx.admit(id, &stream);
        let ctx2 = ctx.clone();
        // The thread's count is taken here, before it runs, so that `wait` never sees zero
        // while a thread is starting; the thread releases it however it ends.
        ctx.stats.threads.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new().name("probe-client".into()).spawn(move || {
            let _thread = Held(&ctx2.stats.threads);
            serve_client(stream, &who, id, &evicted, &ctx2);
            ctx2.settle(id);
        });
        if spawned.is_err() {
            ctx.stats.threads.fetch_sub(1, Ordering::SeqCst);
            ctx.settle(id);
            log(&ctx, &peer.to_string(), "refused: cannot start a thread");
        }
    }
    ctx.close_pending();
}

fn log(ctx: &Context, who: &str, what: &str) {
    if ctx.options.log {
        eprintln!("fatpipe probe: {who}: {what}");
    }
}

/// Serves one connection: its handshake, then its requests. A panic anywhere in the session
/// is caught here and answered with an error line; the slot it held is released on the way
/// out (`Held`), so a request the daemon fails on cannot lock other clients out.
fn serve_client(stream: TcpStream, who: &str, id: u64, evicted: &AtomicBool, ctx: &Context) {
    let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr()) else { return };
    let (Some(local_ip), Some(peer_ip)) = (ip_of(local), ip_of(peer)) else { return };
    let Ok(mut conn) = Conn::new(stream, MAX_HELLO_BYTES) else { return };
    // Writes time out too: a client that never reads cannot hold its thread for ever.
    conn.set_write_timeout(ctx.options.timeouts.write, ctx.stop.clone());
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| session(&mut conn, who, id, local_ip, peer_ip, ctx)));
    let outcome = outcome.unwrap_or_else(|panic| {
        ctx.stats.panics.fetch_add(1, Ordering::Relaxed);
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Err(fatal(
            "internal",
            format!("the daemon failed on this request ({what}); this is a bug in fatpipe, please report it"),
        ))
    });
    match outcome {
        Ok(()) => log(ctx, who, "closed"),
        Err(_) if evicted.load(Ordering::SeqCst) => {
            conn.send_error(
                "busy",
                "too many connections are in their handshake at once: this one was closed for a newer one; try again",
            );
            log(ctx, who, "refused: handshake slots full, the oldest closed");
        }
        Err(f) if f.code == "closed" => log(ctx, who, "closed"),
        Err(f) => {
            conn.send_error(f.code, &f.message);
            log(ctx, who, &format!("error: {}", f.message));
            conn.close_gracefully(&ctx.stop);
        }
    }
}

/// Reads the client's next message, waiting at most `timeout` (and less if the server stops).
fn read(conn: &mut Conn, timeout: Duration, ctx: &Context) -> Result<ToDaemon, Failure> {
    let until = std::time::Instant::now() + timeout;
    loop {
        if ctx.stopping() {
            return Err(fatal("shutdown", "the daemon is shutting down"));
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        match conn.read::<ToDaemon>(left.min(Duration::from_millis(100))) {
            Err(WireError::Timeout) if !left.is_zero() => continue,
            Err(WireError::Timeout) => {
                return Err(fatal("timeout", format!("no message for {} s: closing the connection", timeout.as_secs())))
            }
            other => return other.map_err(Failure::from),
        }
    }
}

/// Sleeps `pause`, or less if the daemon stops.
fn pause(pause: Duration, ctx: &Context) {
    let until = std::time::Instant::now() + pause;
    while !ctx.stopping() {
        let left = until.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(POLL));
    }
}

fn session(
    conn: &mut Conn,
    who: &str,
    id: u64,
    local_ip: [u8; 4],
    peer_ip: [u8; 4],
    ctx: &Context,
) -> Result<(), Failure> {
    let nonce = auth::nonce().map_err(|e| fatal("internal", e.to_string()))?;
    let secret = ctx.options.secret.as_deref();
    conn.send(&ToClient::Hello {
        software: SOFTWARE.into(),
        nonce: nonce.clone(),
        secret_required: secret.is_some(),
        max_message_bytes: MAX_CLIENT_MESSAGE_BYTES as u64,
    })
    .map_err(|e| fatal("closed", e.to_string()))?;
    let ToDaemon::Hello { nonce: client_nonce, mac, .. } = read(conn, ctx.options.timeouts.handshake, ctx)? else {
        return Err(fatal("protocol", "the first message must be hello"));
    };
    if let Some(secret) = secret {
        let good = mac.is_some_and(|m| auth::mac_matches(&m, &auth::client_mac(secret, &nonce, &client_nonce)));
        if !good {
            pause(AUTH_FAILURE_DELAY, ctx);
            return Err(fatal("auth", "authentication failed: this daemon needs the shared secret (give the same --secret-file to fatpipe probe run)"));
        }
    }
    // Proven: the connection leaves the handshake budget for a client slot.
    if !ctx.settle(id) {
        return Err(fatal("closed", "closed for a newer connection"));
    }
    let Some(_client) = Held::within(&ctx.stats.clients, ctx.options.max_clients) else {
        ctx.stats.refused.fetch_add(1, Ordering::Relaxed);
        let max = ctx.options.max_clients;
        log(ctx, who, "refused: too many clients");
        return Err(fatal("busy", format!("this daemon serves {max} clients at once and has {max}; try again later")));
    };
    conn.set_max_line_bytes(MAX_CLIENT_MESSAGE_BYTES);
    let mac = secret.map(|s| auth::daemon_mac(s, &client_nonce, &nonce));
    let host = HostInfo::local();
    conn.send(&ToClient::Welcome { mac, host: host.clone() }).map_err(|e| fatal("closed", e.to_string()))?;
    log(ctx, who, "connected");
    loop {
        let message = match read(conn, ctx.options.timeouts.idle, ctx) {
            Err(f) if f.code == "closed" => return Ok(()),
            other => other?,
        };
        let answer = match message {
            ToDaemon::Ping { seq } => {
                #[cfg(test)]
                if seq == tests::PANIC_SEQ {
                    panic!("test: a panic in a session");
                }
                conn.send(&ToClient::Pong { seq })
            }
            ToDaemon::Setup { test } => match run_test(conn, who, test, &host, local_ip, peer_ip, ctx) {
                Ok(()) => Ok(()),
                Err(f) if !f.fatal => {
                    conn.send_error(f.code, &f.message);
                    log(ctx, who, &format!("test refused: {}", f.message));
                    Ok(())
                }
                Err(f) => return Err(f),
            },
            ToDaemon::Start { .. } => return Err(fatal("protocol", "start without a setup: send setup first")),
            ToDaemon::Hello { .. } => return Err(fatal("protocol", "hello twice on one connection")),
        };
        answer.map_err(|e| fatal("closed", e.to_string()))?;
    }
}

/// One test: set up this end, wait for start, run, watch the control connection (a client
/// that leaves stops its test at once), send the results.
fn run_test(
    conn: &mut Conn,
    who: &str,
    test: TestSetup,
    host: &HostInfo,
    local_ip: [u8; 4],
    peer_ip: [u8; 4],
    ctx: &Context,
) -> Result<(), Failure> {
    let refuse = |code, message: String| Failure { code, message, fatal: false };
    if test.duration_ps > ctx.options.max_duration_ps {
        return Err(refuse(
            "limit",
            format!(
                "test.duration_ps: {} s is longer than this daemon runs ({} s; its --max-duration)",
                test.duration_ps as f64 / PS_PER_S as f64,
                ctx.options.max_duration_ps as f64 / PS_PER_S as f64
            ),
        ));
    }
    let (mut end, ports) =
        End::listen(&test, &host.available_congestion_control, host.cap_net_admin, local_ip, peer_ip, &ctx.pool)
            .map_err(|m| refuse("setup", m))?;
    conn.send(&ToClient::Ready { ports: ports.clone() }).map_err(|e| fatal("closed", e.to_string()))?;
    let in_ps = match read(conn, ctx.options.timeouts.start, ctx)? {
        ToDaemon::Start { in_ps } if in_ps <= MAX_START_DELAY_PS => in_ps,
        ToDaemon::Start { in_ps } => {
            return Err(fatal("limit", format!("start.in_ps: {in_ps} is more than {MAX_START_DELAY_PS} (30 s) ahead")))
        }
        _ => return Err(fatal("protocol", "after setup, the next message must be start")),
    };
    end.start(Clock::start().shifted(in_ps));
    ctx.stats.tests_run.fetch_add(1, Ordering::Relaxed);
    log(
        ctx,
        who,
        &format!(
            "test of {} flow(s) for {} s on port(s) {}",
            test.flows.len(),
            test.duration_ps as f64 / PS_PER_S as f64,
            ports.iter().map(u16::to_string).collect::<Vec<_>>().join(", ")
        ),
    );
    conn.send(&ToClient::Started {}).map_err(|e| fatal("closed", e.to_string()))?;
    while !end.finished() {
        if end.overdue() || ctx.stop.load(Ordering::Relaxed) {
            end.stop();
        }
        match conn.read_line(POLL) {
            Err(WireError::Timeout) => {}
            Err(WireError::Closed) => {
                // `end` drops here: every thread stops, the sockets close, the ports return.
                log(ctx, who, "the client left during its test: test stopped");
                return Err(fatal("closed", "left"));
            }
            Err(e) => return Err(Failure::from(e)),
            Ok(line) => match crate::wire::parse::<ToDaemon>(&line) {
                Ok(ToDaemon::Ping { seq }) => {
                    conn.send(&ToClient::Pong { seq }).map_err(|e| fatal("closed", e.to_string()))?
                }
                Ok(_) => conn.send_error("busy", "a test is running on this connection: one test at a time per client"),
                Err(e) => return Err(Failure::from(e)),
            },
        }
    }
    let report = end.finish();
    let failed = report.failure.clone();
    conn.send(&ToClient::Result { end: report }).map_err(|e| fatal("closed", e.to_string()))?;
    log(ctx, who, &failed.map_or("test finished".into(), |f| format!("test failed: {f}")));
    Ok(())
}

#[cfg(test)]
mod tests;
