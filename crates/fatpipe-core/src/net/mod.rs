//! Network elements: links with their queues, and nodes with static routes.

pub mod impairment;
pub mod link;
pub mod queue;
pub mod routing;
pub mod split;
pub mod token_bucket;

pub use link::Link;
