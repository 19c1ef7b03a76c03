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
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A client has this long to say hello (and prove the secret) once connected.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// An authenticated client that sends nothing for this long is disconnected.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// After `ready`, the client has this long to connect and say `start`.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// The latest a test may begin after its `start` arrives.
const MAX_START_DELAY_PS: Time = 30 * PS_PER_S;
/// A wrong secret is answered after this pause: guessing a weak secret goes slowly.
const AUTH_FAILURE_DELAY: Duration = Duration::from_millis(500);
/// How often a waiting thread looks at the stop flag.
const POLL: Duration = Duration::from_millis(20);

#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Clients must prove they know this (auth.rs); None: anyone who reaches the daemon.
    pub secret: Option<Vec<u8>>,
    /// The data ports the daemon owns; None: free ports the kernel picks.
    pub data_ports: Option<(u16, u16)>,
    /// The longest test the daemon runs.
    pub max_duration_ps: Time,
    /// Clients served at once; more are refused with an error line.
    pub max_clients: usize,
    /// One line on stderr per client event.
    pub log: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions { secret: None, data_ports: None, max_duration_ps: 3600 * PS_PER_S, max_clients: 64, log: true }
    }
}

/// Counts a test can read (clients now, and since the start).
#[derive(Debug, Default)]
pub struct Stats {
    pub clients: AtomicUsize,
    pub connections: AtomicU64,
    pub tests_run: AtomicU64,
    pub refused: AtomicU64,
}

struct Context {
    options: ServerOptions,
    pool: Arc<PortPool>,
    stop: Arc<AtomicBool>,
    stats: Arc<Stats>,
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
        let ctx = Arc::new(Context { options, pool: pool.clone(), stop: stop.clone(), stats: stats.clone() });
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
            if self.accept.as_ref().is_none_or(|h| h.is_finished()) && self.stats.clients.load(Ordering::Relaxed) == 0 {
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
    while !ctx.stop.load(Ordering::Relaxed) {
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
        let who = peer.to_string();
        if ctx.stats.clients.load(Ordering::Relaxed) >= ctx.options.max_clients {
            ctx.stats.refused.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut conn) = Conn::new(stream, 0) {
                let max = ctx.options.max_clients;
                conn.send_error(
                    "busy",
                    &format!("this daemon serves {max} clients at once and has {max}; try again later"),
                );
                // On its own thread: the accept loop never waits for a client.
                std::thread::spawn(move || conn.close_gracefully());
            }
            log(&ctx, &who, "refused: too many clients");
            continue;
        }
        ctx.stats.clients.fetch_add(1, Ordering::Relaxed);
        let ctx2 = ctx.clone();
        let spawned = std::thread::Builder::new().name("probe-client".into()).spawn(move || {
            serve_client(stream, &who, &ctx2);
            ctx2.stats.clients.fetch_sub(1, Ordering::Relaxed);
        });
        if spawned.is_err() {
            ctx.stats.clients.fetch_sub(1, Ordering::Relaxed);
            log(&ctx, &peer.to_string(), "refused: cannot start a thread");
        }
    }
}

fn log(ctx: &Context, who: &str, what: &str) {
    if ctx.options.log {
        eprintln!("fatpipe probe: {who}: {what}");
    }
}

fn serve_client(stream: TcpStream, who: &str, ctx: &Context) {
    let (Ok(local), Ok(peer)) = (stream.local_addr(), stream.peer_addr()) else { return };
    let (Some(local_ip), Some(peer_ip)) = (ip_of(local), ip_of(peer)) else { return };
    let Ok(mut conn) = Conn::new(stream, MAX_CLIENT_MESSAGE_BYTES) else { return };
    log(ctx, who, "connected");
    match session(&mut conn, who, local_ip, peer_ip, ctx) {
        Ok(()) => log(ctx, who, "closed"),
        Err(f) if f.code == "closed" => log(ctx, who, "closed"),
        Err(f) => {
            conn.send_error(f.code, &f.message);
            log(ctx, who, &format!("error: {}", f.message));
            conn.close_gracefully();
        }
    }
}

/// Reads the client's next message, waiting at most `timeout` (and less if the server stops).
fn read(conn: &mut Conn, timeout: Duration, ctx: &Context) -> Result<ToDaemon, Failure> {
    let until = std::time::Instant::now() + timeout;
    loop {
        if ctx.stop.load(Ordering::Relaxed) {
            return Err(fatal("shutdown", "the daemon is shutting down"));
        }
        let left = until.saturating_duration_since(std::time::Instant::now());
        match conn.read::<ToDaemon>(left.min(Duration::from_millis(200))) {
            Err(WireError::Timeout) if !left.is_zero() => continue,
            Err(WireError::Timeout) => {
                return Err(fatal("timeout", format!("no message for {} s: closing the connection", timeout.as_secs())))
            }
            other => return other.map_err(Failure::from),
        }
    }
}

fn session(conn: &mut Conn, who: &str, local_ip: [u8; 4], peer_ip: [u8; 4], ctx: &Context) -> Result<(), Failure> {
    let nonce = auth::nonce().map_err(|e| fatal("internal", e.to_string()))?;
    let secret = ctx.options.secret.as_deref();
    conn.send(&ToClient::Hello {
        software: SOFTWARE.into(),
        nonce: nonce.clone(),
        secret_required: secret.is_some(),
        max_message_bytes: MAX_CLIENT_MESSAGE_BYTES as u64,
    })
    .map_err(|e| fatal("closed", e.to_string()))?;
    let ToDaemon::Hello { nonce: client_nonce, mac, .. } = read(conn, HANDSHAKE_TIMEOUT, ctx)? else {
        return Err(fatal("protocol", "the first message must be hello"));
    };
    if let Some(secret) = secret {
        let good = mac.is_some_and(|m| auth::mac_matches(&m, &auth::client_mac(secret, &nonce, &client_nonce)));
        if !good {
            std::thread::sleep(AUTH_FAILURE_DELAY);
            return Err(fatal("auth", "authentication failed: this daemon needs the shared secret (give the same --secret-file to fatpipe probe run)"));
        }
    }
    let mac = secret.map(|s| auth::daemon_mac(s, &client_nonce, &nonce));
    let host = HostInfo::local();
    conn.send(&ToClient::Welcome { mac, host: host.clone() }).map_err(|e| fatal("closed", e.to_string()))?;
    loop {
        let message = match read(conn, IDLE_TIMEOUT, ctx) {
            Err(f) if f.code == "closed" => return Ok(()),
            other => other?,
        };
        let answer = match message {
            ToDaemon::Ping { seq } => conn.send(&ToClient::Pong { seq }),
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
    let in_ps = match read(conn, START_TIMEOUT, ctx)? {
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
