//! Exact physical quantities: time in integer picoseconds, rates in integer bit/s,
//! sizes in integer bytes, and the strict parsers that turn "10Gbps" or "1us" into them.
//!
//! Decimal prefixes are decimal (1 KB = 1000 B, 1 Gbps = 10^9 bit/s); binary sizes
//! are spelled KiB/MiB/GiB. Numbers may carry a fraction ("2.5Gbps", "0.5us") as long
//! as the result is a whole number of the base unit; nothing goes through floats.

use std::fmt;

/// Simulated time, an integer count of picoseconds.
pub type Time = u64;
/// A rate in bits per second.
pub type Rate = u64;

pub const PS: Time = 1;
pub const NS: Time = 1_000;
pub const US: Time = 1_000_000;
pub const MS: Time = 1_000_000_000;
pub const SEC: Time = 1_000_000_000_000;

/// Time to serialise `bytes` onto a link of `rate` bit/s, rounded up to a whole picosecond.
#[inline]
pub fn serialization_time(bytes: u32, rate: Rate) -> Time {
    let bits_ps = bytes as u128 * 8 * SEC as u128;
    bits_ps.div_ceil(rate as u128) as Time
}

/// A queue or buffer limit: counted in packets or in bytes. Serialised as its unit and
/// count, `("packets", 250)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Packets(u64),
    Bytes(u64),
}

// Declared by hand: serde sees a (unit, count) pair, which derive cannot describe.
impl schemars::JsonSchema for Limit {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Limit".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A queue or buffer limit: its unit and count.",
            "type": "array",
            "prefixItems": [{"enum": ["packets", "bytes"]}, {"type": "integer", "minimum": 0}],
            "items": false,
            "unit": "limit"
        })
    }
}

impl serde::Serialize for Limit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Limit::Packets(n) => ("packets", n).serialize(serializer),
            Limit::Bytes(n) => ("bytes", n).serialize(serializer),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Limit {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let (kind, n): (String, u64) = serde::Deserialize::deserialize(deserializer)?;
        match kind.as_str() {
            "packets" => Ok(Limit::Packets(n)),
            "bytes" => Ok(Limit::Bytes(n)),
            other => Err(serde::de::Error::custom(format!(
                "a limit counts 'packets' or 'bytes', not '{other}'"
            ))),
        }
    }
}

/// A unit string that could not be parsed; the message names the value and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnitError(pub String);

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UnitError {}

const TIME_UNITS: &[(&str, u128)] = &[
    ("ps", 1),
    ("ns", 1_000),
    ("us", 1_000_000),
    ("µs", 1_000_000),
    ("ms", 1_000_000_000),
    ("s", 1_000_000_000_000),
];

const RATE_UNITS: &[(&str, u128)] = &[
    ("bps", 1),
    ("Kbps", 1_000),
    ("Mbps", 1_000_000),
    ("Gbps", 1_000_000_000),
    ("Tbps", 1_000_000_000_000),
    ("b/s", 1),
    ("Kb/s", 1_000),
    ("Mb/s", 1_000_000),
    ("Gb/s", 1_000_000_000),
    ("Tb/s", 1_000_000_000_000),
    ("K", 1_000),
    ("M", 1_000_000),
    ("G", 1_000_000_000),
    ("T", 1_000_000_000_000),
];

const SIZE_UNITS: &[(&str, u128)] = &[
    ("B", 1),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

const PACKET_UNITS: &[&str] = &["pkts", "pkt", "packets", "packet", "p"];

/// Splits "2.5Gbps" into ("2.5", "Gbps"), allowing spaces between number and unit.
fn split_number(text: &str) -> (&str, &str) {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(text.len());
    (&text[..end], text[end..].trim())
}

/// Multiplies a decimal literal by an integer unit exactly, or says why it cannot.
fn scale_decimal(
    kind: &str,
    original: &str,
    number: &str,
    unit: &str,
    scale: u128,
) -> Result<u64, UnitError> {
    let number = number.replace('_', "");
    let (whole, frac) = match number.split_once('.') {
        Some((w, f)) => (w, f),
        None => (number.as_str(), ""),
    };
    if (whole.is_empty() && frac.is_empty()) || frac.contains('.') {
        return Err(UnitError(format!(
            "invalid {kind} '{original}': expected a number followed by a unit, like '10{unit}'"
        )));
    }
    let digits = format!("{whole}{frac}");
    let mantissa: u128 = digits.parse().map_err(|_| {
        UnitError(format!(
            "invalid {kind} '{original}': '{number}' is not a number"
        ))
    })?;
    let divisor = 10u128
        .checked_pow(frac.len() as u32)
        .ok_or_else(|| UnitError(format!("invalid {kind} '{original}': too many decimals")))?;
    let product = mantissa
        .checked_mul(scale)
        .ok_or_else(|| UnitError(format!("invalid {kind} '{original}': value too large")))?;
    if product % divisor != 0 {
        return Err(UnitError(format!(
            "invalid {kind} '{original}': not a whole number of the base unit; use a smaller unit"
        )));
    }
    u64::try_from(product / divisor)
        .map_err(|_| UnitError(format!("invalid {kind} '{original}': value too large")))
}

fn parse_with(kind: &str, text: &str, units: &[(&str, u128)]) -> Result<u64, UnitError> {
    let (number, unit) = split_number(text);
    let names: Vec<&str> = units.iter().map(|(n, _)| *n).collect();
    if text.trim().starts_with('-') {
        return Err(UnitError(format!(
            "invalid {kind} '{text}': must not be negative"
        )));
    }
    if number.is_empty() {
        return Err(UnitError(format!(
            "invalid {kind} '{text}': expected a number followed by a unit ({})",
            names.join(", ")
        )));
    }
    if unit.is_empty() {
        return Err(UnitError(format!(
            "invalid {kind} '{text}': missing unit; write it as e.g. '{number}{}' (units: {})",
            units[units.len().min(4) - 1].0,
            names.join(", ")
        )));
    }
    match units.iter().find(|(name, _)| *name == unit) {
        Some((_, scale)) => scale_decimal(kind, text, number, unit, *scale),
        None => Err(UnitError(format!(
            "invalid {kind} '{text}': unknown unit '{unit}' (expected one of {})",
            names.join(", ")
        ))),
    }
}

/// Parses a duration such as "1us", "5ms", "0.5 s" into picoseconds.
pub fn parse_time(text: &str) -> Result<Time, UnitError> {
    parse_with("time", text, TIME_UNITS)
}

/// Parses a rate such as "10Gbps", "40G", "2.5 Gb/s" into bit/s; zero is rejected.
pub fn parse_rate(text: &str) -> Result<Rate, UnitError> {
    let rate = parse_with("rate", text, RATE_UNITS)?;
    if rate == 0 {
        return Err(UnitError(format!(
            "invalid rate '{text}': must be greater than zero"
        )));
    }
    Ok(rate)
}

/// Parses a size such as "1500B", "300KB", "64KiB" into bytes.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    parse_with("size", text, SIZE_UNITS)
}

