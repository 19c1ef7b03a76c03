//! BBR's bandwidth filter: a windowed maximum (Kathleen Nichols' algorithm, as Linux
//! `lib/win_minmax.c`).

/// Windowed maximum over the last `window` rounds in O(1) time and memory: the best sample
/// and the best ones of later sub-windows, which take over as older ones expire (Kathleen
/// Nichols' algorithm, as Linux `lib/win_minmax.c`).
#[derive(Clone, Copy, Debug, Default)]
pub struct MaxFilter {
    /// (round, value): best, second best (newer), third best (newest).
    samples: [(u64, u64); 3],
}

impl MaxFilter {
    pub fn get(&self) -> u64 {
        self.samples[0].1
    }

    fn reset(&mut self, round: u64, value: u64) -> u64 {
        self.samples = [(round, value); 3];
        value
    }

    /// Feeds `value` measured in `round`; returns the maximum over rounds
    /// [round - window, round] (a sample expires once it is more than `window` rounds old).
    pub fn update(&mut self, window: u64, round: u64, value: u64) -> u64 {
        let s = &mut self.samples;
        if value >= s[0].1 || round - s[2].0 > window {
            // A new maximum, or every kept sample is too old: start over.
            return self.reset(round, value);
        }
        if value >= s[1].1 {
            s[1] = (round, value);
            s[2] = (round, value);
        } else if value >= s[2].1 {
            s[2] = (round, value);
        }
        let age = round - s[0].0;
        if age > window {
            // The best expired: the runners-up move up (twice if the second expired too).
            s[0] = s[1];
            s[1] = s[2];
            s[2] = (round, value);
            if round - s[0].0 > window {
                s[0] = s[1];
                s[1] = s[2];
                s[2] = (round, value);
            }
        } else if s[1].0 == s[0].0 && age > window / 4 {
            // A quarter of the window without a second choice: take one from this quarter.
            s[1] = (round, value);
            s[2] = (round, value);
        } else if s[2].0 == s[1].0 && age > window / 2 {
            // Half the window without a third choice: take one from the second half.
            s[2] = (round, value);
        }
        s[0].1
    }
}
