//! fatpipe's BPF congestion controls in the running kernel: every program compiles, passes
//! the verifier and registers under its run's name; the name is gone once the registration
//! drops, and also when the process that registered it is killed with SIGKILL (the kernel
//! closes its BPF link). Needs root, clang and BPF struct_ops; where one is missing each test
//! says so and passes without running (CI installs clang and runs as root).

use fatpipe_emu::bpf_cc::{self, PROGRAMS};
use fatpipe_emu::struct_ops;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

fn available() -> Vec<String> {
    std::fs::read_to_string(AVAILABLE).unwrap().split_whitespace().map(String::from).collect()
}

/// Why these tests cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if Command::new(std::env::var("CLANG").unwrap_or("clang".into())).arg("--version").output().is_err() {
        return Some("clang is not installed".into());
    }
    match struct_ops::vmlinux() {
        Err(e) => Some(e.to_string()),
        Ok(btf) if btf.named("bpf_struct_ops_tcp_congestion_ops").is_empty() => {
            Some("the kernel has no BPF struct_ops for TCP congestion control".into())
        }
        Ok(_) => None,
    }
}

macro_rules! require_bpf {
    () => {
        if let Some(why) = unavailable() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

/// A flow's normalized `cc` for the program: the scenario tables' defaults of its algorithm
/// (cc-defaults.json, which the core's tests read too), in the program's variant.
fn cc_of(p: &bpf_cc::Program) -> serde_json::Value {
    let mut cc: serde_json::Value = fatpipe_core::cc::scenario_defaults(p.algorithm);
    cc["algorithm"] = p.algorithm.into();
    if let Some(v) = p.variant {
        cc["variant"] = v.into();
    }
    cc
}

#[test]
fn every_program_passes_the_verifier_and_unregisters_when_dropped() {
    require_bpf!();
    // Only this test's own names are checked: other tests of this binary (threads of this
    // process) and other processes may register and unregister names meanwhile.
    for p in &PROGRAMS {
        let (reg, _) =
            bpf_cc::register(p, &cc_of(p), bpf_cc::kernel_hz()).unwrap_or_else(|e| panic!("{}: {e}", p.file));
        let name = reg.name.clone();
        assert!(available().contains(&name), "{} registered as {name}", p.file);
        drop(reg);
        assert!(!available().contains(&name), "{} left {name} registered", p.file);
    }
}

#[test]
fn a_name_registered_twice_is_refused_in_one_line() {
    require_bpf!();
    let p = &PROGRAMS[0];
    let object = |name: &str| {
        let prepared = bpf_cc::prepare(p, &cc_of(p), None).unwrap();
        struct_ops::register(prepared.object, name)
    };
    let name = bpf_cc::unique_name("twice");
    let first = object(&name).unwrap();
    let err = object(&name).err().expect("the second registration fails").to_string();
    assert!(err.contains("already registered") && !err.contains('\n'), "{err}");
    drop(first);
    assert!(!available().contains(&name));
}

/// Run by `a_killed_process_leaves_nothing_registered` in a child process: registers reno
/// and waits to be killed.
#[test]
fn child_registers_and_waits() {
    if std::env::var_os("FATPIPE_BPF_CHILD").is_none() {
        return;
    }
    let p = &PROGRAMS[0];
    let (reg, _) = bpf_cc::register(p, &cc_of(p), None).unwrap();
    println!("registered {}", reg.name);
    std::thread::sleep(std::time::Duration::from_secs(60));
}

#[test]
fn a_killed_process_leaves_nothing_registered() {
    require_bpf!();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_registers_and_waits", "--nocapture", "--test-threads=1"])
        .env("FATPIPE_BPF_CHILD", "1")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut name = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        // libtest prints the test's name on the same line first.
        if let Some((_, n)) = line.unwrap().split_once("registered ") {
            name = Some(n.trim().to_string());
            break;
        }
    }
    let name = name.expect("the child registered an algorithm");
    assert!(available().contains(&name));
    child.kill().unwrap(); // SIGKILL: no destructor runs
    child.wait().unwrap();
    // The kernel releases the process's descriptors as it exits; the link's release
    // unregisters the algorithm (allow the kernel a moment to free the link).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while available().contains(&name) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(!available().contains(&name), "{name} outlived the process that registered it");
}
