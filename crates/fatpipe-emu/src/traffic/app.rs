//! One end of a TCP flow as its application thread runs it: get the connection (open
//! already, connected when the application starts, or accepted from the peer), then send or
//! receive until the measurement ends. The emulator runs both ends in one process; `fatpipe
//! probe` runs one end on each host, and either end may be the one that connects.

use super::tcp::{receive, send, TcpListener, TcpStream, Writer};
use super::{Counters, Schedule, POLL_PS};
use fatpipe_core::time::Time;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::OnceLock;

/// A function that opens a connection, given the longest it may wait.
pub type Connect = Box<dyn FnOnce(Time) -> io::Result<TcpStream> + Send>;

/// How the application gets its connection.
pub enum Obtain {
    /// Opened before time 0 (a connection that starts established) and put in the slot.
    Open,
    /// Connect when the application starts (`tcp.handshake`), waiting at most
    /// `timeout_ps` and never past the measurement's end.
    ConnectAtStart { connect: Connect, timeout_ps: Time },
    /// Accept the peer's connection (from `peer` only, if given) when it comes.
    Accept { listener: TcpListener, peer: Option<[u8; 4]> },
}

/// What the application does with the connection.
#[derive(Clone, Copy, Debug)]
pub enum App {
    Send(Writer),
    /// See `tcp::receive`.
    Receive {
        drain_rate_bps: Option<u64>,
        quick_ack: bool,
    },
}

/// Runs one end of a TCP flow until the measurement ends (or `stop`); the connection is
/// left in `slot` for the sampler and for the results.
pub fn run(
    obtain: Obtain,
    slot: &OnceLock<TcpStream>,
    app: App,
    schedule: &Schedule,
    counters: &Counters,
    stop: &AtomicBool,
) -> io::Result<()> {
    match obtain {
        Obtain::Open => {}
        Obtain::ConnectAtStart { connect, timeout_ps } => {
            if !schedule.sleep_until(schedule.start_ps, stop) {
                return Ok(());
            }
            let _ = slot.set(connect(timeout_ps.min(schedule.end_ps.saturating_sub(schedule.clock.now())))?);
        }
        Obtain::Accept { listener, peer } => loop {
            // In steps, so that a stopped run does not wait for a peer that never comes.
            if schedule.over(stop) {
                return Ok(());
            }
            match listener.accept_from(peer, POLL_PS) {
                Ok(stream) => {
                    let _ = slot.set(stream);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::TimedOut => continue,
                Err(e) => return Err(e),
            }
        },
    }
    let Some(stream) = slot.get() else { return Ok(()) };
    match app {
        App::Send(writer) => send(stream, writer, schedule, counters, stop),
        App::Receive { drain_rate_bps, quick_ack } => {
            receive(stream, drain_rate_bps, quick_ack, schedule, counters, stop)
        }
    }
}
