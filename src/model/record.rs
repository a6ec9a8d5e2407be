//! Decoding of records, leniently and in one pass.
//!
//! The named fields are read as they come ([`Wire`]) and then into their types; every other
//! field is copied as JSON text into the record's [`Extra`], without building a
//! `serde_json::Value` and without buffering the object (which `#[serde(flatten)]` would do).
//! A named field whose value cannot be read is left empty, its raw value kept in `extra` under
//! its own name and its name listed in the record's fallbacks. Only a missing or unreadable
//! required field (a company's `id` and `name`) makes an object undecodable, and then its JSON
//! is kept whole in an [`Unread`].

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::extra::{Extra, ExtraWriter, Transcode, into_string, write_json};
use crate::timestamp::{from_epoch, from_epoch_int, parse_timestamp};

/// An object key, borrowed from the input when it can be.
pub(crate) enum Key<'de> {
    Borrowed(&'de str),
    Owned(String),
}

impl Key<'_> {
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Key::Borrowed(s) => s,
            Key::Owned(s) => s,
        }
    }
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key::Borrowed(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key::Owned(v))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// A record type: decodes leniently from a JSON object and says which fields fell back.
/// Sealed: implemented by [`Company`](crate::Company) and [`Contact`](crate::Contact) only.
pub trait Record: Sized {
    /// Reads one object; `Ok(Err(..))` when it holds no usable record.
    #[doc(hidden)]
    fn decode_map<'de, A: MapAccess<'de>>(map: A) -> Result<Result<Self, Unread>, A::Error>;

    /// The wire names of the fields whose values could not be read.
    #[doc(hidden)]
    fn fallback_fields(&self) -> &[&'static str];
}

/// An element of a page that is not a record: its JSON text and why.
#[derive(Debug)]
pub struct Unread {
    pub(crate) raw: String,
    pub(crate) reason: String,
}

/// A field value as it came, before it is read into its type.
pub(crate) enum Wire<'de> {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(Cow<'de, str>),
    /// An array or an object, as JSON text.
    Json(String),
}