/// Parses a queue limit: packets ("250pkts") or bytes ("300KB").
pub fn parse_limit(text: &str) -> Result<Limit, UnitError> {
    let (number, unit) = split_number(text);
    if PACKET_UNITS.contains(&unit) {
        let n = scale_decimal("queue limit", text, number, unit, 1)?;
        return Ok(Limit::Packets(n));
    }
    match parse_with("queue limit", text, SIZE_UNITS) {
        Ok(bytes) => Ok(Limit::Bytes(bytes)),
        Err(_) => Err(UnitError(format!(
            "invalid queue limit '{text}': expected packets ('250pkts') or bytes ('300KB', '64KiB')"
        ))),
    }
}

/// Formats picoseconds with the largest unit that keeps three significant digits.
pub fn format_time(t: Time) -> String {
    let (scale, unit) = match t {
        t if t >= SEC => (SEC, "s"),
        t if t >= MS => (MS, "ms"),
        t if t >= US => (US, "us"),
        t if t >= NS => (NS, "ns"),
        _ => (PS, "ps"),
    };
    format!("{:.3}{unit}", t as f64 / scale as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_times_exactly() {
        assert_eq!(parse_time("1us").unwrap(), US);
        assert_eq!(parse_time("5ms").unwrap(), 5 * MS);
        assert_eq!(parse_time("0.5us").unwrap(), 500 * NS);
        assert_eq!(parse_time("2 s").unwrap(), 2 * SEC);
        assert_eq!(parse_time("1µs").unwrap(), US);
        assert_eq!(parse_time("1_000ns").unwrap(), US);
    }

    #[test]
    fn parses_rates_exactly() {
        assert_eq!(parse_rate("10Gbps").unwrap(), 10_000_000_000);
        assert_eq!(parse_rate("40G").unwrap(), 40_000_000_000);
        assert_eq!(parse_rate("2.5Gb/s").unwrap(), 2_500_000_000);
        assert_eq!(parse_rate("100Mbps").unwrap(), 100_000_000);
    }

    #[test]
    fn parses_sizes_and_limits() {
        assert_eq!(parse_size("1500B").unwrap(), 1500);
        assert_eq!(parse_size("300KB").unwrap(), 300_000);
        assert_eq!(parse_size("64KiB").unwrap(), 65_536);
        assert_eq!(parse_limit("250pkts").unwrap(), Limit::Packets(250));
        assert_eq!(parse_limit("300KB").unwrap(), Limit::Bytes(300_000));
    }

    #[test]
    fn errors_name_the_value_and_the_fix() {
        let e = parse_rate("10").unwrap_err().0;
        assert!(e.contains("'10'") && e.contains("missing unit"), "{e}");
        let e = parse_rate("10Gps").unwrap_err().0;
        assert!(
            e.contains("unknown unit 'Gps'") && e.contains("Gbps"),
            "{e}"
        );
        let e = parse_rate("-1Gbps").unwrap_err().0;
        assert!(e.contains("negative"), "{e}");
        let e = parse_rate("0Gbps").unwrap_err().0;
        assert!(e.contains("greater than zero"), "{e}");
        let e = parse_time("0.5ps").unwrap_err().0;
        assert!(e.contains("whole number"), "{e}");
        let e = parse_limit("250").unwrap_err().0;
        assert!(e.contains("250pkts"), "{e}");
        let e = parse_time("fast").unwrap_err().0;
        assert!(e.contains("'fast'"), "{e}");
    }

    #[test]
    fn serialization_rounds_up() {
        assert_eq!(serialization_time(1500, 10_000_000_000), 1_200_000);
        assert_eq!(serialization_time(1500, 400_000_000_000), 30_000);
        assert_eq!(serialization_time(1, 3), 2_666_666_666_667);
    }
}
