//! HTTP workload, after document 000's paced Apache server and its Zeus client: a client
//! fetches a list of objects from a server, one request after another. The flow's sender
//! host is the server (it sends the responses, the flow's data); its receiver host is the
//! client.
//!
//! - HTTP/1.0: every request opens a new connection (three-way handshake, fresh sender and
//!   receiver state, slow start from the initial window again); the next opens when the
//!   previous response's last byte has arrived. The connection is not closed by FIN
//!   segments: the client simply moves on and packets of the old connection are ignored.
//! - Persistent HTTP/1.1: one connection; the next request goes out when the previous
//!   response's last byte has arrived (no pipelining). The window carries over, subject to
//!   the sender's slow start after idle (an RTO without data in flight; the RTT-long gap
//!   between a response and the next request is shorter than the RTO, so it rarely applies).
//!
//! The request (`request_bytes`, one segment) carries the ACK of the SYN-ACK on a new
//! connection. The server answers it with its first response segment (piggybacked ACK);
//! until a response byte arrives the client retransmits the request on its own timer (its
//! RTO, seeded by the handshake's RTT, backed off per expiry).
//!
//! The server writes a response at once, or paced (document 000's Apache `explicit_rate_size`
//! and `explicit_rate_period`): a burst of `burst_bytes` when the request arrives and one
//! every `period_ps` after it, each a blocking write (the unwritten rest of a burst carries
//! over: a server never drops part of a file), counting failed burst cycles as the paced
//! source does (`burst.rs`).
//!
//! Each completed request is recorded: when the client started it (connect() for a new
//! HTTP/1.0 connection, else the request), when the request first went out, when the first
//! and last response bytes arrived. Response time = last byte - start.

use super::burst::BurstStats;
use crate::packet::{Packet, PacketKind};
use crate::tcp::handshake::Established;
use crate::tcp::rtt::RttEstimator;
use crate::tcp::{TcpConfig, TcpSender};
use crate::time::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// When the client starts its first request.
    pub start_ps: Time,
    /// No request starts at or after this time (None: until the run ends); a response under
    /// way is still completed.
    pub stop_ps: Option<Time>,
    /// HTTP/1.1 persistent connection (true) or HTTP/1.0, a connection per request (false).
    pub persistent: bool,
    /// Object sizes, bytes: request i fetches object i mod the list's length.
    pub objects_bytes: Vec<u64>,
    /// Requests the client makes in turn.
    pub requests: u64,
    /// Bytes of one request (the GET line and headers), sent as one segment.
    pub request_bytes: u32,
    /// The server writes each response in paced bursts (None: all at once).
    pub server_pacing: Option<ServerPacing>,
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerPacing {
    pub burst_bytes: u64,
    pub period_ps: Time,
}

/// One completed request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestRecord {
    /// Index of the request (0, 1, ...), and of the object it fetched in `objects_bytes`.
    pub request: u64,
    pub object: u32,
    /// Which of the flow's connections carried it (0, 1, ...).
    pub connection: u64,
    pub size_bytes: u64,
    /// The client started the request: sent the SYN of a new connection, or the request.
    pub start_ps: Time,
    /// The request segment first went out.
    pub request_sent_ps: Time,
    /// The first response segment arrived, and the last response byte was delivered in order.
    pub first_byte_ps: Time,
    pub last_byte_ps: Time,
}

impl RequestRecord {
    pub fn response_time_ps(&self) -> Time {
        self.last_byte_ps - self.start_ps
    }
}

crate::columns! {
/// Every flow's completed requests as columns (docs/core-interface.md).
#[derive(Clone, Debug, Default, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestTable {
    pub flow: Vec<u32>,
    pub request: Vec<u64>,
    pub object: Vec<u32>,
    pub connection: Vec<u64>,
    pub size_bytes: Vec<u64>,
    pub start_ps: Vec<u64>,
    pub request_sent_ps: Vec<u64>,
    pub first_byte_ps: Vec<u64>,
    pub last_byte_ps: Vec<u64>,
    pub response_time_ps: Vec<u64>,
}
}

