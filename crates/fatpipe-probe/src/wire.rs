//! The control connection: JSON lines, each an object with the protocol `version` and a
//! `type`. Every read has a deadline and a size limit, so a silent or flooding peer costs a
//! bounded wait and a bounded buffer.

use crate::PROTOCOL_VERSION;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a message could not be read.
#[derive(Debug)]
pub enum WireError {
    /// The peer closed the connection.
    Closed,
    /// Nothing complete arrived in time.
    Timeout,
    /// A line longer than the limit.
    TooLong(usize),
    /// Not a JSON object with a known `type` and the fields it needs.
    Malformed(String),
    /// Another protocol version.
    Version(String),
    /// The peer answered with an error message.
    Remote {
        code: String,
        message: String,
    },
    Io(io::Error),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Closed => f.write_str("the connection closed"),
            WireError::Timeout => f.write_str("no answer in time"),
            WireError::TooLong(n) => write!(f, "a message longer than {n} bytes (the limit)"),
            WireError::Malformed(m) => write!(f, "malformed message: {m}"),
            WireError::Version(m) => f.write_str(m),
            WireError::Remote { message, .. } => f.write_str(message),
            WireError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// One end of a control connection.
pub struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    /// Longest line accepted, newline excluded.
    max_line_bytes: usize,
    /// The longest a message of a few bytes may take to write (None: no limit); longer
    /// messages get `WRITE_BYTES_PER_S` more.
    write_timeout: Option<Duration>,
    /// A write in progress gives up once this is set (the daemon stops).
    abort: Option<Arc<AtomicBool>>,
}

/// The slowest a peer may take a long message (a result) in: 1 MB/s, on top of the write
/// timeout. A timeout on the whole message, not on each write call: a peer that never reads
/// lets a few bytes through now and then (the send buffer grows), which would restart a
/// per-call timeout for ever (issue 23).
const WRITE_BYTES_PER_S: u64 = 1_000_000;

impl Conn {
    pub fn new(stream: TcpStream, max_line_bytes: usize) -> io::Result<Conn> {
        // Small request-response messages: no Nagle delay on them (and the RTT measured with
        // them is the path's).
        stream.set_nodelay(true)?;
        Ok(Conn { stream, buf: Vec::new(), max_line_bytes, write_timeout: None, abort: None })
    }

    /// Gives every message sent from now on `timeout` (plus a second per megabyte) to be
    /// written; past it, `send` fails with `TimedOut` (a peer that does not read).
    /// Writes also give up once `abort` is set.
    pub fn set_write_timeout(&mut self, timeout: Duration, abort: Arc<AtomicBool>) {
        self.write_timeout = Some(timeout);
        self.abort = Some(abort);
    }

    /// Accepts lines of up to `max_line_bytes` from now on (a peer that proved itself).
    pub fn set_max_line_bytes(&mut self, max_line_bytes: usize) {
        self.max_line_bytes = max_line_bytes;
    }

    pub fn stream(&self) -> &TcpStream {
        &self.stream
    }

    /// Sends `message` (a struct or enum serializing to an object) with the version added.
    pub fn send(&mut self, message: &impl Serialize) -> io::Result<()> {
        let mut value = serde_json::to_value(message).map_err(io::Error::other)?;
        if let Value::Object(map) = &mut value {
            map.insert("version".into(), Value::from(PROTOCOL_VERSION));
        }
        let mut line = serde_json::to_vec(&value).map_err(io::Error::other)?;
        line.push(b'\n');
        let Some(timeout) = self.write_timeout else { return self.stream.write_all(&line) };
        let deadline = Instant::now() + timeout + Duration::from_millis(line.len() as u64 * 1000 / WRITE_BYTES_PER_S);
        let mut rest = &line[..];
        while !rest.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "the peer takes nothing: the write timed out"));
            }
            if self.abort.as_ref().is_some_and(|a| a.load(std::sync::atomic::Ordering::Relaxed)) {
                return Err(io::Error::new(io::ErrorKind::Interrupted, "stopping"));
            }
            self.stream.set_write_timeout(Some(left.min(Duration::from_millis(100))))?;
            match self.stream.write(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => rest = &rest[n..],
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Sends an error message (best effort: the peer may be gone).
    pub fn send_error(&mut self, code: &str, message: &str) {
        let _ = self.send(&serde_json::json!({"type": "error", "code": code, "message": message}));
    }

    /// Ends the connection so that what was sent arrives: closing a socket with unread
    /// input would reset it and could destroy the last message (an error line to a client
    /// that was still sending). Reads and drops the rest for at most a second, less once
    /// `stop` is set (the daemon stops).
    pub fn close_gracefully(mut self, stop: &AtomicBool) {
        let _ = self.stream.shutdown(std::net::Shutdown::Write);
        let until = Instant::now() + Duration::from_secs(1);
        let mut chunk = [0u8; 64 * 1024];
        while let Some(left) = until.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
            let _ = self.stream.set_read_timeout(Some(left.min(Duration::from_millis(50))));
            match self.stream.read(&mut chunk) {
                Ok(n) if n > 0 => continue,
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => continue,
                _ => break,
            }
        }
    }

    /// The next line, waiting at most `timeout`.
    pub fn read_line(&mut self, timeout: Duration) -> Result<Vec<u8>, WireError> {
        let deadline = Instant::now() + timeout;
        let mut chunk = [0u8; 64 * 1024];
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                if end > self.max_line_bytes {
                    return Err(WireError::TooLong(self.max_line_bytes));
                }
                let line: Vec<u8> = self.buf.drain(..=end).take(end).collect();
                return Ok(line);
            }
            if self.buf.len() > self.max_line_bytes {
                return Err(WireError::TooLong(self.max_line_bytes));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(WireError::Timeout);
            }
            self.stream.set_read_timeout(Some(left)).map_err(WireError::Io)?;
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(WireError::Closed),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Err(WireError::Timeout)
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe) => {
                    return Err(WireError::Closed)
                }
                Err(e) => return Err(WireError::Io(e)),
            }
        }
    }

    /// The next message as `M`: a JSON object whose `version` is this protocol's; an error
    /// message from the peer comes back as `WireError::Remote`.
    pub fn read<M: DeserializeOwned>(&mut self, timeout: Duration) -> Result<M, WireError> {
        let line = self.read_line(timeout)?;
        parse(&line)
    }
}

