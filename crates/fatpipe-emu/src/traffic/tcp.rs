//! TCP on real sockets: setting a socket up as a scenario asks, and the applications.

use super::{tcp_info, Counters, Schedule, POLL_PS};
use crate::sys;
use fatpipe_core::source::SourceSpec;
use fatpipe_core::tcp::reader::AppReader;
use fatpipe_core::time::Time;
use serde::{Deserialize, Serialize};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Bytes per write or read call: large enough that system calls cost little at 10 Gb/s.
const CHUNK_BYTES: usize = 1 << 20;

/// SO_MAX_PACING_RATE that turns the kernel's internal pacing on without capping it: the
/// largest value other than ~0UL (which sk_setsockopt takes as "no cap, pacing unchanged").
pub const PACING_ON_UNCAPPED: u64 = u64::MAX - 1;

/// Socket options applied before connecting or listening (an accepted socket inherits the
/// listener's). Serializable: `fatpipe probe` sends them to the other host.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// TCP_CONGESTION: the kernel's name of the algorithm.
    pub congestion: Option<String>,
    /// SO_SNDBUF / SO_RCVBUF, bytes asked (the kernel doubles them for its bookkeeping and
    /// caps them at net.core.wmem_max / rmem_max; `Granted` says what it gave).
    pub snd_buffer_bytes: Option<u64>,
    pub rcv_buffer_bytes: Option<u64>,
    /// Set the buffers with SO_SNDBUFFORCE / SO_RCVBUFFORCE (CAP_NET_ADMIN), past the
    /// rmem_max / wmem_max ceilings, which a network namespace cannot raise for itself.
    pub force_buffers: bool,
    /// TCP_MAXSEG: clamp on the MSS announced and used (bytes, TCP options not counted).
    pub max_segment_bytes: Option<u32>,
    /// SO_MAX_PACING_RATE, bits per second of TCP payload (the kernel's `sk_pacing_rate`
    /// counts payload: `tcp_update_pacing_rate` takes mss_cache x cwnd / srtt, and
    /// `tcp_update_skb_after_send` spaces each skb by its payload length). Any value turns
    /// the kernel's own pacing on (at its tcp_pacing_ss_ratio / ca_ratio of cwnd / srtt,
    /// capped by this); `Some(u64::MAX)`: on, without a cap (`PACING_ON_UNCAPPED`).
    pub max_pacing_rate_bps: Option<u64>,
    /// TCP_NODELAY: a segment shorter than the MSS leaves as soon as the window allows, as
    /// in fatpipe's sender, which has no Nagle algorithm (RFC 896); with Nagle, the tail of
    /// every burst would wait for the ACK of what is in flight.
    pub nodelay: bool,
}

/// What the kernel granted, read back with getsockopt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Granted {
    pub congestion: String,
    pub snd_buffer_bytes: u64,
    pub rcv_buffer_bytes: u64,
}

/// A connected TCP socket.
pub struct TcpStream {
    fd: OwnedFd,
}

pub struct TcpListener {
    fd: OwnedFd,
}

