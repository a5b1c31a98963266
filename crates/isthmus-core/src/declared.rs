//! Every configuration parameter declared once: its meaning (the field's doc comment),
//! unit, default and valid range live on the engine's own types (`schemars` reads them
//! off the types as JSON Schema). Python builds its models, the scenario schema,
//! `isthmus parameters` and docs/parameters.md from this, so none of them restates a
//! parameter.
//!
//! Beyond JSON Schema's own keywords a field may carry `unit`: "ps" (a duration),
//! "bytes", "bit/s", "packets", "segments" or "limit" (a `Limit`), which says both the
//! engine's unit and how Python lets a user write the value ("5ms", "64KB", "10Gbps").

use crate::engine::EngineConfig;
use crate::transport::bcn::BcnSourceConfig;
use crate::transport::dcqcn::DcqcnConfig;
use crate::transport::tcp::TcpConfig;

/// The declarations: `{"$defs": {type name: schema}}`, every configuration type the
/// engine takes (and the types inside them) by name.
pub fn declarations() -> serde_json::Value {
    let mut generator = schemars::SchemaGenerator::default();
    generator.subschema_for::<EngineConfig>();
    generator.subschema_for::<TcpConfig>();
    generator.subschema_for::<BcnSourceConfig>();
    generator.subschema_for::<DcqcnConfig>();
    serde_json::json!({ "$defs": generator.take_definitions(true) })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(schema: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
        let mut out = Vec::new();
        if let Some(props) = schema.get("properties").and_then(|p| p.as_object()) {
            out.extend(props.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        for variants in ["oneOf", "anyOf"] {
            if let Some(list) = schema.get(variants).and_then(|v| v.as_array()) {
                for variant in list {
                    out.extend(fields(variant));
                }
            }
        }
        out
    }

    /// A parameter without a meaning, or a duration, size or rate without its unit,
    /// would reach users unexplained (or read as the wrong unit).
    #[test]
    fn every_parameter_has_a_meaning_and_every_quantity_a_unit() {
        let declared = declarations();
        let defs = declared["$defs"].as_object().unwrap();
        for name in [
            "EngineConfig",
            "TcpConfig",
            "AqmConfig",
            "SchedulerConfig",
            "DcqcnConfig",
        ] {
            assert!(defs.contains_key(name), "{name} is not declared");
        }
        for (type_name, schema) in defs {
            for (field, spec) in fields(schema) {
                if field == "kind" || field == "rank" {
                    continue;
                }
                let described = spec.get("description").is_some();
                assert!(described, "{type_name}.{field} has no meaning declared");
                let integer = spec["type"] == "integer"
                    || spec["type"]
                        .as_array()
                        .is_some_and(|t| t.contains(&"integer".into()));
                let counted = ["ttl", "lossless", "classes", "fast_recovery_stages"];
                if integer && !counted.contains(&field.as_str()) {
                    assert!(
                        spec.get("unit").is_some(),
                        "{type_name}.{field} has no unit"
                    );
                }
            }
        }
    }

    /// A declared default is the one the engine takes when the field is left out.
    #[test]
    fn declared_defaults_are_the_engines() {
        let declared = declarations();
        let tcp = &declared["$defs"]["TcpConfig"]["properties"];
        let engine = serde_json::to_value(TcpConfig::default()).unwrap();
        for (field, spec) in tcp.as_object().unwrap() {
            assert_eq!(spec["default"], engine[field], "TcpConfig.{field}");
        }
        let aqm: crate::queue::AqmConfig =
            serde_json::from_value(serde_json::json!({"kind": "codel"})).unwrap();
        assert_eq!(aqm, crate::queue::AqmConfig::codel());
        let source: BcnSourceConfig = serde_json::from_value(serde_json::json!({
            "line_rate": 10, "restart_rate": 5, "max_rate": 10
        }))
        .unwrap();
        assert_eq!(source, BcnSourceConfig::ibcn(10, 5));
        let dcqcn: DcqcnConfig =
            serde_json::from_value(serde_json::json!({"line_rate": 7})).unwrap();
        assert_eq!(dcqcn, DcqcnConfig::paper(7));
    }

    /// Values just outside a field's declared range (or list length, or item range).
    fn outside(spec: &serde_json::Value) -> Vec<serde_json::Value> {
        use serde_json::json;
        let integer = spec["type"] == "integer"
            || spec["type"]
                .as_array()
                .is_some_and(|t| t.contains(&"integer".into()));
        let top = match spec["format"].as_str() {
            Some("uint8") => 255.0,
            Some("uint16") => 65_535.0,
            Some("uint32") => u32::MAX as f64,
            _ => f64::INFINITY,
        };
        let number = |x: f64| if integer { json!(x as i64) } else { json!(x) };
        let mut out = Vec::new();
        if let Some(m) = spec["exclusiveMinimum"].as_f64() {
            out.push(number(m));
        }
        if let Some(m) = spec["minimum"].as_f64().filter(|&m| m > 0.0) {
            out.push(number(if integer { m - 1.0 } else { m - 0.5 }));
        }
        if let Some(m) = spec["maximum"].as_f64().filter(|&m| m < top) {
            out.push(number(if integer { m + 1.0 } else { m + 0.5 }));
        }
        if spec["type"] == "array" {
            let item = json!(1000);
            if spec["minItems"].as_u64().is_some_and(|n| n > 0) {
                out.push(json!([]));
            }
            if let Some(n) = spec["maxItems"].as_u64() {
                out.push(json!(vec![item.clone(); n as usize + 1]));
            }
            if spec.get("item_minimum").is_some() {
                out.push(json!([0]));
            }
        }
        out
    }

    /// Every value outside a declared range is one the engine refuses: Python holds
    /// users to the declaration, and the engine, given the value some other way (a
    /// command, another binding), holds to the same.
    fn refuses_outside(
        schema: &serde_json::Value,
        base: serde_json::Value,
        place: impl Fn(&mut serde_json::Value, &str, serde_json::Value),
        accept: impl Fn(serde_json::Value) -> Result<(), String>,
    ) -> usize {
        accept(base.clone()).expect("the base value is valid");
        let mut checked = 0;
        for (field, spec) in schema["properties"].as_object().unwrap() {
            for bad in outside(spec) {
                let mut value = base.clone();
                place(&mut value, field, bad.clone());
                assert!(
                    accept(value).is_err(),
                    "{field} = {bad} is outside its declared range, yet accepted"
                );
                checked += 1;
            }
        }
        checked
    }

    fn variant<'a>(schema: &'a serde_json::Value, kind: &str) -> &'a serde_json::Value {
        schema["oneOf"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["properties"]["kind"]["const"] == kind)
            .unwrap()
    }

    #[test]
    fn the_engine_refuses_every_value_outside_a_declared_range() {
        use crate::queue::{AqmConfig, QueueConfig};
        use serde_json::{json, Value};
        let declared = declarations();
        let defs = &declared["$defs"];
        let set = |v: &mut Value, f: &str, x: Value| v[f] = x;
        let mut checked = 0;

        let tcp = |v: Value| {
            serde_json::from_value::<TcpConfig>(v)
                .map_err(|e| e.to_string())?
                .validate()
        };
        let tcp_default = serde_json::to_value(TcpConfig::default()).unwrap();
        checked += refuses_outside(&defs["TcpConfig"], tcp_default, set, tcp);
        let dctcp = |v: Value| tcp(json!({ "dctcp": v }));
        checked += refuses_outside(&defs["Dctcp"], json!({}), set, dctcp);

        let source = |v: Value| {
            serde_json::from_value::<BcnSourceConfig>(v)
                .map_err(|e| e.to_string())?
                .validate()
        };
        let ibcn = serde_json::to_value(BcnSourceConfig::ibcn(10_000_000_000, 1_000_000_000));
        checked += refuses_outside(&defs["BcnSourceConfig"], ibcn.unwrap(), set, source);
        let dcqcn = |v: Value| {
            serde_json::from_value::<DcqcnConfig>(v)
                .map_err(|e| e.to_string())?
                .validate()
        };
        let paper = serde_json::to_value(DcqcnConfig::paper(10_000_000_000)).unwrap();
        checked += refuses_outside(&defs["DcqcnConfig"], paper, set, dcqcn);

        let aqm = |v: Value| {
            serde_json::from_value::<AqmConfig>(v)
                .map_err(|e| e.to_string())?
                .validate()
        };
        for base in [
            json!({"kind": "red", "min": ["packets", 10], "max": ["packets", 40]}),
            json!({"kind": "ramp", "kmin": ["packets", 10], "kmax": ["packets", 40]}),
            json!({"kind": "codel"}),
            json!({"kind": "pie"}),
        ] {
            let kind = base["kind"].as_str().unwrap().to_string();
            checked += refuses_outside(variant(&defs["AqmConfig"], &kind), base, set, aqm);
        }

        let queue = |scheduler: Value| {
            serde_json::from_value::<QueueConfig>(json!({
                "limit": ["packets", 100], "scheduler": scheduler, "aqm": {"kind": "drop_tail"}
            }))
            .map_err(|e| e.to_string())?
            .validate()
        };
        for base in [
            json!({"kind": "strict_priority", "classes": 2}),
            json!({"kind": "drr", "quanta": [1500]}),
            json!({"kind": "wfq", "weights": [1]}),
            json!({"kind": "fq"}),
        ] {
            let kind = base["kind"].as_str().unwrap().to_string();
            checked += refuses_outside(variant(&defs["SchedulerConfig"], &kind), base, set, queue);
        }
        let port = |v: Value| {
            serde_json::from_value::<QueueConfig>(v)
                .map_err(|e| e.to_string())?
                .validate()
        };
        let fifo = json!({
            "limit": ["packets", 100], "scheduler": {"kind": "fifo"}, "aqm": {"kind": "drop_tail"}
        });
        checked += refuses_outside(&defs["QueueConfig"], fifo, set, port);

        let engine = |v: Value| {
            serde_json::from_value::<EngineConfig>(v)
                .map_err(|e| e.to_string())?
                .validate()
        };
        checked += refuses_outside(&defs["EngineConfig"], json!({}), set, engine);
        let within =
            |section: &'static str| move |v: &mut Value, f: &str, x: Value| v[section][f] = x;
        let pfc = json!({"pfc": {"xoff": 1000, "xon": 500, "lossless": 1},
                         "shared_buffer": {"bytes": 100000, "alpha": 1.0}});
        checked += refuses_outside(&defs["Pfc"], pfc.clone(), within("pfc"), engine);
        checked += refuses_outside(&defs["SharedBuffer"], pfc, within("shared_buffer"), engine);
        let bcn = json!({"bcn": {}});
        checked += refuses_outside(&defs["BcnPointConfig"], bcn, within("bcn"), engine);
        assert!(checked > 40, "only {checked} bounds were tried");
    }
}
