//! Network namespaces, one per emulated host, and what is configured inside them.
//!
//! A namespace here is anonymous: a helper thread `unshare`s a new one, configures it, opens
//! `/proc/thread-self/ns/net` and exits; that descriptor (and the sockets and TUN device
//! opened inside) keep the namespace alive. Nothing is mounted under /run/netns, so when the
//! descriptors close -- at the end of a run, on an error, on Ctrl-C, or when the process is
//! killed outright -- the kernel removes the namespace with its devices and sockets: there is
//! nothing to clean up and nothing that can be left behind.
//!
//! `setns(2)` moves only the calling thread, so one process keeps a thread per host inside
//! that host's namespace; a descriptor opened inside (a socket, the TUN device) keeps working
//! from any thread. To look inside during a run: `nsenter --net=/proc/<pid>/fd/<fd>` with the
//! descriptor `Namespace::path` names.

use crate::sys;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

pub struct Namespace {
    /// The host it stands for (names errors and files).
    pub name: String,
    fd: OwnedFd,
}

impl Namespace {
    /// Creates a namespace and runs `setup` inside it (on a helper thread that ends after);
    /// returns the namespace and what `setup` returned.
    pub fn create<T: Send>(name: &str, setup: impl FnOnce() -> io::Result<T> + Send) -> io::Result<(Namespace, T)> {
        std::thread::scope(|s| {
            s.spawn(|| {
                // SAFETY: unshare affects only this helper thread's namespaces.
                sys::check(unsafe { libc::unshare(libc::CLONE_NEWNET) })
                    .map_err(|e| with_context(e, "unshare(CLONE_NEWNET)"))?;
                let fd = sys::owned(unsafe {
                    libc::open(c"/proc/thread-self/ns/net".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC)
                })?;
                let value = setup()?;
                Ok((Namespace { name: name.to_string(), fd }, value))
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("namespace setup panicked")))
        })
    }

    /// Another handle on the same namespace (for a thread that enters it later).
    pub fn try_clone(&self) -> io::Result<Namespace> {
        Ok(Namespace { name: self.name.clone(), fd: self.fd.try_clone()? })
    }

    /// Moves the calling thread into this namespace (sockets it then opens live here).
    pub fn enter(&self) -> io::Result<()> {
        // SAFETY: setns on a namespace descriptor we own; it moves only this thread.
        sys::check(unsafe { libc::setns(self.fd.as_raw_fd(), libc::CLONE_NEWNET) })
            .map(drop)
            .map_err(|e| with_context(e, "setns"))
    }

    /// Runs `f` on a helper thread inside this namespace (the caller stays where it is).
    pub fn run<T: Send>(&self, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                self.enter()?;
                f()
            })
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("namespace task panicked")))
        })
    }

    /// The namespace's inode number (what `lsns` and /proc/<pid>/ns/net show).
    pub fn inode(&self) -> io::Result<u64> {
        let mut st = std::mem::MaybeUninit::<libc::stat>::zeroed();
        // SAFETY: fstat fills the stat buffer for a descriptor we own.
        sys::check(unsafe { libc::fstat(self.fd.as_raw_fd(), st.as_mut_ptr()) })?;
        // SAFETY: fstat succeeded, the buffer is initialized.
        Ok(unsafe { st.assume_init() }.st_ino)
    }

    /// A path that opens this namespace while the emulation runs (for nsenter, ip, tcpdump).
    pub fn path(&self) -> String {
        format!("/proc/{}/fd/{}", std::process::id(), self.fd.as_raw_fd())
    }
}

pub fn with_context(err: io::Error, what: &str) -> io::Error {
    io::Error::new(err.kind(), format!("{what}: {err}"))
}

/// Writes a sysctl of the calling thread's network namespace (`net.ipv4.tcp_sack` is
/// /proc/sys/net/ipv4/tcp_sack): /proc/sys/net resolves against the thread, not the process.
pub fn write_sysctl(key: &str, value: &str) -> io::Result<()> {
    let path = sysctl_path(key);
    fs::write(&path, value).map_err(|e| with_context(e, &format!("sysctl {key} = {value}")))
}

pub fn read_sysctl(key: &str) -> io::Result<String> {
    fs::read_to_string(sysctl_path(key)).map(|s| s.trim().to_string())
}

pub fn sysctl_exists(key: &str) -> bool {
    std::path::Path::new(&sysctl_path(key)).exists()
}

