//! UDP on real sockets: a sender on the schedule of fatpipe-core's `UdpFlow` (CBR, NetSpec
//! bursts, on-off, never faster than the host's line) and a receiver that counts.

use super::{Counters, Schedule, POLL_PS};
use crate::sys;
use fatpipe_core::source::udp::UdpFlow;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};

/// Receive buffer of a UDP receiver: a few milliseconds of 1 Gb/s, so a receiver thread
/// that is briefly descheduled does not lose datagrams in its own socket.
const RECEIVE_BUFFER_BYTES: libc::c_int = 4 << 20;

pub struct UdpSocket {
    fd: OwnedFd,
}

impl UdpSocket {
    /// A socket bound to `ip:port`.
    pub fn bind(ip: [u8; 4], port: u16) -> io::Result<UdpSocket> {
        // SAFETY: plain socket(2).
        let fd = sys::owned(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
        sys::setsockopt(&fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &RECEIVE_BUFFER_BYTES)?;
        let addr = sys::sockaddr_in(ip, port);
        // SAFETY: a valid sockaddr_in of its own length.
        let ret = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        sys::check(ret)
            .map_err(|e| crate::netns::with_context(e, &format!("bind UDP {}:{port}", super::tcp::fmt_ip(ip))))?;
        Ok(UdpSocket { fd })
    }

    /// The port it is bound to (the one chosen when bound to port 0).
    pub fn local_port(&self) -> io::Result<u16> {
        sys::local_port(&self.fd)
    }

    /// Sends to `ip:port` from now on (connect(2) on a datagram socket).
    pub fn connect(&self, ip: [u8; 4], port: u16) -> io::Result<()> {
        let addr = sys::sockaddr_in(ip, port);
        // SAFETY: a valid sockaddr_in of its own length.
        let ret = unsafe {
            libc::connect(
                self.fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_in).cast(),
                std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
            )
        };
        sys::check(ret).map(drop)
    }
}

/// Sends the flow's datagrams, each when `flow` says it is due (the schedule is computed from
/// the due times, never from when the thread woke, so the rate does not drift). Each
/// datagram's payload starts with its number (8 bytes, big-endian), as iperf's does.
pub fn send(
    sock: &UdpSocket,
    mut flow: UdpFlow,
    schedule: &Schedule,
    counters: &Counters,
    stop: &AtomicBool,
) -> io::Result<()> {
    let mut buf = vec![0u8; 65_536];
    let mut number: u64 = 0;
    while let Some(due) = flow.next_departure() {
        // A datagram due at the run's last instant still leaves, as in the simulation,
        // which runs the events at its end.
        if due > schedule.end_ps
            || (!schedule.sleep_until(due, stop) && (stop.load(Ordering::Relaxed) || due < schedule.end_ps))
        {
            break;
        }
        let payload = flow.send(due).payload_bytes as usize;
        let len = payload.min(buf.len());
        let head = len.min(8);
        buf[..head].copy_from_slice(&number.to_be_bytes()[..head]);
        // SAFETY: `buf` is readable for `len` bytes.
        let n = unsafe { libc::send(sock.fd.as_raw_fd(), buf.as_ptr().cast(), len, 0) };
        if n < 0 {
            let err = io::Error::last_os_error();
            // ENOBUFS: the host dropped it. ECONNREFUSED: an ICMP port unreachable came
            // back for an earlier one (the receiving socket had closed, on a real host at
            // the end of a test), and this one was not sent. The receiver counts neither.
            if matches!(err.raw_os_error(), Some(libc::ENOBUFS | libc::ECONNREFUSED)) {
                continue;
            }
            return Err(err);
        }
        number += 1;
        counters.datagrams_sent.fetch_add(1, Ordering::Relaxed);
        counters.written.fetch_add(len as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// Counts the datagrams that arrive until the measurement ends.
pub fn receive(sock: &UdpSocket, schedule: &Schedule, counters: &Counters, stop: &AtomicBool) -> io::Result<()> {
    let mut buf = vec![0u8; 65_536];
    while !schedule.over(stop) {
        if !sys::wait_ready(sock.fd.as_raw_fd(), libc::POLLIN, POLL_PS / 1000)? {
            continue;
        }
        loop {
            // SAFETY: `buf` is writable for its length.
            let n = unsafe { libc::recv(sock.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT) };
            if n < 0 {
                break;
            }
            if n >= 8 {
                let number = u64::from_be_bytes(buf[..8].try_into().expect("8 bytes"));
                counters.datagrams_expected.fetch_max(number.saturating_add(1), Ordering::Relaxed);
            }
            counters.datagrams_received.fetch_add(1, Ordering::Relaxed);
            counters.note_read(n as u64, schedule.clock.now());
        }
    }
    Ok(())
}