impl Wire<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Wire::Null => out.extend_from_slice(b"null"),
            Wire::Bool(v) => write_json(out, v),
            Wire::I64(v) => write_json(out, v),
            Wire::U64(v) => write_json(out, v),
            Wire::F64(v) => write_json(out, v),
            Wire::Str(v) => write_json(out, v.as_ref()),
            Wire::Json(v) => out.extend_from_slice(v.as_bytes()),
        }
    }

    /// The value as JSON text.
    pub(crate) fn into_json(self) -> String {
        match self {
            Wire::Json(json) => json,
            other => {
                let mut out = Vec::new();
                other.write(&mut out);
                into_string(out)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Wire<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(WireVisitor)
    }
}

/// Reads any value into a [`Wire`]; also the non-object half of a page element's visitor.
pub(crate) struct WireVisitor;

impl<'de> Visitor<'de> for WireVisitor {
    type Value = Wire<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Wire<'de>, E> {
        Ok(Wire::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Wire<'de>, E> {
        Ok(Wire::I64(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Wire<'de>, E> {
        Ok(Wire::U64(v))
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Wire<'de>, E> {
        Ok(Wire::Json(v.to_string()))
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Wire<'de>, E> {
        Ok(Wire::Json(v.to_string()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Wire<'de>, E> {
        Ok(Wire::F64(v))
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Wire<'de>, E> {
        Ok(Wire::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Wire<'de>, E> {
        Ok(Wire::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Wire<'de>, E> {
        Ok(Wire::Str(Cow::Owned(v)))
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<Wire<'de>, E> {
        let mut out = Vec::new();
        write_json(&mut out, v);
        Ok(Wire::Json(into_string(out)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Wire<'de>, E> {
        Ok(Wire::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Wire<'de>, E> {
        Ok(Wire::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Wire<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Wire<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Wire<'de>, A::Error> {
        let mut out = Vec::new();
        Transcode(&mut out).visit_seq(seq)?;
        Ok(Wire::Json(into_string(out)))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Wire<'de>, A::Error> {
        let mut out = Vec::new();
        Transcode(&mut out).visit_map(map)?;
        Ok(Wire::Json(into_string(out)))
    }
}

/// What a record keeps besides its named fields: the other fields, and the names of the
/// fields that fell back.
#[derive(Default)]
pub(crate) struct Fields {
    extra: ExtraWriter,
    fallbacks: Vec<&'static str>,
}

impl Fields {
    /// Keeps a field the record does not name.
    pub(crate) fn other<'de, A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        self.extra.field(name, map)
    }

    fn fall_back(&mut self, name: &'static str, value: &Wire<'_>) {
        let out = self.extra.key();
        write_json(out, name);
        out.push(b':');
        value.write(out);
        self.fallbacks.push(name);
    }

    /// A string field: `null` is absent, a value of another type falls back.
    pub(crate) fn text(&mut self, name: &'static str, value: Option<Wire<'_>>) -> Option<String> {
        match value? {
            Wire::Null => None,
            Wire::Str(text) => Some(text.into_owned()),
            other => {
                self.fall_back(name, &other);
                None
            }
        }
    }

    /// A timestamp field (see [`crate::timestamp`]): `null` is absent, a value that is not a
    /// timestamp falls back.
    pub(crate) fn timestamp(&mut self, name: &'static str, value: Option<Wire<'_>>) -> Option<DateTime<Utc>> {
        let value = value?;
        let parsed = match &value {
            Wire::Null => return None,
            Wire::Str(text) => parse_timestamp(text),
            Wire::I64(n) => from_epoch_int(i128::from(*n)),
            Wire::U64(n) => from_epoch_int(i128::from(*n)),
            Wire::F64(n) => from_epoch(*n),
            Wire::Bool(_) | Wire::Json(_) => None,
        };
        if parsed.is_none() {
            self.fall_back(name, &value);
        }
        parsed
    }

    /// The object, whole, when a required field is missing or unreadable.
    pub(crate) fn unread(self, named: &[(&str, Option<&Wire<'_>>)], missing: &str) -> Unread {
        let mut out = Vec::with_capacity(128);
        out.push(b'{');
        for (name, value) in named {
            if let Some(value) = value {
                if out.len() > 1 {
                    out.push(b',');
                }
                write_json(&mut out, *name);
                out.push(b':');
                value.write(&mut out);
            }
        }
        let extra = self.extra.finish_text();
        if let Some(fields) = extra.strip_prefix('{').and_then(|e| e.strip_suffix('}')) {
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(fields.as_bytes());
        }
        out.push(b'}');
        Unread { raw: into_string(out), reason: format!("missing or unreadable field `{missing}`") }
    }

    pub(crate) fn finish(self) -> (Extra, Vec<&'static str>) {
        (self.extra.finish(), self.fallbacks)
    }
}

/// Deserializes a record from an object; an object without a usable required field is an
/// error that names the field.
pub(crate) struct RecordVisitor<T>(pub(crate) &'static str, pub(crate) PhantomData<fn() -> T>);

impl<'de, T: Record> Visitor<'de> for RecordVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::decode_map(map)?.map_err(|unread| de::Error::custom(unread.reason))
    }
}

/// Implements [`Record`] and `Deserialize` for a record with required string fields,
/// optional fields of a kind (`text` or `timestamp`, converted with `Into`), `extra` and
/// `fallbacks`.
macro_rules! record {
    (
        $record:ident, $expecting:literal,
        required { $($req:ident = $req_name:literal),* $(,)? },
        optional { $($opt:ident: $kind:ident = $opt_name:literal),* $(,)? }
    ) => {
        impl $crate::model::record::Record for $record {
            fn decode_map<'de, A: serde::de::MapAccess<'de>>(
                mut map: A,
            ) -> Result<Result<Self, $crate::model::record::Unread>, A::Error> {
                use $crate::model::record::{Fields, Key, Wire};
                $(let mut $req: Option<Wire<'de>> = None;)*
                $(let mut $opt: Option<Wire<'de>> = None;)*
                let mut fields = Fields::default();
                while let Some(key) = map.next_key::<Key<'de>>()? {
                    match key.as_str() {
                        $($req_name => $req = Some(map.next_value()?),)*
                        $($opt_name => $opt = Some(map.next_value()?),)*
                        other => fields.other(other, &mut map)?,
                    }
                }
                let required: &[(&str, bool)] = &[$(($req_name, matches!($req, Some(Wire::Str(_))))),*];
                if let Some((missing, _)) = required.iter().find(|(_, usable)| !usable) {
                    let named: &[(&str, Option<&Wire<'de>>)] =
                        &[$(($req_name, $req.as_ref()),)* $(($opt_name, $opt.as_ref()),)*];
                    return Ok(Err(fields.unread(named, missing)));
                }
                $(let $req = match $req {
                    Some(Wire::Str(text)) => text.into_owned(),
                    _ => String::new(),
                };)*
                $(let $opt = fields.$kind($opt_name, $opt).map(Into::into);)*
                let (extra, fallbacks) = fields.finish();
                Ok(Ok($record { $($req,)* $($opt,)* extra, fallbacks }))
            }

            fn fallback_fields(&self) -> &[&'static str] {
                &self.fallbacks
            }
        }

        impl<'de> serde::Deserialize<'de> for $record {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                deserializer.deserialize_map($crate::model::record::RecordVisitor::<$record>(
                    $expecting,
                    std::marker::PhantomData,
                ))
            }
        }
    };
}

pub(crate) use record;

#[cfg(test)]
mod tests {
    use crate::{Company, Contact};
    use proptest::prelude::*;

    const COMPANY: &str = r#"{"id":"cmp_1","name":"Acme","status":"active",
        "createdAt":"2024-01-02T03:04:05Z","updatedAt":"2024-01-02T03:04:05+02:00",
        "industry":"retail","nested":{"a":[1,2]},"esc\u0061ped":true}"#;

    #[test]
    fn named_fields_are_typed_and_the_rest_is_kept() {
        let company: Company = serde_json::from_str(COMPANY).expect("valid company");
        assert_eq!(company.id, "cmp_1");
        assert_eq!(company.updated_at.map(|d| d.to_rfc3339()).as_deref(), Some("2024-01-02T01:04:05+00:00"));
        assert_eq!(company.extra.len(), 3);
        assert_eq!(company.extra["nested"]["a"][1], 2);
        assert_eq!(company.extra["escaped"], true);
        assert!(company.fallbacks().is_empty());
        let again: Company =
            serde_json::from_value(serde_json::to_value(&company).expect("serializes")).expect("round trip");
        assert_eq!(again, company);
    }

    #[test]
    fn unreadable_values_fall_back_and_are_kept_raw() {
        let odd = COMPANY
            .replace(r#""status":"active""#, r#""status":42"#)
            .replace(r#""createdAt":"2024-01-02T03:04:05Z""#, r#""createdAt":"yesterday""#)
            .replace(r#""updatedAt":"2024-01-02T03:04:05+02:00""#, r#""updatedAt":null"#);
        let company: Company = serde_json::from_str(&odd).expect("still a company");
        assert_eq!((company.status.as_ref(), company.created_at, company.updated_at), (None, None, None));
        assert_eq!(company.fallbacks(), ["status", "createdAt"]);
        assert_eq!(company.extra["status"], 42);
        assert_eq!(company.extra["createdAt"], "yesterday");
        assert!(!company.extra.contains_key("updatedAt"), "null is absent, not a fallback");
        let json = serde_json::to_value(&company).expect("serializes");
        assert_eq!(json["createdAt"], "yesterday", "the raw value goes back out under its name");
    }

    #[test]
    fn common_timestamp_forms_are_read() {
        let epoch = COMPANY
            .replace(r#""2024-01-02T03:04:05Z""#, "1704164645")
            .replace(r#""2024-01-02T03:04:05+02:00""#, r#""2024-01-02 01:04:05""#);
        let company: Company = serde_json::from_str(&epoch).expect("a company");
        assert_eq!(company.created_at, company.updated_at.map(|d| d + chrono::TimeDelta::hours(2)));
        assert!(company.fallbacks().is_empty());
    }

    #[test]
    fn missing_required_fields_are_errors_and_duplicates_keep_the_last() {
        let missing = serde_json::from_str::<Company>(r#"{"id":"cmp_1"}"#).expect_err("fields missing");
        assert!(missing.to_string().contains("field `name`"), "{missing}");
        let mistyped = serde_json::from_str::<Company>(r#"{"id":7,"name":"x"}"#).expect_err("id is a number");
        assert!(mistyped.to_string().contains("field `id`"), "{mistyped}");
        let twice = COMPANY.replace(r#""name":"Acme""#, r#""name":"Acme","name":"Other""#);
        assert_eq!(serde_json::from_str::<Company>(&twice).expect("a company").name, "Other");
        assert!(serde_json::from_str::<Company>("[1, 2]").is_err());
        let minimal: Company =
            serde_json::from_str(r#"{"id":"c","name":"n"}"#).expect("the rest is optional");
        assert_eq!((minimal.status, minimal.created_at, minimal.extra.len()), (None, None, 0));
    }

    #[test]
    fn every_contact_field_is_optional() {
        let absent: Contact = serde_json::from_str(r#"{}"#).expect("valid contact");
        assert_eq!((absent.id, absent.company_id, absent.extra.len()), (None, None, 0));
        let null: Contact =
            serde_json::from_str(r#"{"companyId":"cmp_1","id":null}"#).expect("valid contact");
        assert_eq!((null.id, null.company_id.as_deref()), (None, Some("cmp_1")));
        let odd: Contact = serde_json::from_str(r#"{"companyId":12,"id":"cnt_1"}"#).expect("valid contact");
        assert_eq!((odd.company_id.as_deref(), odd.fallbacks()), (None, &["companyId"][..]));
    }

    fn json_value() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            any::<u64>().prop_map(serde_json::Value::from),
            any::<f64>().prop_map(serde_json::Value::from),
            any::<String>().prop_map(serde_json::Value::from),
            "[0-9: .TZ+-]{0,30}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 24, 6, |inner| {
            let key = prop_oneof![
                Just("id".to_owned()),
                Just("name".to_owned()),
                Just("status".to_owned()),
                Just("createdAt".to_owned()),
                Just("updatedAt".to_owned()),
                Just("companyId".to_owned()),
                any::<String>(),
            ];
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
                proptest::collection::vec((key, inner), 0..8)
                    .prop_map(|fields| serde_json::Value::Object(fields.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn no_input_panics_the_record_decoders(value in json_value(), bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let text = value.to_string();
            if let Ok(company) = serde_json::from_str::<Company>(&text) {
                let _ = (company.extra.len(), serde_json::to_string(&company));
            }
            if let Ok(contact) = serde_json::from_str::<Contact>(&text) {
                let _ = (contact.extra.len(), serde_json::to_string(&contact));
            }
            let _ = serde_json::from_value::<Company>(value);
            let _ = serde_json::from_slice::<Company>(&bytes);
            let _ = serde_json::from_slice::<Contact>(&bytes);
        }
    }
}