fn sysctl_path(key: &str) -> String {
    format!("/proc/sys/{}", key.replace('.', "/"))
}

/// Interface settings through the classic ioctls on a datagram socket of the calling
/// thread's namespace.
pub struct Interfaces {
    sock: OwnedFd,
}

impl Interfaces {
    pub fn new() -> io::Result<Interfaces> {
        // SAFETY: plain socket(2) call.
        Ok(Interfaces {
            sock: sys::owned(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?,
        })
    }

    fn ifreq(name: &str) -> io::Result<libc::ifreq> {
        // SAFETY: ifreq is plain data; zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        if name.len() >= req.ifr_name.len() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name {name:?} too long")));
        }
        for (dst, &b) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
            *dst = b as libc::c_char;
        }
        Ok(req)
    }

    fn ioctl(&self, request: libc::Ioctl, req: &mut libc::ifreq, what: &str) -> io::Result<()> {
        // SAFETY: the SIOC* requests used here read or write one ifreq.
        sys::check(unsafe { libc::ioctl(self.sock.as_raw_fd(), request, req as *mut libc::ifreq) })
            .map(drop)
            .map_err(|e| with_context(e, what))
    }

    /// Brings the interface up.
    pub fn up(&self, name: &str) -> io::Result<()> {
        let mut req = Self::ifreq(name)?;
        self.ioctl(libc::SIOCGIFFLAGS, &mut req, "SIOCGIFFLAGS")?;
        // SAFETY: the flags member of the union is what SIOCGIFFLAGS filled.
        unsafe { req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short };
        self.ioctl(libc::SIOCSIFFLAGS, &mut req, &format!("bring {name} up"))
    }

    pub fn set_mtu(&self, name: &str, mtu: u32) -> io::Result<()> {
        let mut req = Self::ifreq(name)?;
        req.ifr_ifru.ifru_mtu = mtu as libc::c_int;
        self.ioctl(libc::SIOCSIFMTU, &mut req, &format!("set {name} MTU {mtu}"))
    }

    pub fn set_txqueuelen(&self, name: &str, packets: u32) -> io::Result<()> {
        let mut req = Self::ifreq(name)?;
        req.ifr_ifru.ifru_metric = packets as libc::c_int; // ifr_qlen shares the union
        self.ioctl(libc::SIOCSIFTXQLEN, &mut req, &format!("set {name} txqueuelen {packets}"))
    }

    /// Gives the interface `ip/prefix_len`; the kernel adds the connected route.
    pub fn set_ipv4(&self, name: &str, ip: [u8; 4], prefix_len: u32) -> io::Result<()> {
        let mut req = Self::ifreq(name)?;
        set_sockaddr(&mut req, ip);
        self.ioctl(libc::SIOCSIFADDR, &mut req, &format!("set {name} address"))?;
        let mask = if prefix_len == 0 { 0 } else { u32::MAX << (32 - prefix_len) };
        let mut req = Self::ifreq(name)?;
        set_sockaddr(&mut req, mask.to_be_bytes());
        self.ioctl(libc::SIOCSIFNETMASK, &mut req, &format!("set {name} netmask"))
    }
}

fn set_sockaddr(req: &mut libc::ifreq, ip: [u8; 4]) {
    let sin = sys::sockaddr_in(ip, 0);
    // SAFETY: sockaddr_in fits in the sockaddr of the union (both 16 bytes).
    unsafe { std::ptr::write((&mut req.ifr_ifru.ifru_addr as *mut libc::sockaddr).cast::<libc::sockaddr_in>(), sin) };
}

/// Capability bits of linux/capability.h.
pub const CAP_NET_ADMIN: u64 = 1 << 12;
pub const CAP_SYS_ADMIN: u64 = 1 << 21;

/// Whether the process may create namespaces and TUN devices: CAP_SYS_ADMIN (unshare,
/// setns) and CAP_NET_ADMIN (TUN, interface settings) in its effective set.
pub fn has_privileges() -> bool {
    has_capabilities(CAP_SYS_ADMIN | CAP_NET_ADMIN)
}

/// Whether the process's effective capability set holds every bit of `mask`.
pub fn has_capabilities(mask: u64) -> bool {
    let Ok(status) = fs::read_to_string("/proc/self/status") else { return false };
    let Some(line) = status.lines().find(|l| l.starts_with("CapEff:")) else { return false };
    let Ok(caps) = u64::from_str_radix(line["CapEff:".len()..].trim(), 16) else { return false };
    caps & mask == mask
}
