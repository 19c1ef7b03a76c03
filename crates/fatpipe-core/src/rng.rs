//! Seeded random numbers. Every random choice in a simulation draws from a generator derived
//! from the scenario's seed and the name of the element that owns it, so adding an element
//! does not change the draws of the others, and the same seed gives the same run.
//!
//! xoshiro256** (Blackman and Vigna 2018), seeded through SplitMix64 as its authors advise;
//! written out here rather than taken from a crate to keep the dependency tree lean.

#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        Rng { s: [splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm), splitmix64(&mut sm)] }
    }

    /// A generator for one element: the scenario seed mixed with a stable hash (FNV-1a) of the
    /// element's name.
    pub fn for_element(seed: u64, element: &str) -> Self {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in element.bytes() {
            h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01B3);
        }
        Rng::new(seed ^ h)
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_elements_independent() {
        let a: Vec<u64> = (0..5).scan(Rng::for_element(7, "bottleneck"), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..5).scan(Rng::for_element(7, "bottleneck"), |r, _| Some(r.next_u64())).collect();
        let c: Vec<u64> = (0..5).scan(Rng::for_element(7, "access"), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn bernoulli_rate_matches_probability() {
        let mut r = Rng::new(42);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.bernoulli(0.01)).count() as f64;
        // Binomial standard deviation is sqrt(n p (1-p)) = 44.5; allow 5 sigma.
        assert!((hits - 2000.0).abs() < 5.0 * 44.5, "hits = {hits}");
    }
}
