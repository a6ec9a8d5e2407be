//! The records of the API (Part 2): companies and contacts, read leniently, and their sorts.
//!
//! Records go through serde's derive: the named fields into their types, every other field
//! into `extra` (`#[serde(flatten)]`). Where the API leaves a type or format open, a field is
//! [`Lenient`]: a value that cannot be read is kept raw in `extra` under the field's own name,
//! and the name is listed in the record's fallbacks, so nothing the server sends is lost and
//! no listing fails for it.

mod company;
mod contact;
mod sort;

use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, de::value::MapAccessDeserializer, de::value::SeqAccessDeserializer};
use serde_json::{Map, Value};

pub use company::{Company, CompanySort, CompanyStatus};
pub use contact::{Contact, ContactSort};
pub use sort::Sort;

/// A field whose type or format the API does not fix: its value, or the JSON it came as.
#[derive(Debug, Default)]
pub(crate) enum Lenient<T> {
    /// Not sent, or `null`.
    #[default]
    Absent,
    Read(T),
    Raw(Value),
}

/// A type a [`Lenient`] field reads from a JSON string or number.
pub(crate) trait Loose: Sized {
    fn from_text(text: &str) -> Option<Self>;
    fn from_number(_number: f64, _integer: Option<i128>) -> Option<Self> {
        None
    }
}

impl Loose for String {
    fn from_text(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
}

/// RFC 3339 and the common variants, or epoch seconds or milliseconds (see
/// [`crate::timestamp`]).
impl Loose for DateTime<Utc> {
    fn from_text(text: &str) -> Option<Self> {
        crate::timestamp::parse_timestamp(text)
    }

    fn from_number(number: f64, integer: Option<i128>) -> Option<Self> {
        match integer {
            Some(integer) => crate::timestamp::from_epoch_int(integer),
            None => crate::timestamp::from_epoch(number),
        }
    }
}

impl<'de, T: Loose> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(LenientVisitor(PhantomData))
    }
}

struct LenientVisitor<T>(PhantomData<fn() -> T>);

impl<T: Loose> LenientVisitor<T> {
    fn read<E>(value: Option<T>, raw: impl FnOnce() -> Value) -> Result<Lenient<T>, E> {
        Ok(value.map_or_else(|| Lenient::Raw(raw()), Lenient::Read))
    }
}

impl<'de, T: Loose> Visitor<'de> for LenientVisitor<T> {
    type Value = Lenient<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Lenient<T>, E> {
        Self::read(T::from_text(v), || Value::from(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Lenient<T>, E> {
        Self::read(T::from_number(v as f64, Some(i128::from(v))), || Value::from(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lenient<T>, E> {
        Self::read(T::from_number(v as f64, Some(i128::from(v))), || Value::from(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Lenient<T>, E> {
        Self::read(T::from_number(v, None), || Value::from(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Lenient<T>, E> {
        Ok(Lenient::Raw(Value::Bool(v)))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Lenient<T>, E> {
        Ok(Lenient::Absent)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Lenient<T>, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(Lenient::Raw)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Lenient<T>, A::Error> {
        Value::deserialize(SeqAccessDeserializer::new(seq)).map(Lenient::Raw)
    }
}

/// The fields a record does not name, and the names of those that fell back.
pub(crate) struct Fallbacks {
    pub(crate) extra: Map<String, Value>,
    pub(crate) names: Vec<&'static str>,
}

impl Fallbacks {
    pub(crate) fn new(extra: Map<String, Value>) -> Self {
        Fallbacks { extra, names: Vec::new() }
    }

    /// The value of field `name`; a raw one goes to `extra` under that name.
    pub(crate) fn take<T>(&mut self, name: &'static str, field: Lenient<T>) -> Option<T> {
        match field {
            Lenient::Absent => None,
            Lenient::Read(value) => Some(value),
            Lenient::Raw(raw) => {
                self.extra.insert(name.to_owned(), raw);
                self.names.push(name);
                None
            }
        }
    }
}
