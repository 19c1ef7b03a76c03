//! Parallel paths: a group of links from the same node to the same node, one of which each
//! packet takes at random (document 004's dummynet test: `ipfw add prob 0.3 pipe 1`, ...).
//!
//! Every member is an ordinary link (own queue, transmitter, propagation delay), so packets on
//! different members overtake each other and arrive out of order. Routing knows nothing of the
//! group: its shortest paths lead to the lowest-index member, and `Simulation::forward`
//! replaces that member by a random draw from the group.

use crate::rng::Rng;
use schemars::JsonSchema;
use serde::Deserialize;

/// Probabilities must sum to 1 within this (Python checks the same).
pub const PROBABILITY_SUM_TOLERANCE: f64 = 1e-9;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitSpec {
    /// The name of the link the user split (the seed of the group's generator).
    pub name: String,
    /// Indices of the member links, all from the same node to the same node.
    pub links: Vec<u32>,
    /// Probability that a packet takes each member, in the order of `links`.
    pub probabilities: Vec<f64>,
}

impl SplitSpec {
    /// Checks the probabilities; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.links.len() < 2 || self.links.len() != self.probabilities.len() {
            return Err("links/probabilities: at least two links, one probability each".into());
        }
        for (j, &p) in self.probabilities.iter().enumerate() {
            if !(p > 0.0 && p <= 1.0) {
                return Err(format!("probabilities[{j}]: {p} is not allowed: a probability in (0, 1]"));
            }
        }
        let sum: f64 = self.probabilities.iter().sum();
        if (sum - 1.0).abs() > PROBABILITY_SUM_TOLERANCE {
            return Err(format!("probabilities: they sum to {sum}; they must sum to 1"));
        }
        Ok(())
    }
}

/// A group with its generator.
#[derive(Clone, Debug)]
pub struct Split {
    links: Vec<u32>,
    /// Cumulative probabilities; the last is taken as 1 so rounding never leaves a gap.
    cumulative: Vec<f64>,
    rng: Rng,
}

impl Split {
    pub fn new(spec: &SplitSpec, seed: u64) -> Split {
        let mut total = 0.0;
        let cumulative = spec
            .probabilities
            .iter()
            .map(|p| {
                total += p;
                total
            })
            .collect();
        Split { links: spec.links.clone(), cumulative, rng: Rng::for_element(seed, &format!("{}/split", spec.name)) }
    }

    /// The member link the next packet takes: one uniform draw, a scan of a few entries.
    #[inline]
    pub fn choose(&mut self) -> u32 {
        let u = self.rng.uniform();
        let last = self.links.len() - 1;
        let i = self.cumulative[..last].iter().position(|&c| u < c).unwrap_or(last);
        self.links[i]
    }
}

/// The scenario's groups with their generators, and for each of `links` links the group it
/// belongs to (what a driver needs to replace a routed member by a draw).
pub fn groups(specs: &[SplitSpec], links: usize, seed: u64) -> (Vec<Split>, Vec<Option<u32>>) {
    let splits = specs.iter().map(|s| Split::new(s, seed)).collect();
    let mut split_of = vec![None; links];
    for (i, s) in specs.iter().enumerate() {
        for &l in &s.links {
            split_of[l as usize] = Some(i as u32);
        }
    }
    (splits, split_of)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(p: &[f64]) -> SplitSpec {
        SplitSpec { name: "bottleneck".into(), links: (0..p.len() as u32).collect(), probabilities: p.to_vec() }
    }

    #[test]
    fn shares_match_probabilities() {
        // Document 004's rules: 0.3, then 0.5 of the rest, then the rest.
        let mut s = Split::new(&spec(&[0.3, 0.35, 0.35]), 1);
        let n = 100_000;
        let mut counts = [0u32; 3];
        for _ in 0..n {
            counts[s.choose() as usize] += 1;
        }
        for (c, p) in counts.iter().zip([0.3, 0.35, 0.35]) {
            // Binomial sd at n = 1e5 is about 150 packets; 5 sd is 0.75 % of n.
            let share = *c as f64 / n as f64;
            assert!((share - p).abs() < 0.0075, "share {share} vs {p}");
        }
    }

    #[test]
    fn validation_names_the_problem() {
        assert!(spec(&[0.3, 0.7]).validate().is_ok());
        assert!(spec(&[0.3, 0.6]).validate().unwrap_err().starts_with("probabilities: they sum to"));
        assert!(spec(&[0.0, 1.0]).validate().unwrap_err().starts_with("probabilities[0]"));
        assert!(spec(&[1.0]).validate().is_err());
    }
}
