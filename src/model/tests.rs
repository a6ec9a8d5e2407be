//! The record decoder over arbitrary input: no panic, nothing the server sent lost, and an
//! element that is not a record refused with the record's own words.

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::{Company, CompanyStatus, Contact};
use crate::timestamp::{from_epoch, from_epoch_int, parse_timestamp};

/// Names records use, and a few they do not, so that generated objects reach every field.
const NAMES: &[&str] = &["id", "name", "status", "createdAt", "updatedAt", "companyId", "industry", ""];

/// Any JSON value: strings that look like timestamps, long strings, numbers of every kind,
/// and objects whose keys are often names a record reads.
pub(crate) fn json() -> impl Strategy<Value = Value> {
    let number = prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        (1_500_000_000_i64..2_000_000_000_000).prop_map(Value::from),
    ];
    let text = prop_oneof![
        8 => ".{0,12}",
        3 => "20[0-9]{2}-[01][0-9]-[0-3][0-9][T ][0-2][0-9]:[0-5][0-9]:[0-5][0-9](Z|[+-]0[0-9]:00)?",
        1 => "[a-z\u{1}-\u{1f}]{1000,1200}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        number,
        text.prop_map(Value::from)
    ];
    leaf.prop_recursive(3, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((key(), inner), 0..8)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// A key of a generated object: a name records use, most often.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![3 => prop::sample::select(NAMES).prop_map(str::to_owned), 1 => ".{0,8}"]
}

/// An object whose fields are any JSON values under the names records use and others.
fn object() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::vec((key(), json()), 0..10).prop_map(|fields| fields.into_iter().collect())
}

/// An object, half of the time with the string `id` and `name` a company needs.
fn company() -> impl Strategy<Value = Map<String, Value>> {
    (object(), any::<bool>(), ".{0,8}", ".{0,8}").prop_map(|(mut fields, whole, id, name)| {
        if whole {
            fields.insert("id".to_owned(), Value::from(id));
            fields.insert("name".to_owned(), Value::from(name));
        }
        fields
    })
}

/// A timestamp as a lenient field reads it.
fn time(value: &Value) -> Option<DateTime<Utc>> {
    match value {
        Value::String(text) => parse_timestamp(text),
        Value::Number(number) => match number.as_i64().map(i128::from).or(number.as_u64().map(i128::from)) {
            Some(integer) => from_epoch_int(integer),
            None => from_epoch(number.as_f64()?),
        },
        _ => None,
    }
}

/// Checks lenient field `name` of a record read from `sent`: `got` is the value read, or
/// `None` when the field was absent, null or unreadable; an unreadable value stays in `extra`
/// (which starts as every field sent, and loses each field read) and the name joins
/// `fallbacks`, in the order of the fields.
fn lenient<T: PartialEq + std::fmt::Debug>(
    name: &'static str,
    read: impl Fn(&Value) -> Option<T>,
    got: Option<T>,
    extra: &mut Map<String, Value>,
    fallbacks: &mut Vec<&'static str>,
) -> Result<(), TestCaseError> {
    let Some(value) = extra.remove(name) else {
        prop_assert!(got.is_none(), "{name}: not sent, but {got:?}");
        return Ok(());
    };
    match read(&value) {
        Some(want) => prop_assert_eq!(got.as_ref(), Some(&want), "{}: {}", name, value),
        None if value.is_null() => prop_assert!(got.is_none(), "{name}: null, but {got:?}"),
        None => {
            prop_assert!(got.is_none(), "{name}: {value} is unreadable, but {got:?}");
            extra.insert(name.to_owned(), value);
            fallbacks.push(name);
        }
    }
    Ok(())
}

