//! The contract between the core and Python, as JSON Schema generated from the serde types:
//! the normalized scenario the core reads (`Scenario`, as serde deserializes it) and the
//! results it returns (`sim::Output`, as serde serializes it). The generated files are
//! committed in `python/fatpipe/schemas/` (shipped with the package); the test
//! `tests/contract.rs` fails when they differ from these types, and Python's tests check the
//! normalizer's documents, the core's real output and the test double against them.

use crate::scenario::Scenario;
use crate::sim::Output;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// JSON Schema of the normalized scenario the core accepts.
pub fn scenario_schema() -> Value {
    let generator = SchemaSettings::draft2020_12().for_deserialize().into_generator();
    let mut schema = generator.into_root_schema_for::<Scenario>().to_value();
    annotate(
        &mut schema,
        "fatpipe normalized scenario",
        "The document Python's scenario loader hands the core (docs/core-interface.md).",
    );
    schema
}

/// JSON Schema of `Simulation::finish`'s output (the columns as arrays of integers). Every
/// key is required, null where a value is absent, and no other key is allowed, so a key the
/// core adds, renames or drops shows as a difference.
pub fn results_schema() -> Value {
    output_schema::<Output>("fatpipe core results", "What Simulation::finish returns (docs/core-interface.md).")
}

/// JSON Schema of a result document of type `T` as serde serializes it, with its title and
/// description: the simulator's, the emulator's and the probe's are made alike.
pub fn output_schema<T: schemars::JsonSchema>(title: &str, description: &str) -> Value {
    let generator = SchemaSettings::draft2020_12().for_serialize().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    annotate(&mut schema, title, description);
    schema
}

/// Sets a schema's title and description.
fn annotate(schema: &mut Value, title: &str, description: &str) {
    if let Some(map) = schema.as_object_mut() {
        map.insert("title".into(), title.into());
        map.insert("description".into(), description.into());
    }
}

/// Compares `schema` with the committed file `python/fatpipe/schemas/<file>` (or, with
/// FATPIPE_UPDATE_SCHEMAS set, writes it): the contract tests of fatpipe-core and fatpipe-emu
/// fail on the message.
pub fn check_committed(file: &str, schema: &Value) -> Result<(), String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../python/fatpipe/schemas").join(file);
    let generated = serde_json::to_string_pretty(schema).expect("a schema serializes") + "\n";
    if std::env::var_os("FATPIPE_UPDATE_SCHEMAS").is_some() {
        return std::fs::write(&path, &generated).map_err(|e| format!("{}: {e}", path.display()));
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed == generated {
        return Ok(());
    }
    Err(format!(
        "{} differs from the schema the types generate: the contract changed. Update it with \
         FATPIPE_UPDATE_SCHEMAS=1 cargo test --release --test contract (in the crate that owns it), and the docs",
        path.display()
    ))
}
