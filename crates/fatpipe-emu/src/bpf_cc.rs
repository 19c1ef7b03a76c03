//! fatpipe's congestion controls as BPF programs (`bpf/` at the top of the repository): the
//! algorithms of the documents that the kernel does not build in, and its own reno and cubic
//! with other parameters than the kernel's modules run. `fatpipe emulate` compiles the
//! program of a flow's algorithm with clang, writes the flow's parameters into its
//! read-only data, and registers it (`struct_ops.rs`) under a name unique to the run.
//!
//! Parameters reach a program as `const volatile` globals named after the scenario's keys,
//! with the unit in the name (bpf/fatpipe_cc.h): `b = 0.5` fills `b_q20` (a fraction in
//! units of 2^-20), `delta_l_ps` fills `delta_l_us`, booleans and integers fill the bare
//! name. A key with no variable is an error naming it: nothing the scenario asks is dropped.

use crate::struct_ops::{self, RegisterError, Registration};
use fatpipe_bpf::params::{self, write_int};
use fatpipe_bpf::Object;
use fatpipe_core::cc::CcSpec;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The shared headers, and every program with the algorithm (and variant) it implements.
pub const HEADERS: [(&str, &str); 2] = [
    ("fatpipe_cc.h", include_str!("../../../bpf/fatpipe_cc.h")),
    ("westwood.h", include_str!("../../../bpf/westwood.h")),
];

/// How a program's parameters come from the scenario's `cc` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fill {
    /// Key by key, by the naming convention.
    ByName,
    /// HighSpeed's RFC 3649 table, computed from the parameters by fatpipe-core.
    HighSpeedTable,
    /// By name, but RFC 3649's parameters, which the Linux table fixes (the scenario's
    /// validation keeps them at their defaults with variant = "linux").
    HighSpeedFixed,
    /// CUBIC's Linux fixed point (bic_scale, beta / 1024) and HyStart's settings.
    Cubic,
}

#[derive(Debug)]
pub struct Program {
    pub algorithm: &'static str,
    /// The scenario's `variant`, for algorithms that have several forms.
    pub variant: Option<&'static str>,
    pub file: &'static str,
    pub source: &'static str,
    fill: Fill,
}

macro_rules! program {
    ($algorithm:expr, $variant:expr, $file:literal, $fill:expr) => {
        Program {
            algorithm: $algorithm,
            variant: $variant,
            file: $file,
            source: include_str!(concat!("../../../bpf/", $file)),
            fill: $fill,
        }
    };
}

pub const PROGRAMS: [Program; 16] = [
    program!("reno", None, "reno.bpf.c", Fill::ByName),
    program!("cubic", Some("linux"), "cubic_linux.bpf.c", Fill::Cubic),
    program!("highspeed", Some("rfc"), "highspeed_rfc.bpf.c", Fill::HighSpeedTable),
    program!("highspeed", Some("linux"), "highspeed_linux.bpf.c", Fill::HighSpeedFixed),
    program!("scalable", None, "scalable.bpf.c", Fill::ByName),
    program!("vegas", Some("paper"), "vegas_paper.bpf.c", Fill::ByName),
    program!("vegas", Some("linux"), "vegas_linux.bpf.c", Fill::ByName),
    program!("westwood", None, "westwood.bpf.c", Fill::ByName),
    program!("westwood_plus", Some("paper"), "westwood_plus_paper.bpf.c", Fill::ByName),
    program!("westwood_plus", Some("linux"), "westwood_plus_linux.bpf.c", Fill::ByName),
    program!("htcp", None, "htcp.bpf.c", Fill::ByName),
    program!("bic", None, "bic.bpf.c", Fill::ByName),
    program!("fast", None, "fast.bpf.c", Fill::ByName),
    program!("griddt", None, "griddt.bpf.c", Fill::ByName),
    program!("nocc", None, "nocc.bpf.c", Fill::ByName),
    program!("lp", None, "lp.bpf.c", Fill::ByName),
];

/// The program for a normalized `cc` table, if fatpipe ships one for its algorithm and
/// variant.
pub fn program_for(cc: &Value) -> Option<&'static Program> {
    let algorithm = cc.get("algorithm").and_then(Value::as_str)?;
    let variant = cc.get("variant").and_then(Value::as_str);
    let p = PROGRAMS.iter().find(|p| p.algorithm == algorithm && (p.variant.is_none() || p.variant == variant))?;
    // HyStart++ and the RFC form of CUBIC have no program: the kernel's cubic runs them,
    // with a note (kernel::parameter_notes).
    if p.fill == Fill::Cubic && cc.get("hystart").and_then(Value::as_str) == Some("rfc9406") {
        return None;
    }
    Some(p)
}

