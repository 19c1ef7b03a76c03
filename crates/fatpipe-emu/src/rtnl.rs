//! One rtnetlink request: a host route with metrics (what `ip route replace 10.0.0.4/32 dev
//! fp0 initcwnd 3 ssthresh lock 100` sends), in the calling thread's namespace. Linux takes
//! a connection's initial window and a fixed initial ssthresh only from its route.

use crate::kernel::RouteMetrics;
use crate::sys;
use std::io;
use std::os::fd::AsRawFd;

// linux/rtnetlink.h, linux/netlink.h
const RTM_NEWROUTE: u16 = 24;
const NLM_F_REQUEST: u16 = 0x1;
const NLM_F_ACK: u16 = 0x4;
const NLM_F_REPLACE: u16 = 0x100;
const NLM_F_CREATE: u16 = 0x400;
const NLMSG_ERROR: u16 = 2;
const RT_TABLE_MAIN: u8 = 254;
const RTPROT_STATIC: u8 = 4;
const RT_SCOPE_LINK: u8 = 253;
const RTN_UNICAST: u8 = 1;
const RTA_DST: u16 = 1;
const RTA_OIF: u16 = 4;
const RTA_METRICS: u16 = 8;
const RTAX_LOCK: u16 = 1;
const RTAX_SSTHRESH: u16 = 6;
const RTAX_INITCWND: u16 = 11;
const RTAX_INITRWND: u16 = 14;

fn attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(buf.len().next_multiple_of(4), 0);
}

/// Adds (or replaces) the route to `dst`/32 through interface `ifname` with `metrics`.
pub fn set_host_route(dst: [u8; 4], ifname: &str, metrics: &RouteMetrics) -> io::Result<()> {
    let name =
        std::ffi::CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name"))?;
    // SAFETY: a NUL-terminated name.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(io::Error::last_os_error());
    }
    let mut metrics_attrs = Vec::new();
    if let Some(v) = metrics.initcwnd {
        attr(&mut metrics_attrs, RTAX_INITCWND, &v.to_ne_bytes());
    }
    if let Some(v) = metrics.initrwnd {
        attr(&mut metrics_attrs, RTAX_INITRWND, &v.to_ne_bytes());
    }
    if let Some(v) = metrics.ssthresh {
        attr(&mut metrics_attrs, RTAX_SSTHRESH, &v.to_ne_bytes());
        // Locked: a connection takes it as its ssthresh (tcp_init_metrics).
        attr(&mut metrics_attrs, RTAX_LOCK, &(1u32 << RTAX_SSTHRESH).to_ne_bytes());
    }
    let mut msg = vec![0u8; 16]; // nlmsghdr, filled last
    msg.extend_from_slice(&[libc::AF_INET as u8, 32, 0, 0, RT_TABLE_MAIN, RTPROT_STATIC, RT_SCOPE_LINK, RTN_UNICAST]);
    msg.extend_from_slice(&0u32.to_ne_bytes()); // rtm_flags
    attr(&mut msg, RTA_DST, &dst);
    attr(&mut msg, RTA_OIF, &ifindex.to_ne_bytes());
    attr(&mut msg, RTA_METRICS, &metrics_attrs);
    let len = msg.len() as u32;
    msg[0..4].copy_from_slice(&len.to_ne_bytes());
    msg[4..6].copy_from_slice(&RTM_NEWROUTE.to_ne_bytes());
    msg[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE).to_ne_bytes());
    msg[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence
                                                     // SAFETY: plain socket(2).
    let sock = sys::owned(unsafe {
        libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE)
    })?;
    // SAFETY: a zeroed sockaddr_nl addresses the kernel.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
    // SAFETY: `msg` and the address are valid for the lengths given.
    let sent = unsafe {
        libc::sendto(
            sock.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut reply = [0u8; 1024];
    // SAFETY: `reply` is writable for its length.
    let n = unsafe { libc::recv(sock.as_raw_fd(), reply.as_mut_ptr().cast(), reply.len(), 0) };
    if n < 20 {
        return Err(io::Error::last_os_error());
    }
    let kind = u16::from_ne_bytes([reply[4], reply[5]]);
    let errno = i32::from_ne_bytes([reply[16], reply[17], reply[18], reply[19]]);
    if kind == NLMSG_ERROR && errno != 0 {
        return Err(io::Error::from_raw_os_error(-errno));
    }
    Ok(())
}
