//! How a configuration or a command crosses from Python: one value of the engine's own
//! type (`EngineConfig`, `Command`, ...), read by serde from the plain Python value the
//! caller built (dicts, lists, numbers, strings, None), with the type's declared
//! defaults and checks. Nothing is converted field by field; values going back to
//! Python leave serialised (JSON).

use crate::value_error;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// `value` read as a `T`; `what` names it in the error ("command: unknown field ...").
pub(crate) fn from_py<T: serde::de::DeserializeOwned>(
    what: &str,
    value: &Bound<'_, PyAny>,
) -> PyResult<T> {
    let tree = plain(value).map_err(|e| value_error(format!("{what}: {e}")))?;
    serde_json::from_value(tree).map_err(|e| value_error(format!("{what}: {e}")))
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
    } else {
        Err(format!(
            "{} is a {}, not a number, string, list, dict or None",
            value,
            value.get_type().name().map_err(|e| e.to_string())?
        ))
    }
}
