//! TCP endpoints as sans-I/O state machines: they take the current time and a packet or a
//! timer expiry, and push the packets to send into a caller's buffer.

pub mod ack_timing;
pub mod bsd_timers;
pub mod config;
pub mod handshake;
pub mod metrics;
pub mod milestones;
pub mod persist;
pub mod ranges;
pub mod rate;
pub mod reader;
pub mod receiver;
pub mod rtt;
pub mod send_delay;
pub mod sender;
pub mod stack;
pub mod stats;
pub mod tcb;

pub use config::TcpConfig;
pub use handshake::Handshake;
pub use receiver::TcpReceiver;
pub use sender::TcpSender;
