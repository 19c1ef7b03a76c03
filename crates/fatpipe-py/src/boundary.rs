//! Documents across the Python/Rust boundary as Python objects, never as JSON text: a
//! normalized scenario (a dict) is read straight into the core's serde types, and results
//! are written straight into dicts and lists, in the order of the types' fields. pythonize
//! does both (a serde Deserializer over Python objects and a Serializer into them), so the
//! core's types stay the one definition of the documents (schema.rs draws their schemas).

use fatpipe_core::scenario::{Scenario, ScenarioError};
use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

create_exception!(
    _core,
    RouteError,
    PyValueError,
    "A flow of the scenario whose packets find no way: `flow` (its index in the normalized \
     scenario), `loops` (the explicit routes go round in a circle; else there is no route) and \
     `problem` (what is wrong, naming the packets and hosts)."
);

/// `obj` read as a `T` by serde; ValueError "<what>: <serde's message>" if it is not one.
pub fn from_python<T: DeserializeOwned>(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    pythonize::depythonize(obj).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

/// A normalized scenario given as a dict (serde's checks only; `Scenario::validate` checks
/// the rest).
pub fn scenario(obj: &Bound<'_, PyAny>) -> PyResult<Scenario> {
    from_python(obj, "scenario")
}

create_exception!(
    _core,
    FlowFieldError,
    PyValueError,
    "A field of one flow that the core refused: `flow` (its index in the normalized scenario), \
     `field` (the path inside the flow from its first dot, e.g. `.cc.c`) and `problem` (the \
     value and what is allowed)."
);

/// `value` as Python objects: structs and maps as dicts, sequences as lists.
pub fn to_python<'py, T: Serialize>(py: Python<'py>, value: &T) -> PyResult<Bound<'py, PyAny>> {
    Ok(pythonize::pythonize(py, value)?)
}

/// What `Scenario::validate` refused, as Python raises it: ValueError naming the field, or
/// RouteError carrying the flow and the problem as attributes.
pub fn scenario_error(py: Python<'_>, e: ScenarioError) -> PyErr {
    match e {
        ScenarioError::Field(message) => PyValueError::new_err(message),
        ScenarioError::Route(route) => {
            let err = RouteError::new_err(route.to_string());
            let value = err.value(py);
            let set = || -> PyResult<()> {
                value.setattr("flow", route.flow)?;
                value.setattr("loops", route.loops)?;
                value.setattr("problem", &route.problem)
            };
            set().err().unwrap_or(err)
        }
        ScenarioError::Flow(field) => {
            let err = FlowFieldError::new_err(field.to_string());
            let value = err.value(py);
            let set = || -> PyResult<()> {
                value.setattr("flow", field.flow)?;
                value.setattr("field", &field.field)?;
                value.setattr("problem", &field.problem)
            };
            set().err().unwrap_or(err)
        }
    }
}
