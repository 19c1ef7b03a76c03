//! The committed JSON Schemas (python/fatpipe/schemas/) are exactly what the serde types
//! generate: a change to the normalized scenario or to the results that is not also a change
//! to the committed contract fails here. Regenerate with
//! `FATPIPE_UPDATE_SCHEMAS=1 cargo test --release --test contract`.

use fatpipe_core::schema::{results_schema, scenario_schema};
use std::path::PathBuf;

fn check(file: &str, schema: serde_json::Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../python/fatpipe/schemas").join(file);
    let generated = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    if std::env::var_os("FATPIPE_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &generated).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} differs from the schema the core's types generate: the contract changed. Update it with \
         FATPIPE_UPDATE_SCHEMAS=1 cargo test --release --test contract, and docs/core-interface.md",
        path.display()
    );
}

#[test]
fn normalized_scenario_schema_is_committed() {
    check("normalized-scenario.schema.json", scenario_schema());
}

#[test]
fn results_schema_is_committed() {
    check("results.schema.json", results_schema());
}

#[test]
fn results_schema_requires_every_key_and_allows_no_other() {
    // The property the Python contract test relies on: a key the core drops is missing from
    // `required`, a key it adds is refused by `additionalProperties`.
    let schema = results_schema();
    let tcp = &schema["$defs"]["FlowSummary"]["oneOf"][0];
    assert_eq!(tcp["properties"]["transport"]["const"], "tcp");
    let required: Vec<&str> = tcp["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(required.contains(&"ssthresh_segments") && required.contains(&"bytes_delivered"));
    for def in ["Summary", "LinkSummary", "CaptureSummary", "FlowSeries", "QueueSeries", "RequestTable"] {
        assert_eq!(schema["$defs"][def]["additionalProperties"], false, "{def}");
    }
}
