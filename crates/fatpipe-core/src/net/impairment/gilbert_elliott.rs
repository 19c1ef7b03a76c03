//! Gilbert-Elliott bursty loss (Gilbert 1960, Elliott 1963): a two-state Markov chain, Good
//! and Bad, advanced once per packet; each state has its own loss probability. Losses come in
//! bursts whose mean length in packets is 1 / p_bad_to_good (with loss_bad = 1), and the
//! long-run share of time in Bad is p_good_to_bad / (p_good_to_bad + p_bad_to_good).

use crate::rng::Rng;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliottConfig {
    /// Per-packet probability of moving from Good to Bad.
    pub p_good_to_bad: f64,
    /// Per-packet probability of moving from Bad to Good.
    pub p_bad_to_good: f64,
    /// Loss probability in Good (Gilbert's model: 0).
    pub loss_good: f64,
    /// Loss probability in Bad (Gilbert's model: 1).
    pub loss_bad: f64,
}

#[derive(Clone, Debug)]
pub struct GilbertElliott {
    cfg: GilbertElliottConfig,
    /// The channel starts Good.
    bad: bool,
}

impl GilbertElliott {
    pub fn new(cfg: GilbertElliottConfig) -> Self {
        GilbertElliott { cfg, bad: false }
    }

    /// Long-run loss rate: the stationary mix of the two states' loss probabilities.
    pub fn mean_loss_rate(cfg: &GilbertElliottConfig) -> f64 {
        let to_bad = cfg.p_good_to_bad / (cfg.p_good_to_bad + cfg.p_bad_to_good);
        to_bad * cfg.loss_bad + (1.0 - to_bad) * cfg.loss_good
    }

    #[inline]
    pub fn drops(&mut self, rng: &mut Rng) -> bool {
        let flip = if self.bad { self.cfg.p_bad_to_good } else { self.cfg.p_good_to_bad };
        if rng.bernoulli(flip) {
            self.bad = !self.bad;
        }
        rng.bernoulli(if self.bad { self.cfg.loss_bad } else { self.cfg.loss_good })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_rate_and_burst_length_match_the_chain() {
        let cfg = GilbertElliottConfig { p_good_to_bad: 0.001, p_bad_to_good: 0.25, loss_good: 0.0, loss_bad: 1.0 };
        let mut g = GilbertElliott::new(cfg.clone());
        let mut rng = Rng::new(11);
        let n = 2_000_000;
        let (mut losses, mut bursts, mut previous) = (0u64, 0u64, false);
        for _ in 0..n {
            let lost = g.drops(&mut rng);
            losses += lost as u64;
            bursts += (lost && !previous) as u64;
            previous = lost;
        }
        let rate = losses as f64 / n as f64;
        let expected = GilbertElliott::mean_loss_rate(&cfg);
        assert!((rate / expected - 1.0).abs() < 0.05, "rate {rate} vs {expected}");
        let mean_burst = losses as f64 / bursts as f64;
        assert!((mean_burst / 4.0 - 1.0).abs() < 0.05, "mean burst {mean_burst} vs 1/0.25");
    }
}