/// A message from one line: checked in order (JSON, an object, the version, an error from
/// the peer, the message's own shape), so that each mistake gets its own clear answer.
pub fn parse<M: DeserializeOwned>(line: &[u8]) -> Result<M, WireError> {
    let value: Value = serde_json::from_slice(line)
        .map_err(|e| WireError::Malformed(format!("not JSON ({e}); each message is one JSON object on one line")))?;
    let Value::Object(mut map) = value else {
        return Err(WireError::Malformed("not a JSON object; each message is one JSON object on one line".into()));
    };
    match map.remove("version") {
        Some(v) if v.as_u64() == Some(u64::from(PROTOCOL_VERSION)) => {}
        Some(v) => {
            return Err(WireError::Version(format!(
                "protocol version {v} is not supported: this side speaks version {PROTOCOL_VERSION} (fatpipe {}); run the same fatpipe release on both hosts",
                env!("CARGO_PKG_VERSION")
            )))
        }
        None => return Err(WireError::Malformed(format!("no \"version\" field (this side speaks version {PROTOCOL_VERSION})"))),
    }
    if map.get("type").and_then(Value::as_str) == Some("error") {
        let text = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        return Err(WireError::Remote { code: text("code"), message: text("message") });
    }
    serde_json::from_value(Value::Object(map)).map_err(|e| WireError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ToDaemon;
    use std::net::TcpListener;

    fn kind(line: &str) -> String {
        match parse::<ToDaemon>(line.as_bytes()) {
            Ok(m) => format!("ok {m:?}"),
            Err(e) => format!("{e:?}").split(['(', ' ', '{']).next().unwrap().to_string() + ": " + &e.to_string(),
        }
    }

    #[test]
    fn each_kind_of_bad_line_gets_its_own_answer() {
        assert!(kind(r#"{"version":1,"type":"ping","seq":3}"#).starts_with("ok Ping"));
        assert!(kind("not json").starts_with("Malformed: malformed message: not JSON"));
        assert!(kind("[1,2]").starts_with("Malformed: malformed message: not a JSON object"));
        assert!(kind(r#"{"type":"ping","seq":3}"#).contains("no \"version\" field"));
        let v = kind(r#"{"version":2,"type":"ping","seq":3}"#);
        assert!(v.starts_with("Version: protocol version 2 is not supported: this side speaks version 1"), "{v}");
        assert!(kind(r#"{"version":1,"type":"ping"}"#).contains("missing field `seq`"));
        assert!(kind(r#"{"version":1,"type":"fly"}"#).contains("unknown variant `fly`"));
        assert!(kind(r#"{"version":1,"type":"ping","seq":1,"extra":0}"#).contains("unknown field `extra`"));
        assert!(kind(r#"{"version":1,"type":"error","code":"auth","message":"no"}"#).starts_with("Remote: no"));
    }

    #[test]
    fn lines_are_split_limited_and_timed() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let mut conn = Conn::new(listener.accept().unwrap().0, 16).unwrap();
        client.write_all(b"{\"a\":1}\n{\"b\"").unwrap();
        assert_eq!(conn.read_line(Duration::from_secs(1)).unwrap(), b"{\"a\":1}");
        // The rest of a line waits for its newline, and not longer than asked.
        assert!(matches!(conn.read_line(Duration::from_millis(50)), Err(WireError::Timeout)));
        client.write_all(b":2}\n").unwrap();
        assert_eq!(conn.read_line(Duration::from_secs(1)).unwrap(), b"{\"b\":2}");
        // A line past the limit is refused before it is buffered whole.
        client.write_all(&[b'x'; 100]).unwrap();
        assert!(matches!(conn.read_line(Duration::from_secs(1)), Err(WireError::TooLong(16))));
        drop(client);
        let mut conn2 = {
            let mut c = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            c.write_all(b"{}").unwrap();
            Conn::new(listener.accept().unwrap().0, 16).unwrap()
        };
        assert!(matches!(conn2.read_line(Duration::from_secs(1)), Err(WireError::Closed)));
    }
}