impl RequestTable {
    pub fn push(&mut self, flow: u32, r: &RequestRecord) {
        self.flow.push(flow);
        self.request.push(r.request);
        self.object.push(r.object);
        self.connection.push(r.connection);
        self.size_bytes.push(r.size_bytes);
        self.start_ps.push(r.start_ps);
        self.request_sent_ps.push(r.request_sent_ps);
        self.first_byte_ps.push(r.first_byte_ps);
        self.last_byte_ps.push(r.last_byte_ps);
        self.response_time_ps.push(r.response_time_ps());
    }
}

/// What the client does to start its next request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextRequest {
    /// Open a new connection first (HTTP/1.0, or the persistent connection's first).
    NewConnection,
    /// Send the request on the open connection.
    Send,
}

/// The request under way.
#[derive(Clone, Copy, Debug)]
struct InProgress {
    record: RequestRecord,
    /// The response's bytes in the connection's byte stream: [offset, offset + size).
    offset: u64,
    sent: bool,
    resent: bool,
    answered: bool,
}

/// Client and server state of one HTTP flow.
pub struct HttpSession {
    cfg: HttpConfig,
    flow: u32,
    client: u32,
    server: u32,
    header_bytes: u32,
    initial_rto_ps: Time,
    min_rto_ps: Time,
    max_rto_ps: Time,
    /// Requests started so far.
    started: u64,
    current: Option<InProgress>,
    pub records: Vec<RequestRecord>,
    /// Connections opened so far.
    pub connections: u64,
    /// Response bytes requested on the current connection.
    conn_bytes: u64,
    /// The client's estimator, for retransmitting a request (one per connection, as a socket's).
    rtt: RttEstimator,
    request_deadline: Option<Time>,
    pub request_retransmissions: u64,
    /// Server: the highest request it has answered, and what it has yet to write of it.
    answered: Option<u64>,
    unwritten_bytes: u64,
}

impl HttpSession {
    /// `client` is the flow's receiver host, `server` its sender host.
    pub fn new(flow: u32, client: u32, server: u32, cfg: &HttpConfig, tcp: &TcpConfig) -> HttpSession {
        HttpSession {
            cfg: cfg.clone(),
            flow,
            client,
            server,
            header_bytes: tcp.header_bytes(),
            initial_rto_ps: tcp.initial_rto_ps,
            min_rto_ps: tcp.min_rto_ps,
            max_rto_ps: tcp.max_rto_ps,
            started: 0,
            current: None,
            // One record per request; capped so a huge count does not reserve memory up front.
            records: Vec::with_capacity(cfg.requests.min(1 << 16) as usize),
            connections: 0,
            conn_bytes: 0,
            rtt: RttEstimator::new(tcp.initial_rto_ps, tcp.min_rto_ps, tcp.max_rto_ps),
            request_deadline: None,
            request_retransmissions: 0,
            answered: None,
            unwritten_bytes: 0,
        }
    }

    pub fn config(&self) -> &HttpConfig {
        &self.cfg
    }

    /// Every request has been answered completely.
    pub fn is_done(&self) -> bool {
        self.records.len() as u64 == self.cfg.requests
    }

    /// The client's request retransmission deadline.
    pub fn request_deadline(&self) -> Option<Time> {
        self.request_deadline
    }

    /// The client starts its next request, if one remains and `stop_ps` has not come.
    pub fn begin(&mut self, now: Time) -> Option<NextRequest> {
        if self.started == self.cfg.requests || self.cfg.stop_ps.is_some_and(|s| now >= s) {
            return None;
        }
        let next = if !self.cfg.persistent || self.connections == 0 {
            self.connections += 1;
            self.conn_bytes = 0;
            self.rtt = RttEstimator::new(self.initial_rto_ps, self.min_rto_ps, self.max_rto_ps);
            NextRequest::NewConnection
        } else {
            NextRequest::Send
        };
        let object = (self.started % self.cfg.objects_bytes.len() as u64) as u32;
        let size = self.cfg.objects_bytes[object as usize];
        self.current = Some(InProgress {
            record: RequestRecord {
                request: self.started,
                object,
                connection: self.connections - 1,
                size_bytes: size,
                start_ps: now,
                request_sent_ps: 0,
                first_byte_ps: 0,
                last_byte_ps: 0,
            },
            offset: self.conn_bytes,
            sent: false,
            resent: false,
            answered: false,
        });
        self.conn_bytes += size;
        self.started += 1;
        Some(next)
    }

