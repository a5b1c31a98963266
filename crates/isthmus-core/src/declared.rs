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
}
