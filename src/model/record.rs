//! How a record is read: one visitor, shared by every record type, that puts each field the
//! record names into its place and every other field into `extra`, in one pass over the object.
//!
//! A record type gives a table of its fields ([`Record::FIELDS`]): its wire name and how its
//! value is read. A required field that is absent or not a string makes the element not a
//! record. A lenient field ([`Field::Text`], [`Field::Time`]) never does: `null` leaves it
//! unset, and a value that cannot be read is kept raw in `extra` under the field's own name,
//! the name listed in the record's fallbacks.

use std::fmt;
use std::marker::PhantomData;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use serde_json::{Map, Value};

use crate::timestamp::{from_epoch, from_epoch_int, parse_timestamp};

/// A field a record names, and how its value is read into the record.
pub(crate) enum Field<R> {
    /// A string the record cannot do without.
    Required(fn(&mut R, String)),
    /// A string, read leniently.
    Text(fn(&mut R, String)),
    /// A timestamp, read leniently: RFC 3339 and its variants, or epoch seconds or
    /// milliseconds (see [`crate::timestamp`]).
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
                Ok(index) => index,
                Err(other) => {
                    let value = map.next_value()?;
                    record.rest().0.insert(other, value);
                    continue;
                }
            };
            let (name, field) = &R::FIELDS[index];
            if seen & 1 << index != 0 {
                return Err(de::Error::duplicate_field(name));
            }
            seen |= 1 << index;
            if let Some(raw) = map.next_value_seed(Slot { record: &mut record, field })? {
                record.rest().0.insert((*name).to_owned(), raw);
                fell_back |= 1 << index;
            }
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

/// A key of a record's object: the index of a field the record names, or another name, kept
/// for `extra`.
struct KeySeed<R>(PhantomData<fn() -> R>);

impl<'de, R: Record> DeserializeSeed<'de> for KeySeed<R> {
    type Value = Result<usize, String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<R: Record> Visitor<'_> for KeySeed<R> {
    type Value = Result<usize, String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        Ok(R::FIELDS.iter().position(|(known, _)| *known == name).ok_or_else(|| name.to_owned()))
    }
}

/// The value of one field, read into its place in the record; the value itself when the field
/// cannot take it (a required field's error instead).
struct Slot<'a, R> {
    record: &'a mut R,
    field: &'a Field<R>,
}

impl<R> Slot<'_, R> {
    /// `raw`, a value the field cannot take: kept, or the error of a required field.
    fn unreadable<E: de::Error>(self, raw: Value, unexpected: Unexpected<'_>) -> Result<Option<Value>, E> {
        match self.field {
            Field::Required(_) => Err(E::invalid_type(unexpected, &self)),
            _ => Ok(Some(raw)),
        }
    }

    /// A number: an epoch for a timestamp, else unreadable.
    fn number<E: de::Error>(
        self,
        at: Option<DateTime<Utc>>,
        raw: Value,
        unexpected: Unexpected<'_>,
    ) -> Result<Option<Value>, E> {
        match (self.field, at) {
            (Field::Time(set), Some(at)) => {
                set(self.record, at);
                Ok(None)
            }
            _ => self.unreadable(raw, unexpected),
        }
    }
}

impl<'de, R> DeserializeSeed<'de> for Slot<'_, R> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Option<Value>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, R> Visitor<'de> for Slot<'_, R> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if matches!(self.field, Field::Required(_)) { "a string" } else { "any JSON value" })
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Option<Value>, E> {
        match self.field {
            Field::Required(set) | Field::Text(set) => set(self.record, v.to_owned()),
            Field::Time(set) => match parse_timestamp(v) {
                Some(at) => set(self.record, at),
                None => return Ok(Some(Value::from(v))),
            },
        }
        Ok(None)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<Value>, E> {
        self.number(from_epoch_int(i128::from(v)), Value::from(v), Unexpected::Signed(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<Value>, E> {
        self.number(from_epoch_int(i128::from(v)), Value::from(v), Unexpected::Unsigned(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<Value>, E> {
        self.number(from_epoch(v), Value::from(v), Unexpected::Float(v))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Option<Value>, E> {
        self.unreadable(Value::Bool(v), Unexpected::Bool(v))
    }

    /// `null`: a lenient field is left unset.
    fn visit_unit<E: de::Error>(self) -> Result<Option<Value>, E> {
        match self.field {
            Field::Required(_) => Err(E::invalid_type(Unexpected::Unit, &self)),
            _ => Ok(None),
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Option<Value>, A::Error> {
        let raw = Value::deserialize(MapAccessDeserializer::new(map))?;
        self.unreadable(raw, Unexpected::Map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Option<Value>, A::Error> {
        let raw = Value::deserialize(SeqAccessDeserializer::new(seq))?;
        self.unreadable(raw, Unexpected::Seq)
    }
}
