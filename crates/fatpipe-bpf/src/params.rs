//! A program's parameters: its `const volatile` globals (libbpf's convention: they live in
//! .rodata, which a loader writes before the programs run), filled from the scenario's
//! values by name, with the unit in the variable's name (bpf/fatpipe_cc.h):
//!
//! - `key = true/false` or an integer fills the variable `key`; null fills 0 ("none");
//! - a number `key` fills `key_q20`, the value in units of 2^-20 (fractions, rates);
//! - a duration `key_ps` (the scenario's picoseconds) fills `key_us`, in microseconds.
//!
//! A value with no variable to take it is an error naming the key: nothing a scenario asks
//! for is dropped.

use crate::Object;
use serde_json::{Map, Value};

/// Writes `value` into integer variable `var` (4 or 8 bytes).
pub fn write_int(object: &mut Object, var: &str, value: u64) -> Result<(), String> {
    let size = object.var(var).map(|(_, v)| v.size).ok_or_else(|| format!("the program has no variable {var}"))?;
    let bytes = value.to_le_bytes();
    match size {
        4 if value <= u32::MAX as u64 => object.set_var(var, &bytes[..4]),
        8 => object.set_var(var, &bytes),
        _ => return Err(format!("{value} does not fit {var} ({size} bytes)")),
    }
    .map_err(|e| e.to_string())
}

/// The largest fraction a `_q20` variable takes: 2^43, so that value x 2^20 fits 63 bits.
const MAX_Q20: f64 = (1u64 << 43) as f64;

/// Fills the parameters in `values` (but the keys in `skip`); `program` names the program
/// in errors.
pub fn fill(object: &mut Object, values: &Map<String, Value>, skip: &[&str], program: &str) -> Result<(), String> {
    for (key, value) in values {
        if skip.contains(&key.as_str()) {
            continue;
        }
        fill_one(object, key, value, program).map_err(|e| format!("{key} = {value}: {e}"))?;
    }
    Ok(())
}

fn fill_one(object: &mut Object, key: &str, value: &Value, program: &str) -> Result<(), String> {
    let has = |v: &str| object.var(v).is_some();
    let none = || {
        let stem = key.strip_suffix("_ps").map_or(String::new(), |s| format!(" or {s}_us"));
        format!("{program} has no parameter for it (no const volatile global {key}, {key}_q20{stem})")
    };
    match value {
        Value::Bool(b) if has(key) => write_int(object, key, u64::from(*b)),
        Value::Null if has(key) => write_int(object, key, 0),
        Value::Number(n) => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if let Some(stem) = key.strip_suffix("_ps").filter(|s| has(&format!("{s}_us"))) {
                if f.is_nan() || f < 0.0 {
                    return Err("a duration must not be negative".into());
                }
                write_int(object, &format!("{stem}_us"), (f / 1e6).round() as u64)
            } else if has(&format!("{key}_q20")) {
                if !(0.0..MAX_Q20).contains(&f) {
                    return Err(format!("out of the program's range (0 to 2^43 for {key}_q20)"));
                }
                write_int(object, &format!("{key}_q20"), (f * (1u64 << 20) as f64).round() as u64)
            } else if has(key) {
                let v = n.as_u64().ok_or_else(|| format!("{key} takes a whole number >= 0"))?;
                write_int(object, key, v)
            } else {
                Err(none())
            }
        }
        _ => Err(none()),
    }
}
