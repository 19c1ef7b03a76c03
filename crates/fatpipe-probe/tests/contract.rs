//! The committed probe results schema (python/fatpipe/schemas/probe-results.schema.json) is
//! exactly what `document.rs`'s types generate. Regenerate with
//! `FATPIPE_UPDATE_SCHEMAS=1 cargo test --release -p fatpipe-probe --test contract`.

use fatpipe_probe::document::probe_schema;

#[test]
fn probe_results_schema_is_committed() {
    if let Err(message) = fatpipe_core::schema::check_committed("probe-results.schema.json", &probe_schema()) {
        panic!("{message}");
    }
}

#[test]
fn probe_results_schema_allows_no_other_key() {
    let schema = probe_schema();
    for def in ["ProbeSummary", "ProbeFacts", "ProbeHost", "ProbePath", "TcpExtBySide", "FlowColumns"] {
        assert_eq!(schema["$defs"][def]["additionalProperties"], false, "{def}");
    }
    assert_eq!(schema["additionalProperties"], false);
}