fn socket(opts: &TcpOptions) -> io::Result<OwnedFd> {
    // SAFETY: plain socket(2).
    let fd = sys::owned(unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
    let one: libc::c_int = 1;
    sys::setsockopt(&fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &one)?;
    if let Some(name) = &opts.congestion {
        // Checked against tcp_available_congestion_control by the caller first, so that a
        // missing algorithm gets a clear message rather than ENOENT.
        let bytes = name.as_bytes();
        // SAFETY: the option takes a byte string of the given length.
        let ret = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_CONGESTION,
                bytes.as_ptr().cast(),
                bytes.len() as libc::socklen_t,
            )
        };
        sys::check(ret).map_err(|e| crate::netns::with_context(e, &format!("TCP_CONGESTION {name}")))?;
    }
    let (snd, rcv) = if opts.force_buffers {
        (libc::SO_SNDBUFFORCE, libc::SO_RCVBUFFORCE)
    } else {
        (libc::SO_SNDBUF, libc::SO_RCVBUF)
    };
    for (asked, option, what) in [(opts.snd_buffer_bytes, snd, "SO_SNDBUF"), (opts.rcv_buffer_bytes, rcv, "SO_RCVBUF")]
    {
        if let Some(bytes) = asked {
            let value = bytes.min(i32::MAX as u64 / 2) as libc::c_int;
            sys::setsockopt(&fd, libc::SOL_SOCKET, option, &value).map_err(|e| crate::netns::with_context(e, what))?;
        }
    }
    if let Some(mss) = opts.max_segment_bytes {
        sys::setsockopt(&fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, &(mss as libc::c_int))
            .map_err(|e| crate::netns::with_context(e, "TCP_MAXSEG"))?;
    }
    if let Some(rate_bps) = opts.max_pacing_rate_bps {
        sys::setsockopt(&fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &max_pacing_rate_option(rate_bps))
            .map_err(|e| crate::netns::with_context(e, "SO_MAX_PACING_RATE"))?;
    }
    if opts.nodelay {
        sys::setsockopt(&fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one)
            .map_err(|e| crate::netns::with_context(e, "TCP_NODELAY"))?;
    }
    Ok(fd)
}

/// SO_MAX_PACING_RATE's value, bytes per second, for `max_pacing_rate_bps`. ~0 would be "no
/// cap" but also leaves pacing off: sk_setsockopt (net/core/sock.c, SO_MAX_PACING_RATE) moves
/// sk_pacing_status from SK_PACING_NONE to SK_PACING_NEEDED only for a value other than ~0UL,
/// and tcp_needs_internal_pacing (tcp_output.c) paces only when it is NEEDED.
pub fn max_pacing_rate_option(rate_bps: u64) -> u64 {
    if rate_bps == u64::MAX {
        PACING_ON_UNCAPPED
    } else {
        (rate_bps / 8).max(1)
    }
}

fn bind(fd: &OwnedFd, ip: [u8; 4], port: u16) -> io::Result<()> {
    let addr = sys::sockaddr_in(ip, port);
    // SAFETY: a valid sockaddr_in of its own length.
    let ret = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    sys::check(ret).map(drop).map_err(|e| crate::netns::with_context(e, &format!("bind {}:{port}", fmt_ip(ip))))
}

pub fn fmt_ip(ip: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3])
}

impl TcpListener {
    /// Listens on `ip:port` with `opts` (set before listen, so that the window scale the
    /// connection announces follows the receive buffer).
    pub fn bind(ip: [u8; 4], port: u16, opts: &TcpOptions) -> io::Result<TcpListener> {
        let fd = socket(opts)?;
        bind(&fd, ip, port)?;
        // SAFETY: listen on our socket.
        sys::check(unsafe { libc::listen(fd.as_raw_fd(), 16) })?;
        sys::set_nonblocking(&fd)?;
        Ok(TcpListener { fd })
    }

    /// The port it listens on (the one chosen when bound to port 0).
    pub fn local_port(&self) -> io::Result<u16> {
        sys::local_port(&self.fd)
    }

    /// Accepts one connection, waiting at most `timeout_ps`.
    pub fn accept(&self, timeout_ps: Time) -> io::Result<TcpStream> {
        self.accept_from(None, timeout_ps)
    }

    /// Accepts one connection from `peer` (any address if None), waiting at most
    /// `timeout_ps`; a connection from elsewhere is closed at once and not counted.
    pub fn accept_from(&self, peer: Option<[u8; 4]>, timeout_ps: Time) -> io::Result<TcpStream> {
        let deadline = crate::clock::monotonic_ns() + timeout_ps / 1000;
        loop {
            let left_ns = deadline.saturating_sub(crate::clock::monotonic_ns());
            if left_ns == 0 || !sys::wait_ready(self.fd.as_raw_fd(), libc::POLLIN, left_ns)? {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "no connection arrived"));
            }
            // SAFETY: accept4 on a listening socket; we take ownership of the new descriptor.
            let accepted = sys::owned(unsafe {
                libc::accept4(
                    self.fd.as_raw_fd(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                )
            });
            let fd = match accepted {
                Ok(fd) => fd,
                // The peer gave up between poll and accept: wait for the next one.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ECONNABORTED)) => continue,
                Err(e) => return Err(e),
            };
            let stream = TcpStream { fd };
            if peer.is_none_or(|ip| stream.peer_addr().is_ok_and(|(from, _)| from == ip)) {
                return Ok(stream);
            }
        }
    }
}

