//! A record as it arrived, made ready for the sink: its key, its timestamps, its digest.

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::sink::Record;
use crate::time;

/// The fields a stream reads in each record.
#[derive(Debug, Clone)]
pub(crate) struct Fields {
    pub(crate) key: String,
    pub(crate) updated: String,
    pub(crate) created: String,
}

/// A field's value as served: a string's text, any other value's JSON.
pub(crate) fn as_served(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The element as the sink stores it; `None` for an element without a key. The key is a
/// non-empty string, or an integer written as text; `updated_at` is the updated field read as a
/// timestamp (NULL when it is absent or unreadable), `updated_at_raw` the field as served.
pub(crate) fn element(value: Value, fields: &Fields) -> Option<Record> {
    let id = key(&value, &fields.key)?;
    let Value::Object(object) = &value else { return None };
    let raw = object.get(&fields.updated).filter(|v| !v.is_null());
    Some(Record {
        id,
        updated_at: raw.and_then(time::parse).map(time::format),
        updated_at_raw: raw.map(as_served),
        digest: digest(&value),
        body: value.to_string(),
    })
}

/// The key of an element: its `field`, a non-empty string or an integer written as text.
pub(crate) fn key(element: &Value, field: &str) -> Option<String> {
    match element.get(field)? {
        Value::String(id) if !id.is_empty() => Some(id.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// The SHA-256, in lower-case hex, of the RFC 8785 canonical JSON of `value`: equal for two
/// records equal as JSON, whatever their key order and spacing.
pub(crate) fn digest(value: &Value) -> String {
    // Canonical JSON of a `serde_json::Value` cannot fail: every number is finite.
    let canonical =
        serde_json_canonicalizer::to_vec(value).unwrap_or_else(|_| value.to_string().into_bytes());
    Sha256::digest(canonical).iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn fields() -> Fields {
        Fields { key: "id".into(), updated: "updatedAt".into(), created: "createdAt".into() }
    }

    #[test]
    fn a_record_keeps_what_was_served_and_reads_its_timestamp() {
        let served =
            json!({"id": "c1", "updatedAt": "2024-01-02T03:04:05+01:00", "extra": {"b": 1, "a": [1.5]}});
        let record = element(served.clone(), &fields()).expect("a record");
        assert_eq!(record.id, "c1");
        assert_eq!(record.updated_at.as_deref(), Some("2024-01-02T02:04:05.000000000Z"));
        assert_eq!(record.updated_at_raw.as_deref(), Some("2024-01-02T03:04:05+01:00"));
        assert_eq!(serde_json::from_str::<Value>(&record.body).ok(), Some(served));
        assert_eq!(record.digest.len(), 64);
    }

    #[test]
    fn elements_without_a_usable_key_are_told_apart() {
        for element_ in
            [json!({"name": "x"}), json!({"id": ""}), json!({"id": null}), json!("c1"), json!({"id": 1.5})]
        {
            assert_eq!(element(element_, &fields()), None);
        }
        let record = element(json!({"id": 7}), &fields()).expect("a record");
        assert_eq!((record.id.as_str(), record.updated_at, record.updated_at_raw), ("7", None, None));
    }

    #[test]
    fn the_digest_is_rfc_8785s() {
        // RFC 8785 section 3.2.3: keys sorted by UTF-16 code units, numbers in ECMAScript form.
        let value: Value =
            serde_json::from_str(r#"{"\u20ac": 1, "\r": 2, "1": 1e1, "\u0080": 3, "a": 1.0}"#).unwrap();
        let canonical = serde_json_canonicalizer::to_string(&value).unwrap();
        assert_eq!(canonical, "{\"\\r\":2,\"1\":10,\"a\":1,\"\u{80}\":3,\"\u{20ac}\":1}");
        assert_eq!(
            digest(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
            "sha256 of `{{}}`"
        );
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                prop::collection::vec((".{0,6}", inner), 0..5)
                    .prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
            ]
        })
    }

    /// `value` as JSON text with every object's keys in reverse order and spaces between tokens.
    fn reversed_text(value: &Value) -> String {
        match value {
            Value::Object(map) => {
                let fields: Vec<String> = map
                    .iter()
                    .rev()
                    .map(|(k, v)| format!("{} : {}", Value::from(k.as_str()), reversed_text(v)))
                    .collect();
                format!("{{ {} }}", fields.join(" , "))
            }
            Value::Array(items) => {
                format!("[ {} ]", items.iter().map(reversed_text).collect::<Vec<_>>().join(" , "))
            }
            other => other.to_string(),
        }
    }

    proptest! {
        #[test]
        fn the_digest_ignores_key_order_and_spacing_and_sees_any_change(value in json_value(), other in json_value()) {
            let reordered: Value = serde_json::from_str(&reversed_text(&value)).unwrap();
            prop_assert_eq!(digest(&value), digest(&reordered));
            let canonical = serde_json_canonicalizer::to_string(&value).unwrap();
            let back: Value = serde_json::from_str(&canonical).unwrap();
            prop_assert_eq!(digest(&back), digest(&value));
            if serde_json_canonicalizer::to_string(&other).unwrap() != canonical {
                prop_assert_ne!(digest(&value), digest(&other));
            }
        }
    }
}
