//! fatpipe-core: a discrete-event simulator of TCP congestion control on long fat networks.
//!
//! Layout (see `docs/architecture.md`): `sim` runs the event loop and moves packets;
//! `net` holds links, queue disciplines and routing; `tcp` the sans-I/O sender and receiver
//! with loss recovery; `cc` the congestion control algorithms; `source` the applications;
//! `probe` the sampled time series; `scenario` the normalized input; `schema` the JSON Schemas
//! of the normalized scenario and of the results (the contract with Python).

pub mod capture;
pub mod cc;
pub mod chunked;
pub mod event;
pub mod host;
pub mod net;
pub mod packet;
pub mod probe;
pub mod rng;
pub mod scenario;
pub mod schema;
pub mod sim;
pub mod source;
pub mod tcp;
pub mod time;
pub mod timer;

pub use scenario::Scenario;
pub use sim::Simulation;