impl TcpStream {
    /// Connects from `local_ip:local_port` to `remote_ip:remote_port`, waiting at most
    /// `timeout_ps` for the handshake.
    pub fn connect(
        local: ([u8; 4], u16),
        remote: ([u8; 4], u16),
        opts: &TcpOptions,
        timeout_ps: Time,
    ) -> io::Result<TcpStream> {
        let fd = socket(opts)?;
        bind(&fd, local.0, local.1)?;
        sys::set_nonblocking(&fd)?;
        let addr = sys::sockaddr_in(remote.0, remote.1);
        // SAFETY: a valid sockaddr_in of its own length.
        let ret = unsafe {
            libc::connect(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        if ret < 0 {
            let err = io::Error::last_os_error();
            if err.raw_os_error() != Some(libc::EINPROGRESS) {
                return Err(err);
            }
            if !sys::wait_ready(fd.as_raw_fd(), libc::POLLOUT, timeout_ps / 1000)? {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("connect to {}:{} timed out", fmt_ip(remote.0), remote.1),
                ));
            }
            let (so_error, _) = sys::getsockopt::<libc::c_int>(&fd, libc::SOL_SOCKET, libc::SO_ERROR)?;
            if so_error != 0 {
                return Err(io::Error::from_raw_os_error(so_error));
            }
        }
        Ok(TcpStream { fd })
    }

    /// The peer's address and port.
    pub fn peer_addr(&self) -> io::Result<([u8; 4], u16)> {
        sys::peer_addr(&self.fd)
    }

    /// The kernel's state of the connection (TCP_INFO).
    pub fn info(&self) -> io::Result<tcp_info::Sampled> {
        tcp_info::read(&self.fd)
    }

    /// What the kernel granted: the algorithm it runs (TCP_CONGESTION read back) and the
    /// buffer sizes (SO_SNDBUF / SO_RCVBUF read back: twice what was asked when it fit).
    pub fn granted(&self) -> io::Result<Granted> {
        let congestion = sys::getsockopt_string(&self.fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION)?;
        let (snd, _) = sys::getsockopt::<libc::c_int>(&self.fd, libc::SOL_SOCKET, libc::SO_SNDBUF)?;
        let (rcv, _) = sys::getsockopt::<libc::c_int>(&self.fd, libc::SOL_SOCKET, libc::SO_RCVBUF)?;
        Ok(Granted { congestion, snd_buffer_bytes: snd as u64, rcv_buffer_bytes: rcv as u64 })
    }

    /// Bytes sent and not yet acknowledged (snd_nxt - snd_una): the send queue (SIOCOUTQ)
    /// less what was never sent (SIOCOUTQNSD).
    pub fn outstanding_bytes(&self) -> io::Result<u64> {
        let queued = self.ioctl_int(libc::TIOCOUTQ)?;
        let unsent = self.ioctl_int(0x894B)?; // SIOCOUTQNSD (linux/sockios.h)
        Ok(queued.saturating_sub(unsent))
    }

    fn ioctl_int(&self, request: libc::Ioctl) -> io::Result<u64> {
        let mut value: libc::c_int = 0;
        // SAFETY: the request writes one int.
        sys::check(unsafe { libc::ioctl(self.fd.as_raw_fd(), request, &mut value as *mut libc::c_int) })?;
        Ok(value.max(0) as u64)
    }
}

impl AsRawFd for TcpStream {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.fd.as_raw_fd()
    }
}

/// What the sending application does.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Writer {
    /// Full blast (iperf, NetSpec full-blast mode): write whenever the send buffer takes
    /// data, `bytes` in all (None: without end).
    Bulk { bytes: Option<u64> },
    /// NetSpec burst mode: every `period_ps` from the start, write a burst of `burst_bytes`
    /// (a blocking write: it goes on as ACKs free buffer space).
    Burst { burst_bytes: u64, period_ps: Time, carry_over: bool },
}

