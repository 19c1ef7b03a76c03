//! Impairments: what happens to packets as they enter a link, besides queueing. One file each.
//! Every impairment draws from its link's own seeded generator (`rng.rs`), so runs repeat.
//! A token-bucket policer (`policer.rs`) is one too: it drops, never queues.

pub mod bernoulli;
pub mod gilbert_elliott;
pub mod outage;
pub mod policer;

use crate::packet::Packet;
use crate::rng::Rng;
use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ImpairmentSpec {
    Bernoulli(bernoulli::BernoulliConfig),
    GilbertElliott(gilbert_elliott::GilbertElliottConfig),
    Outage(outage::OutageConfig),
    Policer(policer::PolicerConfig),
}

/// Why an impairment took a packet (counted per link).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossCause {
    /// Random loss (Bernoulli, Gilbert-Elliott).
    Random,
    /// A scheduled outage.
    Outage,
    /// Above a token-bucket policer's rate.
    Policer,
}

/// An impairment with its state.
#[derive(Clone, Debug)]
pub enum Impairment {
    Bernoulli(bernoulli::BernoulliConfig),
    GilbertElliott(gilbert_elliott::GilbertElliott),
    Outage(outage::OutageConfig),
    Policer(policer::Policer),
}

impl ImpairmentSpec {
    pub fn build(&self) -> Impairment {
        match self {
            ImpairmentSpec::Bernoulli(c) => Impairment::Bernoulli(c.clone()),
            ImpairmentSpec::GilbertElliott(c) => {
                Impairment::GilbertElliott(gilbert_elliott::GilbertElliott::new(c.clone()))
            }
            ImpairmentSpec::Outage(c) => Impairment::Outage(c.clone()),
            ImpairmentSpec::Policer(c) => Impairment::Policer(policer::Policer::new(c.clone())),
        }
    }

    /// Checks the parameters; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        let prob = |name: &str, p: f64| {
            if (0.0..=1.0).contains(&p) {
                Ok(())
            } else {
                Err(format!("{name}: {p} is not allowed: a probability in [0, 1]"))
            }
        };
        match self {
            ImpairmentSpec::Bernoulli(c) => prob("probability", c.probability),
            ImpairmentSpec::GilbertElliott(c) => {
                prob("p_good_to_bad", c.p_good_to_bad)?;
                prob("p_bad_to_good", c.p_bad_to_good)?;
                prob("loss_good", c.loss_good)?;
                prob("loss_bad", c.loss_bad)
            }
            ImpairmentSpec::Outage(c) => c.validate(),
            ImpairmentSpec::Policer(c) => c.validate(),
        }
    }
}

impl Impairment {
    /// Whether the packet entering the link at `run_time` (time since the run's start; None
    /// before it, when no scheduled outage applies and no policer counts) is lost, and why.
    #[inline]
    pub fn drops(&mut self, run_time: Option<Time>, pkt: &Packet, rng: &mut Rng) -> Option<LossCause> {
        let lost = match self {
            Impairment::Bernoulli(b) => b.drops(rng),
            Impairment::GilbertElliott(g) => g.drops(rng),
            Impairment::Outage(o) => return run_time.is_some_and(|t| o.covers(t)).then_some(LossCause::Outage),
            Impairment::Policer(p) => {
                return run_time.is_some_and(|t| p.drops(t, pkt.ip_bytes)).then_some(LossCause::Policer)
            }
        };
        lost.then_some(LossCause::Random)
    }
}
