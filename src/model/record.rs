//! How a record is read: one visitor, shared by every record type, that puts each field the
//! record names into its place and every other field into `extra`, in one pass over the object.
//!
//! A record type gives a table of its fields ([`Record::FIELDS`]): its wire name and how its
//! value is read. A required field that is absent or not a string makes the element not a
//! record. A lenient field ([`Field::Text`], [`Field::Time`]) never does: a value that cannot
//! be read is kept raw in `extra` under the field's own name, and the name is listed in the
//! record's fallbacks.

use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, de::value::MapAccessDeserializer, de::value::SeqAccessDeserializer};
use serde_json::{Map, Value};

/// A field a record names, and how its value is read into the record.
pub(crate) enum Field<R> {
    /// A string the record cannot do without.
    Required(fn(&mut R, String)),
    /// A string, read leniently.
    Text(fn(&mut R, String)),
    /// A timestamp, read leniently (see [`crate::timestamp`]).
    Time(fn(&mut R, DateTime<Utc>)),
}

/// A record type, as [`read`] reads it.
pub(crate) trait Record: Sized + 'static {
    /// What an element that is not such a record is said not to be: `a company object`.
    const EXPECTING: &'static str;
    /// The fields it names, by wire name (at most 64).
    const FIELDS: &'static [(&'static str, Field<Self>)];
    /// The record before any field is read.
    fn empty() -> Self;
    /// Its `extra`, and the names of its fields that fell back.
    fn rest(&mut self) -> (&mut Map<String, Value>, &mut Vec<&'static str>);
}

/// Reads a record of type `R` from a JSON object.
pub(crate) fn read<'de, R: Record, D: Deserializer<'de>>(deserializer: D) -> Result<R, D::Error> {
    deserializer.deserialize_map(RecordVisitor(PhantomData))
}

struct RecordVisitor<R>(PhantomData<fn() -> R>);

impl<'de, R: Record> Visitor<'de> for RecordVisitor<R> {
    type Value = R;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(R::EXPECTING)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<R, A::Error> {
        const { assert!(R::FIELDS.len() <= 64) };
        let mut record = R::empty();
        // Bit `i`: the field `R::FIELDS[i]` was sent; was kept raw.
        let (mut seen, mut fell_back) = (0_u64, 0_u64);
        while let Some(key) = map.next_key_seed(KeySeed::<R>(PhantomData))? {
            let index = match key {
                Key::Field(index) => index,
                Key::Other(name) => {
                    let value = map.next_value()?;
                    record.rest().0.insert(name, value);
                    continue;
                }
            };
            let (name, field) = &R::FIELDS[index];
            if seen & 1 << index != 0 {
                return Err(de::Error::duplicate_field(name));
            }
            seen |= 1 << index;
            let raw = match field {
                Field::Required(set) => {
                    set(&mut record, map.next_value()?);
                    false
                }
                Field::Text(set) => read_lenient(&mut map, &mut record, name, *set)?,
                Field::Time(set) => read_lenient(&mut map, &mut record, name, *set)?,
            };
            fell_back |= u64::from(raw) << index;
        }
        // Fallbacks listed in the order of the fields.
        for (index, (name, field)) in R::FIELDS.iter().enumerate() {
            if matches!(field, Field::Required(_)) && seen & 1 << index == 0 {
                return Err(de::Error::missing_field(name));
            }
            if fell_back & 1 << index != 0 {
                record.rest().1.push(name);
            }
        }
        Ok(record)
    }
}

/// The value of lenient field `name`: set when read; kept raw in `extra` when not (true).
fn read_lenient<'de, R: Record, T: Loose, A: MapAccess<'de>>(
    map: &mut A,
    record: &mut R,
    name: &str,
    set: fn(&mut R, T),
) -> Result<bool, A::Error> {
    match map.next_value()? {
        Lenient::Absent => Ok(false),
        Lenient::Read(value) => {
            set(record, value);
            Ok(false)
        }
        Lenient::Raw(raw) => {
            record.rest().0.insert(name.to_owned(), raw);
            Ok(true)
        }
    }
}

/// A key of a record's object: the index of a field the record names, or another name, kept
/// for `extra`.
enum Key {
    Field(usize),
    Other(String),
}

struct KeySeed<R>(PhantomData<fn() -> R>);

impl<'de, R: Record> DeserializeSeed<'de> for KeySeed<R> {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<R: Record> Visitor<'_> for KeySeed<R> {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
        Ok(match R::FIELDS.iter().position(|(known, _)| *known == name) {
            Some(index) => Key::Field(index),
            None => Key::Other(name.to_owned()),
        })
    }
}

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
