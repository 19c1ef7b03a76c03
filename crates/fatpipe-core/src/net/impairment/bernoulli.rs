//! Bernoulli (independent, uniform) packet loss: each packet entering the link is lost with
//! probability `probability`, whatever happened to the others. The loss model behind the
//! TCP response functions (Mathis et al. 1997; RFC 3649).

use crate::rng::Rng;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BernoulliConfig {
    /// Probability that a packet is lost, in [0, 1].
    pub probability: f64,
}

impl BernoulliConfig {
    #[inline]
    pub fn drops(&self, rng: &mut Rng) -> bool {
        rng.bernoulli(self.probability)
    }
}