impl Writer {
    /// The writer of a TCP source (None for UDP and HTTP sources, which have their own).
    pub fn of(source: &SourceSpec) -> Option<Writer> {
        match source {
            SourceSpec::Bulk(b) => Some(Writer::Bulk { bytes: b.bytes }),
            SourceSpec::Burst(b) => {
                Some(Writer::Burst { burst_bytes: b.burst_bytes, period_ps: b.period_ps, carry_over: b.carry_over })
            }
            _ => None,
        }
    }
}

/// Runs the sending application on `stream` until the measurement ends (or `stop`).
///
/// Burst mode counts a failed burst cycle as fatpipe-core's `BurstStats::write` does: when
/// a period starts and the previous burst is not fully written (the send buffer was full),
/// the cycle failed; its unwritten rest is dropped, or with `carry_over` written first.
pub fn send(
    stream: &TcpStream,
    writer: Writer,
    schedule: &Schedule,
    counters: &Counters,
    stop: &AtomicBool,
) -> io::Result<()> {
    if !schedule.sleep_until(schedule.start_ps, stop) {
        return Ok(());
    }
    let buf = vec![0x5au8; CHUNK_BYTES];
    let stopped = |t: Time| schedule.stop_ps.is_some_and(|s| t >= s);
    match writer {
        Writer::Bulk { bytes } => {
            let mut left = bytes.unwrap_or(u64::MAX);
            while left > 0 && !schedule.over(stop) && !schedule.stop_ps.is_some_and(|s| schedule.clock.reached(s)) {
                let deadline = schedule.stop_ps.unwrap_or(schedule.end_ps).min(schedule.end_ps);
                let n = match write_some(stream, &buf[..(left.min(CHUNK_BYTES as u64)) as usize], schedule, deadline) {
                    // The measurement is over and the other end may have closed: on a loaded
                    // machine this thread can wake past the end, after the peer's reset.
                    Err(e) if peer_gone(&e) && schedule.clock.reached(schedule.end_ps) => break,
                    other => other?,
                };
                left -= n;
                counters.written.fetch_add(n, Ordering::Relaxed);
            }
            if left == 0 {
                counters.writer_done.store(true, Ordering::Relaxed);
            }
        }
        Writer::Burst { burst_bytes, period_ps, carry_over } => {
            let mut next = schedule.start_ps;
            let mut pending: u64 = 0;
            loop {
                // Write what is pending until the next period starts.
                while !schedule.clock.reached(next) && !schedule.over(stop) {
                    if pending == 0 {
                        schedule.sleep_until(next, stop);
                        continue;
                    }
                    let n = write_some(stream, &buf[..(pending.min(CHUNK_BYTES as u64)) as usize], schedule, next)?;
                    pending -= n;
                    counters.written.fetch_add(n, Ordering::Relaxed);
                }
                // As fatpipe-core's burst source: a burst at start + k x period while that is
                // within the run (its last instant included) and before the stop time.
                if stop.load(Ordering::Relaxed)
                    || next > schedule.end_ps
                    || stopped(next)
                    || !schedule.clock.reached(next)
                {
                    break;
                }
                let failed = pending > 0;
                if failed && !carry_over {
                    pending = 0;
                }
                pending += burst_bytes;
                counters.bursts.fetch_add(1, Ordering::Relaxed);
                counters.failed_cycles.fetch_add(u64::from(failed), Ordering::Relaxed);
                next += period_ps;
                if schedule.over(stop) {
                    // A burst at the run's last instant goes into the buffer as far as it
                    // has room, as in the simulation; nothing waits any more.
                    // The other end stops reading at the same instant and may have closed
                    // already (the two hosts' threads are not in lockstep on a loaded
                    // machine): a reset or a broken pipe now means nothing more fits, not a
                    // failed test.
                    while pending > 0 {
                        let n = match send_now(stream, &buf[..(pending.min(CHUNK_BYTES as u64)) as usize]) {
                            Err(e) if peer_gone(&e) => 0,
                            other => other?,
                        };
                        if n == 0 {
                            break;
                        }
                        pending -= n;
                        counters.written.fetch_add(n, Ordering::Relaxed);
                    }
                }
            }
        }
    }
    Ok(())
}

