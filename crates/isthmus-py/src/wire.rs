//! How a configuration or a command crosses from Python: one value of the engine's own
//! type (`EngineConfig`, `Command`, ...), read by serde from the plain Python value the
//! caller built (dicts, lists, numbers, strings, None), with the type's declared
//! defaults and checks. Nothing is converted field by field; values going back to
//! Python leave serialised (JSON).

use crate::value_error;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// `value` read as a `T`; the error names `what` and, where serde can follow it (not
/// inside a kind-tagged value), the path to the bad field ("engine configuration:
/// pfc.xoff: invalid type ...").
pub(crate) fn from_py<T: serde::de::DeserializeOwned>(
    what: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<T> {
    let tree = plain(value).map_err(|e| value_error(format!("{what}: {e}")))?;
    serde_path_to_error::deserialize(tree).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            value_error(format!("{what}: {}", e.inner()))
        } else {
            value_error(format!("{what}: {path}: {}", e.inner()))
        }
    })
}

/// The serialised (JSON) form of a value going back to Python.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| value_error(e.to_string()))
}

/// A plain Python value as serde's data model; anything else is refused by type.
fn plain(value: &Bound<'_, PyAny>) -> Result<Value, String> {
    if value.is_none() {
        Ok(Value::Null)
    } else if let Ok(flag) = value.cast::<PyBool>() {
        // Before integers: a bool is an int in Python.
        Ok(Value::Bool(flag.is_true()))
    } else if value.is_instance_of::<PyInt>() {
        if let Ok(n) = value.extract::<u64>() {
            Ok(Value::Number(n.into()))
        } else {
            let n: i64 = value
                .extract()
                .map_err(|_| format!("{value} does not fit in 64 bits"))?;
            Ok(Value::Number(n.into()))
        }
    } else if let Ok(x) = value.cast::<PyFloat>() {
        Number::from_f64(x.value())
            .map(Value::Number)
            .ok_or_else(|| format!("{} is not a finite number", x.value()))
    } else if let Ok(text) = value.cast::<PyString>() {
        Ok(Value::String(
            text.to_str().map_err(|e| e.to_string())?.to_owned(),
        ))
    } else if let Ok(list) = value.cast::<PyList>() {
        list.iter()
            .map(|item| plain(&item))
            .collect::<Result<_, _>>()
            .map(Value::Array)
    } else if let Ok(tuple) = value.cast::<PyTuple>() {
        tuple
            .iter()
            .map(|item| plain(&item))
            .collect::<Result<_, _>>()
            .map(Value::Array)
    } else if let Ok(dict) = value.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, item) in dict.iter() {
            let key = key
                .cast::<PyString>()
                .map_err(|_| format!("a key must be a string, got {key}"))?
                .to_str()
                .map_err(|e| e.to_string())?
                .to_owned();
            map.insert(key, plain(&item)?);
        }
        Ok(Value::Object(map))
    } else if let Ok(flag) = value.extract::<bool>() {
        // NumPy's bool (PyO3 reads it as a bool; it is not Python's).
        Ok(Value::Bool(flag))
    } else if value.hasattr("__index__").unwrap_or(false) {
        // NumPy's integer scalars, and anything else that is an integer.
        plain(&value.call_method0("__index__").map_err(|e| e.to_string())?)
    } else if value.hasattr("__float__").unwrap_or(false) {
        plain(&value.call_method0("__float__").map_err(|e| e.to_string())?)
    } else {
        Err(format!(
            "{} is a {}, not a number, string, list, dict or None",
            value,
            value.get_type().name().map_err(|e| e.to_string())?
        ))
    }
}
