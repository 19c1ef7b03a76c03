//! The committed emulation results schema (python/fatpipe/schemas/emulation-results.schema.json)
//! is exactly what `summary.rs`'s types generate. Regenerate with
//! `FATPIPE_UPDATE_SCHEMAS=1 cargo test --release -p fatpipe-emu --test contract`.

use fatpipe_emu::summary::emulation_schema;

#[test]
fn emulation_results_schema_is_committed() {
    if let Err(message) = fatpipe_core::schema::check_committed("emulation-results.schema.json", &emulation_schema()) {
        panic!("{message}");
    }
}

#[test]
fn emulation_results_schema_allows_no_other_key() {
    // What the Python test of a real emulation relies on: a key the emulator adds without
    // its type is refused; one it may leave out (not measured) is optional.
    let schema = emulation_schema();
    for def in ["EmulationSummary", "TcpKernel", "EmulationFacts", "HostCounters", "FlowColumns"] {
        assert_eq!(schema["$defs"][def]["additionalProperties"], false, "{def}");
    }
    let [tcp, udp] = [0, 1].map(|i| &schema["$defs"]["RealFlow"]["oneOf"][i]);
    assert_eq!(udp["additionalProperties"], false);
    assert_eq!(tcp["additionalProperties"], false);
    assert_eq!(tcp["properties"]["transport"]["const"], "tcp");
    let required: Vec<&str> = tcp["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(required.contains(&"bytes_delivered") && !required.contains(&"timeouts"));
}