    /// The client's connection is established: its RTT sample seeds the client's estimator.
    pub fn on_handshake(&mut self, est: Established) {
        if let Some(r) = est.rtt {
            self.rtt.sample(r);
        }
    }

    /// The client sends (or resends) the current request on connection `conn`; `ts_ecr` is
    /// its timestamp echo (the SYN-ACK's on a new connection).
    pub fn send_request(&mut self, now: Time, conn: u16, ts_ecr: Time, out: &mut Vec<Packet>) {
        let Some(cur) = &mut self.current else { return };
        if cur.sent {
            cur.resent = true;
        } else {
            cur.sent = true;
            cur.record.request_sent_ps = now;
        }
        out.push(Packet {
            flow: self.flow,
            conn,
            src: self.client,
            dst: self.server,
            kind: PacketKind::Request,
            seq: cur.record.request,
            payload_bytes: self.cfg.request_bytes,
            ip_bytes: self.header_bytes + self.cfg.request_bytes,
            ack: 0,
            window_bytes: 0,
            sack: Default::default(),
            ts_val: now,
            ts_ecr,
            retransmission: cur.resent,
            ecn: Default::default(),
        });
        self.request_deadline = Some(now + self.rtt.rto());
    }

    /// The request timer expired: no response byte yet, so the request goes again (RFC 6298
    /// 5.4-5.6: retransmit, back off, restart the timer).
    pub fn on_request_timer(&mut self, now: Time, conn: u16, out: &mut Vec<Packet>) {
        if self.request_deadline.is_none_or(|d| d > now) {
            return;
        }
        self.request_retransmissions += 1;
        self.rtt.back_off();
        self.send_request(now, conn, 0, out);
    }

    /// A response segment reached the client, whose receiver has now delivered `rcv_nxt`
    /// bytes of the connection in order. Returns true when the response is complete.
    pub fn on_response_data(&mut self, now: Time, seg: &Packet, rcv_nxt: u64) -> bool {
        let Some(cur) = &mut self.current else { return false };
        let end = cur.offset + cur.record.size_bytes;
        if !cur.answered && seg.end_seq() > cur.offset && seg.seq < end {
            cur.answered = true;
            cur.record.first_byte_ps = now;
            self.request_deadline = None;
            if !cur.resent {
                // Karn: no sample from a request that was sent twice.
                self.rtt.sample(now - cur.record.request_sent_ps);
            }
        }
        if cur.answered && rcv_nxt >= end {
            cur.record.last_byte_ps = now;
            self.records.push(cur.record);
            self.current = None;
            return true;
        }
        false
    }

    /// A request reached the server. A new one (not a retransmission of one it answered)
    /// makes it start the response: returns true, and `next_write` gives the bytes to write.
    pub fn on_request(&mut self, req: &Packet) -> bool {
        if self.answered.is_some_and(|a| req.seq <= a) {
            return false;
        }
        self.answered = Some(req.seq);
        let object = (req.seq % self.cfg.objects_bytes.len() as u64) as usize;
        self.unwritten_bytes = self.cfg.objects_bytes[object];
        true
    }

    /// The server writes the next part of its response into `sender`: all of it, or with
    /// pacing one burst (counted in `bursts`). Returns when the next burst is due, if any.
    pub fn write_response(
        &mut self,
        sender: &mut TcpSender,
        bursts: &mut BurstStats,
        now: Time,
        out: &mut Vec<Packet>,
    ) -> Option<Time> {
        match self.cfg.server_pacing {
            None => {
                // One blocking write of the whole object.
                sender.write_burst(now, std::mem::take(&mut self.unwritten_bytes), true, out);
                None
            }
            Some(p) => {
                let bytes = p.burst_bytes.min(self.unwritten_bytes);
                if bytes == 0 {
                    return None;
                }
                self.unwritten_bytes -= bytes;
                bursts.write(sender, now, bytes, true, out);
                (self.unwritten_bytes > 0).then_some(now + p.period_ps)
            }
        }
    }
}
