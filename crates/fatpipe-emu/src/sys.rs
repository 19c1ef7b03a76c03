//! Thin, checked wrappers over the libc calls the emulator makes. Errors come back as
//! `io::Error` with the OS message; callers add what they were doing.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The result of a libc call that returns -1 on error.
pub fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// A new file descriptor from a libc call (closed when dropped).
pub fn owned(ret: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: a non-negative return of socket/open/epoll_create is a fresh descriptor we own.
    check(ret).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

pub fn setsockopt<T>(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live T of the length given.
    let ret = unsafe {
        libc::setsockopt(fd.as_raw_fd(), level, name, (value as *const T).cast(), size_of::<T>() as libc::socklen_t)
    };
    check(ret).map(drop)
}

/// Reads a socket option into a zeroed T; returns it and the length the kernel wrote (a newer
/// or older kernel may know more or fewer fields of a struct).
pub fn getsockopt<T: Copy>(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int) -> io::Result<(T, usize)> {
    let mut value = MaybeUninit::<T>::zeroed();
    let mut len = size_of::<T>() as libc::socklen_t;
    // SAFETY: the buffer is size_of::<T>() bytes, zeroed, and every T used here is plain data.
    let ret = unsafe { libc::getsockopt(fd.as_raw_fd(), level, name, value.as_mut_ptr().cast(), &mut len) };
    check(ret)?;
    // SAFETY: zero-initialized plain-data structs and integers are valid at any bit pattern.
    Ok((unsafe { value.assume_init() }, len as usize))
}

/// Reads a string socket option (TCP_CONGESTION).
pub fn getsockopt_string(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int) -> io::Result<String> {
    let (buf, len) = getsockopt::<[u8; 64]>(fd, level, name)?;
    let text = &buf[..len.min(buf.len())];
    let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
    Ok(String::from_utf8_lossy(&text[..end]).into_owned())
}

pub fn set_nonblocking(fd: &impl AsRawFd) -> io::Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor we hold.
    let flags = check(unsafe { libc::fcntl(raw, libc::F_GETFL) })?;
    check(unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) }).map(drop)
}

/// `read(2)` on a non-blocking descriptor: Ok(None) when nothing is there.
#[inline]
pub fn read_nonblocking(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is writable for its length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let err = io::Error::last_os_error();
    match err.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(err),
    }
}

/// `write(2)` of one whole buffer (a datagram or an IP packet).
#[inline]
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is readable for its length.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// An IPv4 socket address for libc.
pub fn sockaddr_in(ip: [u8; 4], port: u16) -> libc::sockaddr_in {
    libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(ip) },
        sin_zero: [0; 8],
    }
}

/// Waits until `fd` is ready for `events` (POLLIN/POLLOUT) or `timeout_ns` passes
/// (nanosecond resolution, unlike poll's milliseconds). Returns whether it is ready.
pub fn wait_ready(fd: RawFd, events: libc::c_short, timeout_ns: u64) -> io::Result<bool> {
    let mut pfd = libc::pollfd { fd, events, revents: 0 };
    let ts = timespec(timeout_ns);
    // SAFETY: one valid pollfd and a valid timespec.
    let n = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
    if n < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(err) };
    }
    Ok(n > 0)
}

pub fn timespec(ns: u64) -> libc::timespec {
    libc::timespec { tv_sec: (ns / 1_000_000_000) as libc::time_t, tv_nsec: (ns % 1_000_000_000) as libc::c_long }
}

/// The port a socket is bound to (getsockname), e.g. after binding port 0.
pub fn local_port(fd: &impl AsRawFd) -> io::Result<u16> {
    Ok(local_addr(fd)?.1)
}

/// The IPv4 address and port a socket is bound to (getsockname).
pub fn local_addr(fd: &impl AsRawFd) -> io::Result<([u8; 4], u16)> {
    socket_name(fd, libc::getsockname)
}

/// The IPv4 address and port of a connected socket's peer (getpeername).
pub fn peer_addr(fd: &impl AsRawFd) -> io::Result<([u8; 4], u16)> {
    socket_name(fd, libc::getpeername)
}

type NameCall = unsafe extern "C" fn(libc::c_int, *mut libc::sockaddr, *mut libc::socklen_t) -> libc::c_int;

fn socket_name(fd: &impl AsRawFd, call: NameCall) -> io::Result<([u8; 4], u16)> {
    let mut addr = sockaddr_in([0; 4], 0);
    let mut len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
    // SAFETY: the buffer is a sockaddr_in of the length given.
    check(unsafe { call(fd.as_raw_fd(), (&mut addr as *mut libc::sockaddr_in).cast(), &mut len) })?;
    Ok((addr.sin_addr.s_addr.to_ne_bytes(), u16::from_be(addr.sin_port)))
}

/// `writev(2)` of one packet gathered from several buffers.
#[inline]
pub fn writev(fd: RawFd, iov: &[libc::iovec]) -> io::Result<usize> {
    // SAFETY: every iovec points to a live buffer of its length (the caller's slices).
    let n = unsafe { libc::writev(fd, iov.as_ptr(), iov.len() as libc::c_int) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}
