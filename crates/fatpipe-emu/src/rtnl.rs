//! Two rtnetlink requests, in the calling thread's namespace: a host route with metrics (what
//! `ip route replace 10.0.0.4/32 dev fp0 initcwnd 3 ssthresh lock 100` sends; Linux takes a
//! connection's initial window and a fixed initial ssthresh only from its route), and a
//! device's root qdisc counters (what `tc -s qdisc show dev fp0` reads).

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

// linux/rtnetlink.h, linux/pkt_sched.h, linux/gen_stats.h
const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_DONE: u16 = 3;
const TCA_KIND: u16 = 1;
const TCA_STATS2: u16 = 7;
const TCA_STATS_BASIC: u16 = 1;
const TCA_STATS_QUEUE: u16 = 3;
const TC_H_ROOT: u32 = 0xFFFF_FFFF;

fn attr(buf: &mut Vec<u8>, kind: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&kind.to_ne_bytes());
    buf.extend_from_slice(payload);
    buf.resize(buf.len().next_multiple_of(4), 0);
}

fn ifindex(ifname: &str) -> io::Result<u32> {
    let name =
        std::ffi::CString::new(ifname).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name"))?;
    // SAFETY: a NUL-terminated name.
    match unsafe { libc::if_nametoindex(name.as_ptr()) } {
        0 => Err(io::Error::last_os_error()),
        i => Ok(i),
    }
}

/// A device's root qdisc as `tc -s qdisc show` reports it (struct gnet_stats_basic and
/// gnet_stats_queue, linux/gen_stats.h). `drops` are packets the qdisc refused or dropped:
/// its enqueue then returned NET_XMIT_DROP (or NET_XMIT_CN), which puts the sending TCP into
/// CWR (`__tcp_transmit_skb` calls `tcp_enter_cwr` on any positive return). `requeues` are
/// packets the driver handed back (NETDEV_TX_BUSY or a stopped queue), held in the qdisc.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QdiscStats {
    /// The qdisc's name (pfifo_fast: Linux's default_qdisc here, with the device's
    /// txqueuelen as its limit).
    pub kind: String,
    /// Packets it passed to the device.
    pub packets: u64,
    pub drops: u64,
    pub requeues: u64,
    pub overlimits: u64,
    /// Packets it held at the end.
    pub backlog_packets: u64,
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    b.get(at..at + 4).map(|x| u32::from_ne_bytes(x.try_into().expect("4 bytes")))
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|x| u16::from_ne_bytes(x.try_into().expect("2 bytes")))
}

/// The attributes of a netlink payload: (kind, payload) in order.
fn attrs(mut b: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        let len = usize::from(u16_at(b, 0)?);
        let kind = u16_at(b, 2)? & 0x3FFF; // without NLA_F_NESTED / NLA_F_NET_BYTEORDER
        if len < 4 || len > b.len() {
            return None;
        }
        let payload = &b[4..len];
        b = &b[len.next_multiple_of(4).min(b.len())..];
        Some((kind, payload))
    })
}

