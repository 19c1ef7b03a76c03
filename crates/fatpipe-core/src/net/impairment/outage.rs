//! Scheduled outages: every packet entering the link during [start, end) of any window is
//! lost (document 004 dropped all traffic for 0.5 s and for 3 s to test recovery).

use crate::time::Time;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutageConfig {
    /// Windows [start_ps, end_ps), in increasing order, not overlapping.
    pub windows_ps: Vec<(Time, Time)>,
}

impl OutageConfig {
    pub fn validate(&self) -> Result<(), String> {
        let mut previous_end = 0;
        for (i, &(start, end)) in self.windows_ps.iter().enumerate() {
            if end <= start || start < previous_end {
                return Err(format!(
                    "windows_ps[{i}]: [{start}, {end}) is not allowed: windows must be non-empty, in order and not overlap"
                ));
            }
            previous_end = end;
        }
        Ok(())
    }

    /// Whether `now` falls in an outage (binary search: many windows cost little).
    #[inline]
    pub fn covers(&self, now: Time) -> bool {
        let i = self.windows_ps.partition_point(|w| w.1 <= now);
        self.windows_ps.get(i).is_some_and(|w| w.0 <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_open_windows() {
        let o = OutageConfig { windows_ps: vec![(10, 20), (30, 35)] };
        let lost: Vec<Time> = (0..40).filter(|&t| o.covers(t)).collect();
        assert_eq!(lost, (10..20).chain(30..35).collect::<Vec<_>>());
        assert!(OutageConfig { windows_ps: vec![(5, 5)] }.validate().is_err());
        assert!(OutageConfig { windows_ps: vec![(0, 10), (5, 20)] }.validate().is_err());
    }
}
