//! Impairments: what happens to packets as they enter a link, besides queueing. One file each.
//! Every impairment draws from its link's own seeded generator (`rng.rs`), so runs repeat.

pub mod bernoulli;

use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ImpairmentSpec {
    Bernoulli(bernoulli::BernoulliConfig),
}

impl ImpairmentSpec {
    /// True when the packet entering the link at `now` is lost.
    #[inline]
    pub fn drops(&self, _now: Time, _pkt: &Packet, rng: &mut Rng) -> bool {
        match self {
            ImpairmentSpec::Bernoulli(b) => b.drops(rng),
        }
    }
}
