//! fatpipe-emu: a scenario run in real time with real Linux TCP.
//!
//! Every host of the scenario becomes a network namespace (`netns`) with a TUN device
//! (`tun`); the relay (`relay`) passes the hosts' packets through the scenario's own links,
//! queues, impairments and parallel paths -- fatpipe-core's, driven by the wall clock
//! (`clock`) -- and the traffic engine (`traffic`) runs each flow's applications on real
//! sockets inside the namespaces. `kernel` maps a flow's TCP settings to Linux knobs,
//! `sampler` records TCP_INFO series, `output` builds the same result document as a
//! simulation (its types and schema: `summary`). `emulation` ties them together. See docs/emulation.md.

pub mod bpf_cc;
pub mod clock;
pub mod coalesce;
mod deliver;
pub mod emulation;
pub mod gso;
pub mod ip;
pub mod kernel;
pub mod lateness;
pub mod netns;
pub mod output;
mod pool;
pub mod relay;
mod rtnl;
pub mod sampler;
pub mod struct_ops;
pub mod summary;
mod sys;
pub mod traffic;
pub mod tun;

pub use emulation::{Emulation, Error, Options};