/// A string field as a lenient field reads it.
fn string(value: &Value) -> Option<String> {
    value.as_str().map(str::to_owned)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_bytes_make_a_record_panic(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = serde_json::from_slice::<Company>(&bytes);
        let _ = serde_json::from_slice::<Contact>(&bytes);
    }

    /// A company is any object with a string `id` and `name`; every other field it sent is in
    /// its fields or in `extra`, an unreadable value raw under its own name.
    #[test]
    fn a_company_keeps_every_field_it_was_sent(sent in company()) {
        let text = Value::Object(sent).to_string();
        // As the parser reads it back (a float may come back a bit off without exact parsing).
        let sent: Map<String, Value> = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let read = serde_json::from_str::<Company>(&text);
        let sent_str = |name: &str| sent.get(name).and_then(Value::as_str);
        let (Some(id), Some(name)) = (sent_str("id"), sent_str("name")) else {
            prop_assert!(read.is_err(), "{}", text);
            return Ok(());
        };
        let company = read.map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!((company.id.as_str(), company.name.as_str()), (id, name));
        let (mut extra, mut fallbacks) = (sent.clone(), Vec::new());
        extra.remove("id");
        extra.remove("name");
        let status = company.status.as_ref().map(|s| s.as_str().to_owned());
        lenient("status", string, status, &mut extra, &mut fallbacks)?;
        lenient("createdAt", time, company.created_at, &mut extra, &mut fallbacks)?;
        lenient("updatedAt", time, company.updated_at, &mut extra, &mut fallbacks)?;
        prop_assert_eq!(&company.extra, &extra, "{}", text);
        prop_assert_eq!(company.fallbacks(), &fallbacks[..], "{}", text);
    }

    /// A contact is any object: its `id` and `companyId` when they are strings, everything else
    /// in `extra`.
    #[test]
    fn a_contact_keeps_every_field_it_was_sent(sent in object()) {
        let text = Value::Object(sent).to_string();
        // As the parser reads it back (a float may come back a bit off without exact parsing).
        let sent: Map<String, Value> = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let contact = serde_json::from_str::<Contact>(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        let (mut extra, mut fallbacks) = (sent.clone(), Vec::new());
        lenient("id", string, contact.id.clone(), &mut extra, &mut fallbacks)?;
        lenient("companyId", string, contact.company_id.clone(), &mut extra, &mut fallbacks)?;
        prop_assert_eq!(&contact.extra, &extra, "{}", text);
        prop_assert_eq!(contact.fallbacks(), &fallbacks[..], "{}", text);
    }

    /// Whatever is not an object is not a record, and says what was expected.
    #[test]
    fn what_is_not_an_object_is_not_a_record(value in json().prop_filter("not an object", |v| !v.is_object())) {
        let text = value.to_string();
        let company = serde_json::from_str::<Company>(&text).map(|_| ()).map_err(|e| e.to_string());
        let contact = serde_json::from_str::<Contact>(&text).map(|_| ()).map_err(|e| e.to_string());
        prop_assert!(company.is_err_and(|e| e.contains("expected a company object")), "{}", text);
        prop_assert!(contact.is_err_and(|e| e.contains("expected a contact object")), "{}", text);
    }
}

#[test]
fn the_reasons_an_object_is_not_a_company() {
    let reason = |text: &str| serde_json::from_str::<Company>(text).map(|_| ()).map_err(|e| e.to_string());
    assert!(reason(r#"{"name": "Acme"}"#).is_err_and(|e| e.starts_with("missing field `id`")));
    assert!(reason(r#"{"id": "cmp_1"}"#).is_err_and(|e| e.starts_with("missing field `name`")));
    assert!(
        reason(r#"{"id": 7, "name": "Acme"}"#).is_err_and(|e| e.starts_with("invalid type: integer `7`"))
    );
    let twice = r#"{"id": "cmp_1", "name": "Acme", "status": "a", "status": "b"}"#;
    assert!(reason(twice).is_err_and(|e| e.starts_with("duplicate field `status`")));
}

#[test]
fn a_record_written_and_read_again_is_the_same() {
    let sent = json!({
        "id": "cmp_1", "name": "Acme", "status": "active", "createdAt": "2024-01-02T03:04:05Z",
        "updatedAt": "last week", "industry": "retail", "tags": ["a", {"b": null}],
    });
    let company: Company = serde_json::from_value(sent).expect("a company");
    assert_eq!(company.status, Some(CompanyStatus::from("active")));
    assert_eq!(company.fallbacks(), ["updatedAt"]);
    let again: Company =
        serde_json::from_value(serde_json::to_value(&company).expect("json")).expect("a company");
    assert_eq!(
        (&again.id, &again.extra, again.fallbacks()),
        (&company.id, &company.extra, &["updatedAt"][..])
    );
}
