//! TUN devices: a host's IP packets, without link-layer framing, read and written by the
//! emulator through a descriptor. The device belongs to the namespace the descriptor was
//! opened in and disappears with the descriptor.

use crate::sys;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Name of every host's device (each lives in its own namespace).
pub const DEVICE: &str = "fp0";

pub struct Tun {
    fd: OwnedFd,
}

impl Tun {
    /// Creates the TUN device `name` in the calling thread's namespace: IP packets only
    /// (IFF_TUN), no packet-information prefix (IFF_NO_PI), non-blocking.
    pub fn create(name: &str) -> io::Result<Tun> {
        // SAFETY: open(2) of the TUN clone device.
        let fd = sys::owned(unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) })
            .map_err(|e| crate::netns::with_context(e, "open /dev/net/tun"))?;
        // SAFETY: ifreq is plain data; zero is valid.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, &b) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
            *dst = b as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads one ifreq.
        sys::check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut libc::ifreq) })
            .map_err(|e| crate::netns::with_context(e, "TUNSETIFF"))?;
        sys::set_nonblocking(&fd)?;
        Ok(Tun { fd })
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
