//! [`Extra`]: the fields of a record that the API does not name, kept as JSON text while a
//! page is decoded and parsed into a map the first time they are looked at.

use std::fmt;
use std::ops::Deref;
use std::sync::OnceLock;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// Every field of a record that the model does not name, plus the raw value of any named
/// field that could not be read (see [`Company::fallbacks`](crate::Company::fallbacks)).
///
/// It dereferences to a [`serde_json::Map`], so it reads like one; [`into_map`](Extra::into_map)
/// gives the map to own and change, and a map converts back with `Extra::from(map)`. Decoding
/// a page only copies these fields' JSON text; the map is built the first time it is used,
/// which keeps listings fast when the extra fields are not looked at.
///
/// ```
/// use business_records::Company;
/// let company: Company = serde_json::from_str(
///     r#"{"id": "cmp_1", "name": "Acme", "industry": "retail", "employees": 12}"#,
/// )?;
/// assert_eq!(company.extra["industry"], "retail");
/// assert_eq!(company.extra.get("employees").and_then(|v| v.as_u64()), Some(12));
/// assert_eq!(company.extra.len(), 2);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct Extra {
    /// A JSON object, or empty for no fields. Ignored once `map` is set.
    text: String,
    map: OnceLock<Map<String, Value>>,
}

impl Extra {
    /// Fields kept from `text`, a JSON object written by [`ExtraWriter`].
    fn from_text(text: String) -> Self {
        Extra { text, map: OnceLock::new() }
    }

    /// The fields as a map.
    pub fn as_map(&self) -> &Map<String, Value> {
        self.map.get_or_init(|| {
            if self.text.is_empty() {
                return Map::new();
            }
            // The text was written by `ExtraWriter` from values that had been read, so it is
            // valid JSON; an empty map is the answer should that ever not hold.
            serde_json::from_str(&self.text).unwrap_or_default()
        })
    }

    /// The fields as an owned map.
    pub fn into_map(mut self) -> Map<String, Value> {
        self.as_map();
        self.map.take().unwrap_or_default()
    }
}

impl Deref for Extra {
    type Target = Map<String, Value>;

    fn deref(&self) -> &Map<String, Value> {
        self.as_map()
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(map: Map<String, Value>) -> Self {
        Extra { text: String::new(), map: OnceLock::from(map) }
    }
}

impl From<Extra> for Map<String, Value> {
    fn from(extra: Extra) -> Self {
        extra.into_map()
    }
}

impl PartialEq for Extra {
    fn eq(&self, other: &Self) -> bool {
        self.as_map() == other.as_map()
    }
}

impl fmt::Debug for Extra {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_map(), f)
    }
}

impl Serialize for Extra {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_map().serialize(serializer)
    }
}

/// Writes the fields of an [`Extra`] as one JSON object while a record is decoded.
#[derive(Default)]
pub(crate) struct ExtraWriter {
    json: Vec<u8>,
}

impl ExtraWriter {
    /// Starts a field: the separator is written, the name and value are written next.
    pub(crate) fn key(&mut self) -> &mut Vec<u8> {
        if self.json.is_empty() {
            self.json.reserve(128);
            self.json.push(b'{');
        } else {
            self.json.push(b',');
        }
        &mut self.json
    }

    /// Adds field `name` with the value the map holds next.
    pub(crate) fn field<'de, A: MapAccess<'de>>(&mut self, name: &str, map: &mut A) -> Result<(), A::Error> {
        let json = self.key();
        write_json(json, name);
        json.push(b':');
        map.next_value_seed(Transcode(json))
    }

    /// The fields written, as one JSON object; empty when there are none.
    pub(crate) fn finish_text(mut self) -> String {
        if !self.json.is_empty() {
            self.json.push(b'}');
        }
        into_string(self.json)
    }

    pub(crate) fn finish(self) -> Extra {
        Extra::from_text(self.finish_text())
    }
}

/// The JSON text of `value`, appended to `out`.
pub(crate) fn write_json<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) {
    // Writing a string or a number to memory cannot fail; a value that cannot be written
    // (a non-finite float) is written as `null`.
    if serde_json::to_writer(&mut *out, value).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// Bytes written by `serde_json`, which are UTF-8.
pub(crate) fn into_string(json: Vec<u8>) -> String {
    String::from_utf8(json).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Copies one value of any shape to `self.0` as JSON text, in one pass, building no
/// intermediate value.
pub(crate) struct Transcode<'a>(pub(crate) &'a mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Transcode<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Transcode<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        write_json(self.0, &v);
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        write_json(self.0, &v);
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        write_json(self.0, &v);
        Ok(())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<(), E> {
        self.0.extend_from_slice(v.to_string().as_bytes());
        Ok(())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<(), E> {
        self.0.extend_from_slice(v.to_string().as_bytes());
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        write_json(self.0, &v);
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        write_json(self.0, v);
        Ok(())
    }

    fn visit_bytes<E: de::Error>(self, v: &[u8]) -> Result<(), E> {
        write_json(self.0, v);
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'[');
        let mut first = true;
        loop {
            let at = out.len();
            if !first {
                out.push(b',');
            }
            if seq.next_element_seed(Transcode(&mut *out))?.is_none() {
                out.truncate(at);
                break;
            }
            first = false;
        }
        out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'{');
        let mut first = true;
        while let Some(key) = map.next_key::<super::record::Key<'de>>()? {
            if !first {
                out.push(b',');
            }
            first = false;
            write_json(out, key.as_str());
            out.push(b':');
            map.next_value_seed(Transcode(&mut *out))?;
        }
        out.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn transcode(json: &str) -> String {
        let mut out = Vec::new();
        let mut de = serde_json::Deserializer::from_str(json);
        Transcode(&mut out).deserialize(&mut de).expect("valid json");
        into_string(out)
    }

    #[test]
    fn values_are_copied_as_json() {
        for json in [
            r#"{"a":[1,-2,3.5,true,null,"x\"y\u0001"],"b":{},"c":[],"d":{"e":{"f":18446744073709551615}}}"#,
            r#""text""#,
            "[[],[[]],{}]",
        ] {
            let copied = transcode(json);
            let expected: Value = serde_json::from_str(json).expect("valid json");
            assert_eq!(serde_json::from_str::<Value>(&copied).expect("valid copy"), expected, "{copied}");
        }
    }

    #[test]
    fn extra_is_parsed_when_used_and_compares_by_content() {
        let mut writer = ExtraWriter::default();
        write_json(writer.key(), "b");
        writer.key();
        let broken = writer.finish();
        assert!(serde_json::from_str::<Value>(&broken.text).is_err());
        assert!(broken.is_empty(), "text that is not an object reads as no fields");
        let map: Map<String, Value> = serde_json::from_str(r#"{"a":1}"#).expect("an object");
        let extra = Extra::from(map.clone());
        assert_eq!(extra.len(), 1);
        assert_eq!(extra, Extra::from_text(r#"{"a":1}"#.to_owned()));
        assert_eq!(extra.into_map(), map);
        assert!(Extra::default().is_empty());
    }
}