/// Compiles `source` (with the shared header beside it) by clang into an object. A missing
/// clang is the system's fault, a program that does not compile the object's.
pub fn compile(file: &str, source: &str) -> Result<Vec<u8>, RegisterError> {
    let dir = scratch_dir().map_err(|e| RegisterError::System(format!("a directory to compile {file} in: {e}")))?;
    let result = compile_in(&dir.0, file, source);
    drop(dir);
    result
}

/// A temporary directory, removed when dropped.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch_dir() -> std::io::Result<Scratch> {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir =
        std::env::temp_dir().join(format!("fatpipe-bpf-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    std::fs::create_dir_all(&dir)?;
    Ok(Scratch(dir))
}

/// The clang to use: $CLANG, else `clang`.
fn clang() -> String {
    std::env::var("CLANG").unwrap_or_else(|_| "clang".into())
}

fn compile_in(dir: &Path, file: &str, source: &str) -> Result<Vec<u8>, RegisterError> {
    let system = |e: std::io::Error| RegisterError::System(format!("compiling {file}: {e}"));
    for (name, text) in HEADERS {
        std::fs::write(dir.join(name), text).map_err(system)?;
    }
    let src = dir.join(file);
    std::fs::write(&src, source).map_err(system)?;
    let out = dir.join("program.o");
    compile_file(&src, &out, &[dir])?;
    std::fs::read(&out).map_err(system)
}

/// clang -O2 -g -target bpf: the flags a BPF congestion control needs (BTF for CO-RE).
pub fn compile_file(src: &Path, out: &Path, include: &[&Path]) -> Result<(), RegisterError> {
    let clang = clang();
    let mut cmd = Command::new(&clang);
    cmd.args(["-O2", "-g", "-target", "bpf", "-c"]).arg(src).arg("-o").arg(out);
    for dir in include {
        cmd.arg("-I").arg(dir);
    }
    let output = cmd.output().map_err(|e| {
        RegisterError::System(if e.kind() == std::io::ErrorKind::NotFound {
            format!("{clang} is not installed: BPF congestion controls are compiled with clang (Debian: apt-get install clang)")
        } else {
            format!("running {clang}: {e}")
        })
    })?;
    if !output.status.success() {
        let err = String::from_utf8_lossy(&output.stderr);
        let first = err.lines().find(|l| l.contains("error")).unwrap_or_else(|| err.lines().next().unwrap_or(""));
        return Err(RegisterError::Object(format!("{clang} could not compile {}: {first}", src.display())));
    }
    Ok(())
}

/// The ticks per second of the kernel's jiffies (CONFIG_HZ), measured from /proc/timer_list
/// over 50 ms and taken to the nearest of the values Linux offers. None if unreadable.
pub fn kernel_hz() -> Option<u32> {
    fn jiffies() -> Option<u64> {
        let text = std::fs::read_to_string("/proc/timer_list").ok()?;
        text.lines().find_map(|l| l.trim().strip_prefix("jiffies:")).and_then(|v| v.trim().parse().ok())
    }
    static HZ: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *HZ.get_or_init(|| {
        let (j0, t0) = (jiffies()?, std::time::Instant::now());
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (j1, dt) = (jiffies()?, t0.elapsed().as_secs_f64());
        let hz = (j1 - j0) as f64 / dt;
        [100u32, 250, 300, 1000].into_iter().min_by(|a, b| (*a as f64 - hz).abs().total_cmp(&(*b as f64 - hz).abs()))
    })
}

/// An object ready to register: compiled, parameters written. `notes` say where it departs
/// from what the flow asks.
pub struct Prepared {
    pub program: &'static Program,
    pub object: Object,
    pub notes: Vec<String>,
}

/// Compiles the program for `cc` and writes its parameters. `hz` is the kernel's jiffies
/// rate, for programs that count jiffies.
pub fn prepare(program: &'static Program, cc: &Value, hz: Option<u32>) -> Result<Prepared, RegisterError> {
    let bytes = compile(program.file, program.source)?;
    let object = Object::parse(&bytes).map_err(|e| RegisterError::Object(format!("{}: {e}", program.file)))?;
    fill(program, object, cc, hz).map_err(RegisterError::Object)
}

/// Writes the parameters of `cc` into `object`, the compiled `program`.
pub fn fill(program: &'static Program, mut object: Object, cc: &Value, hz: Option<u32>) -> Result<Prepared, String> {
    let mut notes = Vec::new();
    let mut skip: Vec<&str> = Vec::new();
    // Programs that count the kernel's jiffies run at its HZ, whatever kernel_hz asks; the
    // other forms have no jiffies (the core ignores kernel_hz there too).
    skip.push("kernel_hz");
    if object.var("kernel_hz").is_some() {
        let asked = cc.get("kernel_hz").and_then(Value::as_u64);
        let hz = hz.ok_or("the kernel's HZ could not be measured (/proc/timer_list)")?;
        write_int(&mut object, "kernel_hz", hz as u64)?;
        if let Some(asked) = asked.filter(|&a| a != hz as u64) {
            notes.push(format!(
                "kernel_hz {asked}: this kernel's jiffies tick {hz} times a second, and the BPF program counts them"
            ));
        }
    }
    match program.fill {
        Fill::ByName => {}
        Fill::HighSpeedFixed => skip.extend(HIGHSPEED_RFC_PARAMETERS),
        Fill::HighSpeedTable => {
            skip.extend(HIGHSPEED_RFC_PARAMETERS);
            fill_highspeed(&mut object, cc)?;
        }
        Fill::Cubic => {
            skip.extend(["c", "beta", "hystart", "hystart_detect"]);
            fill_cubic(&mut object, cc)?;
        }
    }
    skip.extend(["algorithm", "variant"]);
    let values = cc.as_object().ok_or("cc is not a table")?;
    // HighSpeed's and Scalable's Linux 2.4 switches (issue 25): the programs are the forms
    // that count acknowledged segments and back off by their own decrease, so the switches
    // at those defaults ask nothing of them; any other value has no variable and is refused
    // by name below. Scalable's program is its paper form only.
    // Reno's BSD growth (issue 25) likewise: off, it asks nothing of the program.
    for (key, default) in [("byte_counting", true), ("cwr_halves", false), ("eighth", false)] {
        if values.get(key).and_then(Value::as_bool) == Some(default) {
            skip.push(key);
        }
    }
    if program.algorithm == "scalable" && cc.get("variant").and_then(Value::as_str).is_some_and(|v| v != "paper") {
        return Err(format!("variant = {}: {} implements the paper form only", cc["variant"], program.file));
    }
    if program.algorithm == "reno" && cc.get("variant").and_then(Value::as_str).is_some_and(|v| v != "rfc") {
        return Err(format!("variant = {}: {} implements RFC 5681's growth only", cc["variant"], program.file));
    }
    params::fill(&mut object, values, &skip, program.file)?;
    Ok(Prepared { program, object, notes })
}

/// RFC 3649's parameters, from which the "rfc" program's table is computed.
const HIGHSPEED_RFC_PARAMETERS: [&str; 4] = ["low_window", "high_window", "high_p", "high_decrease"];

fn fill_highspeed(object: &mut Object, cc: &Value) -> Result<(), String> {
    use fatpipe_core::cc::highspeed::aimd_table;
    let Ok(CcSpec::Highspeed(cfg)) = serde_json::from_value(cc.clone()) else {
        return Err("not a highspeed configuration".into());
    };
    let table = aimd_table(&cfg);
    let capacity = object.var("table_w").map_or(0, |(_, v)| v.size as usize / 4);
    if table.len() > capacity {
        return Err(format!(
            "the parameters need {} rows of a(w); highspeed_rfc.bpf.c holds at most {capacity}",
            table.len()
        ));
    }
    let words = |f: &dyn Fn(&fatpipe_core::cc::highspeed::AimdEntry) -> u32| -> Vec<u8> {
        table.iter().flat_map(|e| f(e).to_le_bytes()).collect()
    };
    object.set_var("table_w", &words(&|e| e.w_segments)).map_err(|e| e.to_string())?;
    object.set_var("table_a", &words(&|e| e.a)).map_err(|e| e.to_string())?;
    write_int(object, "table_len", table.len() as u64)?;
    write_int(object, "low_window", cfg.low_window as u64)?;
    write_int(object, "high_decrease_q20", (cfg.high_decrease * (1u64 << 20) as f64).round() as u64)?;
    let log2_q20 = |w: u32| ((w as f64).log2() * (1u64 << 20) as f64).round() as u64;
    write_int(object, "log2_low_window_q20", log2_q20(cfg.low_window))?;
    write_int(object, "log2_high_window_q20", log2_q20(cfg.high_window))?;
    Ok(())
}

fn fill_cubic(object: &mut Object, cc: &Value) -> Result<(), String> {
    let Ok(CcSpec::Cubic(cfg)) = serde_json::from_value(cc.clone()) else {
        return Err("not a cubic configuration".into());
    };
    write_int(object, "beta", cfg.beta_fixed() as u64)?;
    write_int(object, "bic_scale", cfg.bic_scale() as u64)?;
    let hystart = match cc.get("hystart").and_then(Value::as_str) {
        Some("linux") => 1,
        _ => 0,
    };
    write_int(object, "hystart", hystart)?;
    let detect = match cc.get("hystart_detect").and_then(Value::as_str) {
        Some("ack_train") => 1,
        Some("delay") => 2,
        _ => 3,
    };
    write_int(object, "hystart_detect", detect)
}

/// The object of fatpipe's program for a normalized `cc` table (for instance
/// `{"algorithm": "vegas", "variant": "linux", ...}`) with the flow's parameters written into
/// it, and the program's file name: what `fatpipe emulate` would register, as a file the
/// simulator can run (`cc = { bpf = ... }`). `hz` is written into a `kernel_hz` variable.
pub fn object_with_parameters(cc: &CcSpec, hz: u32) -> Result<(&'static str, Vec<u8>), String> {
    let cc = &serde_json::to_value(cc).expect("a CcSpec serializes");
    let program = program_for(cc).ok_or_else(|| format!("fatpipe has no BPF program for {cc}"))?;
    let bytes = compile(program.file, program.source).map_err(|e| e.to_string())?;
    let object = Object::parse(&bytes).map_err(|e| e.to_string())?;
    let prepared = fill(program, object, cc, Some(hz))?;
    Ok((program.file, prepared.object.with_data(&bytes).map_err(|e| e.to_string())?))
}

/// A name for the kernel, unique to this process and registration: "fp", the algorithm's
/// first letters, the process id and a counter in base 36 (at most 15 bytes).
pub fn unique_name(algorithm: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed) % (36 * 36);
    let tag: String = algorithm.chars().filter(char::is_ascii_alphanumeric).take(3).collect();
    format!("fp{tag}_{}_{}", base36(std::process::id() as u64), base36(n as u64))
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut s = Vec::new();
    loop {
        s.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    s.reverse();
    String::from_utf8(s).expect("ASCII")
}

/// Compiles, fills and registers the program for `cc`.
pub fn register(
    program: &'static Program,
    cc: &Value,
    hz: Option<u32>,
) -> Result<(Registration, Vec<String>), RegisterError> {
    let prepared = prepare(program, cc, hz)?;
    let name = unique_name(program.algorithm);
    let reg = struct_ops::register(prepared.object, &name)?;
    Ok((reg, prepared.notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_algorithm_of_the_documents_has_a_program() {
        for (algorithm, variants) in [
            ("reno", &[None][..]),
            ("cubic", &[Some("linux")]),
            ("highspeed", &[Some("rfc"), Some("linux")]),
            ("scalable", &[None]),
            ("vegas", &[Some("paper"), Some("linux")]),
            ("westwood", &[None]),
            ("westwood_plus", &[Some("paper"), Some("linux")]),
            ("htcp", &[None]),
            ("bic", &[None]),
            ("fast", &[None]),
            ("griddt", &[None]),
            ("nocc", &[None]),
        ] {
            for v in variants {
                let cc = match v {
                    Some(v) => json!({"algorithm": algorithm, "variant": v}),
                    None => json!({"algorithm": algorithm}),
                };
                assert!(program_for(&cc).is_some(), "{cc}");
            }
        }
        assert!(program_for(&json!({"algorithm": "bbr"})).is_none());
        assert!(program_for(&json!({"algorithm": "cubic", "variant": "rfc"})).is_none());
        assert!(program_for(&json!({"algorithm": "cubic", "variant": "linux", "hystart": "rfc9406"})).is_none());
    }

    #[test]
    fn names_fit_the_kernel_and_differ() {
        let a = unique_name("westwood_plus");
        let b = unique_name("westwood_plus");
        assert_ne!(a, b);
        assert!(a.len() < struct_ops::TCP_CA_NAME_MAX && a.starts_with("fpwes_"), "{a}");
        assert_eq!(base36(0), "0");
        // 2^22 = 2 x 36^4 + 17 x 36^3 + 32 x 36^2 + 12 x 36 + 16: digits 2, h, w, c, g.
        assert_eq!(base36(4194304), "2hwcg");
    }
}

/// A user's own object (`cc = { bpf = ... }`, normalized to `object`, `parameters`,
/// `kernel_hz`): its parameters written by name, `kernel_hz` the kernel's, registered.
/// Returns the registration, its name, the object's path and notes.
fn register_user_object(cc: &Value) -> Result<(Registration, String, String, Vec<String>), RegisterError> {
    let object_path =
        cc.get("object").and_then(Value::as_str).ok_or_else(|| RegisterError::Object("object: missing".into()))?;
    let bytes = std::fs::read(object_path).map_err(|e| RegisterError::Object(format!("object: {object_path}: {e}")))?;
    // Messages name the file the scenario wrote (a .c compiled into `object`).
    let path = cc.get("source").and_then(Value::as_str).unwrap_or(object_path);
    let mut object = Object::parse(&bytes).map_err(|e| RegisterError::Object(format!("object: {path}: {e}")))?;
    let mut notes = Vec::new();
    if object.var("kernel_hz").is_some() {
        let hz = kernel_hz()
            .ok_or_else(|| RegisterError::System("the kernel's HZ could not be measured (/proc/timer_list)".into()))?;
        write_int(&mut object, "kernel_hz", hz as u64).map_err(RegisterError::Object)?;
        if let Some(asked) = cc.get("kernel_hz").and_then(Value::as_u64).filter(|&a| a != hz as u64) {
            notes.push(format!(
                "kernel_hz {asked}: this kernel's jiffies tick {hz} times a second, and the BPF program counts them"
            ));
        }
    }
    let empty = serde_json::Map::new();
    let values = cc.get("parameters").and_then(Value::as_object).unwrap_or(&empty);
    params::fill(&mut object, values, &["kernel_hz"], "the program")
        .map_err(|e| RegisterError::Object(format!("parameters.{e}")))?;
    let stem = std::path::Path::new(path).file_stem().and_then(|s| s.to_str()).unwrap_or("bpf");
    let name = unique_name(stem);
    let registration = struct_ops::register(object, &name)?;
    Ok((registration, name, path.to_string(), notes))
}

/// When the emulator runs a flow's algorithm through fatpipe's BPF program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BpfPolicy {
    /// When the kernel's own module does not run the algorithm as the flow asks (the
    /// module is missing, or runs another form or other parameters) and a program exists.
    #[default]
    Auto,
    /// Whenever a program exists, the kernel's reno and cubic too (to check the programs).
    Always,
    /// Never: the kernel's modules only.
    Never,
}

/// The knobs of TCP flow `spec`: through its BPF program (registered now and pushed onto
/// `registrations`, which must outlive the flow's sockets) when `policy` says so, otherwise
/// through the kernel's module (`kernel::flow_knobs`).
#[allow(clippy::too_many_arguments)]
pub fn flow_knobs(
    spec: &fatpipe_core::scenario::FlowSpec,
    available: &[String],
    sysctl_value: &dyn Fn(&str) -> Option<u64>,
    module_params: &dyn Fn(&str, &str) -> Option<String>,
    policy: BpfPolicy,
    registrations: &mut Vec<Registration>,
) -> Result<crate::kernel::FlowKnobs, RegisterError> {
    // What the kernel's knobs refuse is refused before a program is compiled or registered.
    crate::kernel::tcp_of(spec).map_err(RegisterError::Object)?;
    let cc = &crate::kernel::cc_table(spec);
    // This file's own messages are about the flow's cc; the knobs' name their keys.
    let in_cc = |e: RegisterError| match e {
        RegisterError::Object(e) => RegisterError::Object(format!("cc: {e}")),
        RegisterError::System(e) => RegisterError::System(format!("cc: {e}")),
    };
    if cc.get("algorithm").and_then(Value::as_str) == Some("bpf") {
        let (registration, name, program, notes) = register_user_object(cc).map_err(in_cc)?;
        let knobs = crate::kernel::flow_knobs_registered(spec, &name, &program, notes, sysctl_value)
            .map_err(RegisterError::Object)?;
        registrations.push(registration);
        return Ok(knobs);
    }
    let program = program_for(cc).filter(|_| match policy {
        BpfPolicy::Never => false,
        BpfPolicy::Always => true,
        BpfPolicy::Auto => !crate::kernel::module_runs_as_asked(spec, available, module_params),
    });
    let Some(program) = program else {
        return crate::kernel::flow_knobs(spec, available, sysctl_value, module_params).map_err(RegisterError::Object);
    };
    let hz = if program.source.contains("kernel_hz") { kernel_hz() } else { None };
    let (registration, notes) = register(program, cc, hz).map_err(in_cc)?;
    let knobs = crate::kernel::flow_knobs_registered(spec, &registration.name, program.file, notes, sysctl_value)
        .map_err(RegisterError::Object)?;
    registrations.push(registration);
    Ok(knobs)
}
