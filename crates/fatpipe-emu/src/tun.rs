//! TUN devices: a host's IP packets, without link-layer framing, read and written by the
//! emulator through a descriptor. The device belongs to the namespace the descriptor was
//! opened in and disappears with the descriptor.
//!
//! With offloads (`Offload::Tso`, the default) the device is opened with `IFF_VNET_HDR`, so
//! every packet is preceded by a virtio-net header (`gso.rs`), and `TUNSETOFFLOAD` tells
//! the kernel the device checksums TCP and UDP and segments TCP (`TUN_F_CSUM`,
//! `TUN_F_TSO4`, `TUN_F_TSO_ECN`; the namespaces have no IPv6): the host's TCP then hands it super-packets
//! of up to 64 KB, as to a NIC with TSO, and takes super-packets back, as from a NIC with
//! GRO. A kernel that refuses any of it gets the plain device (one packet per read and
//! write), and the refusal is reported.

use crate::sys;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

/// Name of every host's device (each lives in its own namespace).
pub const DEVICE: &str = "fp0";

/// What the device offloads from the host's kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offload {
    /// One packet per read and write, no header.
    None,
    /// Virtio-net headers, checksum offload, TSO and GRO.
    Tso,
}

pub struct Tun {
    fd: OwnedFd,
    offload: Offload,
}

impl Tun {
    /// Creates the TUN device `name` in the calling thread's namespace: IP packets only
    /// (IFF_TUN), no packet-information prefix (IFF_NO_PI), non-blocking; with `offload`
    /// if the kernel grants it. Returns the device and, when `Tso` was asked and refused,
    /// the kernel's answer.
    pub fn create(name: &str, offload: Offload) -> io::Result<(Tun, Option<String>)> {
        if offload == Offload::Tso {
            match Tun::open(name, true) {
                Ok(fd) => match enable_offloads(&fd) {
                    Ok(()) => return Ok((Tun { fd, offload }, None)),
                    // The header cannot be turned off on an attached descriptor: closing
                    // it removes the device, which is made again without.
                    Err(e) => {
                        drop(fd);
                        return Ok((Tun { fd: Tun::open(name, false)?, offload: Offload::None }, Some(e.to_string())));
                    }
                },
                Err(e) => {
                    return Ok((
                        Tun { fd: Tun::open(name, false)?, offload: Offload::None },
                        Some(format!("IFF_VNET_HDR: {e}")),
                    ))
                }
            }
        }
        Ok((Tun { fd: Tun::open(name, false)?, offload: Offload::None }, None))
    }

    fn open(name: &str, vnet_hdr: bool) -> io::Result<OwnedFd> {
        // SAFETY: open(2) of the TUN clone device.
        let fd = sys::owned(unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) })
            .map_err(|e| crate::netns::with_context(e, "open /dev/net/tun"))?;
        // SAFETY: ifreq is plain data; zero is valid.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (dst, &b) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
            *dst = b as libc::c_char;
        }
        let vnet = if vnet_hdr { libc::IFF_VNET_HDR } else { 0 };
        req.ifr_ifru.ifru_flags = (libc::IFF_TUN | libc::IFF_NO_PI | vnet) as libc::c_short;
        // SAFETY: TUNSETIFF reads one ifreq.
        sys::check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut libc::ifreq) })
            .map_err(|e| crate::netns::with_context(e, "TUNSETIFF"))?;
        sys::set_nonblocking(&fd)?;
        Ok(fd)
    }

    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn offload(&self) -> Offload {
        self.offload
    }
}

/// The header's size and byte order (little-endian, as `gso::VnetHdr` reads it), then the
/// offloads.
fn enable_offloads(fd: &OwnedFd) -> io::Result<()> {
    let size = crate::gso::VNET_HDR_LEN as libc::c_int;
    // SAFETY: TUNSETVNETHDRSZ reads one int.
    sys::check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETVNETHDRSZ, &size as *const libc::c_int) })
        .map_err(|e| crate::netns::with_context(e, "TUNSETVNETHDRSZ"))?;
    let little_endian: libc::c_int = 1;
    // SAFETY: TUNSETVNETLE reads one int.
    sys::check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETVNETLE, &little_endian as *const libc::c_int) })
        .map_err(|e| crate::netns::with_context(e, "TUNSETVNETLE"))?;
    let features = libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO_ECN;
    // SAFETY: TUNSETOFFLOAD takes the feature bits as its argument.
    sys::check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETOFFLOAD, features as libc::c_ulong) })
        .map_err(|e| crate::netns::with_context(e, "TUNSETOFFLOAD"))?;
    Ok(())
}