/// A reset or a broken pipe: the other end closed the connection.
fn peer_gone(e: &io::Error) -> bool {
    matches!(e.kind(), io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset)
}

/// Writes as much of `data` as the send buffer takes, waiting for room until `deadline`;
/// returns the bytes written (0 if the deadline came first).
fn write_some(stream: &TcpStream, data: &[u8], schedule: &Schedule, deadline: Time) -> io::Result<u64> {
    let now = schedule.clock.now();
    if now >= deadline {
        return Ok(0);
    }
    let wait_ps = (deadline - now).min(POLL_PS);
    if !sys::wait_ready(stream.as_raw_fd(), libc::POLLOUT, wait_ps.div_ceil(1000))? {
        return Ok(0);
    }
    send_now(stream, data)
}

/// One non-blocking send: the bytes the send buffer took (0 if it is full).
fn send_now(stream: &TcpStream, data: &[u8]) -> io::Result<u64> {
    // SAFETY: `data` is readable for its length; MSG_NOSIGNAL: a reset peer gives EPIPE.
    let n = unsafe {
        libc::send(stream.as_raw_fd(), data.as_ptr().cast(), data.len(), libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT)
    };
    if n < 0 {
        let err = io::Error::last_os_error();
        return match err.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
            _ => Err(err),
        };
    }
    Ok(n as u64)
}

/// Runs the receiving application until the measurement ends: it reads every byte at once,
/// or at most `drain_rate_bps` (the same lazy reader as fatpipe-core's, `AppReader`), and
/// with `quick_ack` asks the kernel to acknowledge at once after every read (Linux has no
/// switch for delayed ACKs; TCP_QUICKACK lasts until the kernel's own heuristics return).
pub fn receive(
    stream: &TcpStream,
    drain_rate_bps: Option<u64>,
    quick_ack: bool,
    schedule: &Schedule,
    counters: &Counters,
    stop: &AtomicBool,
) -> io::Result<()> {
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut reader = drain_rate_bps.map(AppReader::new);
    let mut read_total: u64 = 0;
    let mut dry = true;
    let one: libc::c_int = 1;
    while !schedule.over(stop) {
        let now = schedule.clock.now();
        let mut limit = buf.len();
        if let Some(r) = reader.as_mut() {
            let queued = stream_inq(stream)?;
            if dry && queued > 0 {
                // Data found the reader idle: it starts again now.
                r.on_arrival(now, read_total);
                dry = false;
            }
            let may = r.read(now, read_total + queued) - read_total;
            if queued > 0 && may == 0 {
                let ready_at = r.time_to_read(now, read_total + queued, read_total + 1);
                schedule.clock.sleep_until(ready_at.min(now + POLL_PS).min(schedule.end_ps));
                continue;
            }
            limit = limit.min(may.max(1) as usize);
        }
        if !sys::wait_ready(stream.as_raw_fd(), libc::POLLIN, POLL_PS / 1000)? {
            continue;
        }
        // SAFETY: `buf` is writable for `limit` bytes.
        let n = unsafe { libc::recv(stream.as_raw_fd(), buf.as_mut_ptr().cast(), limit, 0) };
        if n < 0 {
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => continue,
                _ => return Err(err),
            }
        }
        if n == 0 {
            return Ok(()); // the sender closed
        }
        read_total += n as u64;
        counters.note_read(n as u64, schedule.clock.now());
        if reader.is_some() && stream_inq(stream)? == 0 {
            dry = true;
        }
        if quick_ack {
            sys::setsockopt(stream, libc::IPPROTO_TCP, libc::TCP_QUICKACK, &one)?;
        }
    }
    Ok(())
}

/// Bytes waiting in the receive queue (FIONREAD).
fn stream_inq(stream: &TcpStream) -> io::Result<u64> {
    stream.ioctl_int(libc::FIONREAD)
}