/// One RTM_NEWQDISC message's payload (struct tcmsg, then attributes): its interface index,
/// parent and counters.
fn parse_qdisc(body: &[u8]) -> Option<(u32, u32, QdiscStats)> {
    let ifindex = u32_at(body, 4)?;
    let parent = u32_at(body, 12)?;
    let mut out = QdiscStats::default();
    for (kind, payload) in attrs(body.get(20..)?) {
        match kind {
            TCA_KIND => out.kind = String::from_utf8_lossy(payload).trim_end_matches('\0').to_string(),
            TCA_STATS2 => {
                for (k, p) in attrs(payload) {
                    match k {
                        // gnet_stats_basic: __u64 bytes, __u32 packets.
                        TCA_STATS_BASIC => out.packets = u64::from(u32_at(p, 8).unwrap_or(0)),
                        // gnet_stats_queue: qlen, backlog (bytes), drops, requeues, overlimits.
                        TCA_STATS_QUEUE => {
                            out.backlog_packets = u64::from(u32_at(p, 0).unwrap_or(0));
                            out.drops = u64::from(u32_at(p, 8).unwrap_or(0));
                            out.requeues = u64::from(u32_at(p, 12).unwrap_or(0));
                            out.overlimits = u64::from(u32_at(p, 16).unwrap_or(0));
                        }
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }
    Some((ifindex, parent, out))
}

/// The root qdisc of interface `ifname` and its counters (an RTM_GETQDISC dump of the calling
/// thread's namespace, as `tc -s qdisc show dev` asks).
pub fn root_qdisc(ifname: &str) -> io::Result<QdiscStats> {
    let ifindex = ifindex(ifname)?;
    let mut msg = vec![0u8; 16];
    msg.extend_from_slice(&[libc::AF_UNSPEC as u8, 0, 0, 0]);
    msg.extend_from_slice(&(ifindex as i32).to_ne_bytes());
    msg.extend_from_slice(&[0u8; 12]); // handle, parent, info
    let replies = request(msg, RTM_GETQDISC, NLM_F_REQUEST | NLM_F_DUMP)?;
    replies
        .iter()
        .filter(|(kind, _)| *kind == RTM_NEWQDISC)
        .filter_map(|(_, body)| parse_qdisc(body))
        .find(|&(i, parent, _)| i == ifindex && parent == TC_H_ROOT)
        .map(|(_, _, stats)| stats)
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no root qdisc on {ifname}")))
}

/// Sends one netlink request (`msg` with room for its header) and gathers the replies,
/// (type, payload) each, until the kernel's DONE or its acknowledgement.
fn request(mut msg: Vec<u8>, kind: u16, flags: u16) -> io::Result<Vec<(u16, Vec<u8>)>> {
    let len = msg.len() as u32;
    msg[0..4].copy_from_slice(&len.to_ne_bytes());
    msg[4..6].copy_from_slice(&kind.to_ne_bytes());
    msg[6..8].copy_from_slice(&flags.to_ne_bytes());
    msg[8..12].copy_from_slice(&1u32.to_ne_bytes()); // sequence
    let sock = send(&msg)?;
    let mut out = Vec::new();
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        // SAFETY: `buf` is writable for its length.
        let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut b = &buf[..n as usize];
        while let (Some(len), Some(t)) = (u32_at(b, 0), u16_at(b, 4)) {
            let len = len as usize;
            if len < 16 || len > b.len() {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "a truncated netlink message"));
            }
            match t {
                NLMSG_DONE => return Ok(out),
                NLMSG_ERROR => {
                    let errno = u32_at(b, 16).unwrap_or(0) as i32;
                    return if errno == 0 { Ok(out) } else { Err(io::Error::from_raw_os_error(-errno)) };
                }
                _ => out.push((t, b[16..len].to_vec())),
            }
            b = &b[len.next_multiple_of(4).min(b.len())..];
        }
    }
}

/// A netlink socket with `msg` sent to the kernel.
fn send(msg: &[u8]) -> io::Result<std::os::fd::OwnedFd> {
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
    Ok(sock)
}

/// Adds (or replaces) the route to `dst`/32 through interface `ifname` with `metrics`.
pub fn set_host_route(dst: [u8; 4], ifname: &str, metrics: &RouteMetrics) -> io::Result<()> {
    let ifindex = ifindex(ifname)?;
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
    let mut msg = vec![0u8; 16]; // nlmsghdr, filled by `request`
    msg.extend_from_slice(&[libc::AF_INET as u8, 32, 0, 0, RT_TABLE_MAIN, RTPROT_STATIC, RT_SCOPE_LINK, RTN_UNICAST]);
    msg.extend_from_slice(&0u32.to_ne_bytes()); // rtm_flags
    attr(&mut msg, RTA_DST, &dst);
    attr(&mut msg, RTA_OIF, &ifindex.to_ne_bytes());
    attr(&mut msg, RTA_METRICS, &metrics_attrs);
    request(msg, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nla(kind: u16, payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        attr(&mut b, kind, payload);
        b
    }

    #[test]
    fn a_qdisc_message_gives_its_counters() {
        // What the kernel sends for `qdisc pfifo_fast 0: root ... (dropped 7, overlimits 0
        // requeues 3) backlog 2p`: a tcmsg, TCA_KIND, TCA_STATS2 with basic and queue stats.
        let mut body = vec![0u8; 4];
        body.extend_from_slice(&5u32.to_ne_bytes()); // ifindex
        body.extend_from_slice(&0u32.to_ne_bytes()); // handle
        body.extend_from_slice(&TC_H_ROOT.to_ne_bytes()); // parent
        body.extend_from_slice(&0u32.to_ne_bytes()); // info
        body.extend(nla(TCA_KIND, b"pfifo_fast\0"));
        let basic: Vec<u8> = [1_000_000u64.to_ne_bytes().as_slice(), &900u32.to_ne_bytes()].concat();
        let queue: Vec<u8> = [2u32, 3_000, 7, 3, 0].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let stats = [nla(TCA_STATS_BASIC, &basic), nla(TCA_STATS_QUEUE, &queue)].concat();
        body.extend(nla(TCA_STATS2 | 0x8000, &stats)); // NLA_F_NESTED set, as the kernel may
        let (i, parent, s) = parse_qdisc(&body).unwrap();
        assert_eq!((i, parent), (5, TC_H_ROOT));
        assert_eq!(
            s,
            QdiscStats {
                kind: "pfifo_fast".into(),
                packets: 900,
                drops: 7,
                requeues: 3,
                overlimits: 0,
                backlog_packets: 2
            }
        );
    }
}
