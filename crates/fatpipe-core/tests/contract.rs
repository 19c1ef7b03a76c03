//! The committed JSON Schemas (python/fatpipe/schemas/) are exactly what the serde types
//! generate: a change to the normalized scenario or to the results that is not also a change
//! to the committed contract fails here. Regenerate with
//! `FATPIPE_UPDATE_SCHEMAS=1 cargo test --release --test contract`.

use fatpipe_core::schema::{check_committed, results_schema, scenario_schema};

fn check(file: &str, schema: serde_json::Value) {
    if let Err(message) = check_committed(file, &schema) {
        panic!("{message}");
    }
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
