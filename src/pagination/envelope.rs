//! The page envelope on the wire (API Part 2), decoded element by element: an element of
//! `data` that is not a record is kept aside as an [`Undecodable`](crate::Undecodable), and the rest of the page
//! still decodes.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{Cursor, Page};
use crate::error::Undecodable;
use crate::model::Resource;
use crate::model::record::{Unread, Wire, WireVisitor};

/// What a listing does with an element of a page that is not a record; see
/// [`List::on_undecodable`](crate::List::on_undecodable).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OnUndecodable {
    /// Leave it out of the items, report it, and go on (the default).
    #[default]
    Skip,
    /// End the listing with [`Error::Undecodable`](crate::Error::Undecodable).
    Fail,
}

/// The envelope as it arrives.
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Resource"))]
pub(crate) struct Envelope<T> {
    data: Data<T>,
    pagination: PaginationMeta,
}

impl<T> From<Envelope<T>> for Page<T> {
    fn from(Envelope { data, pagination }: Envelope<T>) -> Self {
        pagination.into_page(data)
    }
}

/// The `pagination` object.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PaginationMeta {
    pub(crate) has_more: bool,
    #[serde(default)]
    pub(crate) next_cursor: Option<Cursor>,
    /// An integer from 0 to 2^53; anything else is absent, never a failed page.
    #[serde(default, deserialize_with = "crate::bounds::count")]
    total_count: Option<u64>,
}

impl PaginationMeta {
    /// The page these fields describe, with `data` as its elements.
    pub(crate) fn into_page<T>(self, data: Data<T>) -> Page<T> {
        Page {
            data: data.records,
            undecodable: data.undecodable,
            has_more: self.has_more,
            next_cursor: self.next_cursor.filter(|c| !c.as_str().is_empty()),
            total_count: self.total_count,
            deprecation: None,
        }
    }
}

/// The `data` array: the records, and the elements that are not.
pub(crate) struct Data<T> {
    records: Vec<T>,
    undecodable: Vec<Undecodable>,
}

impl<'de, T: Resource> Deserialize<'de> for Data<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(DataVisitor(PhantomData))
    }
}

struct DataVisitor<T>(PhantomData<fn() -> T>);

impl<'de, T: Resource> Visitor<'de> for DataVisitor<T> {
    type Value = Data<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Data<T>, A::Error> {
        // A page holds at most 100 records; a larger hint is not trusted.
        let mut records = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(128));
        let mut undecodable = Vec::new();
        let mut position = 0;
        while let Some(element) = seq.next_element_seed(Element::<T>(PhantomData))? {
            match element {
                Ok(record) => records.push(record),
                Err(Unread { raw, reason }) => {
                    undecodable.push(Undecodable { page: 0, position, raw, reason })
                }
            }
            position += 1;
        }
        Ok(Data { records, undecodable })
    }
}

/// One element of `data`: an object is read as a record, anything else is kept as JSON.
struct Element<T>(PhantomData<fn() -> T>);

type ElementResult<T> = Result<T, Unread>;

impl<'de, T: Resource> DeserializeSeed<'de> for Element<T> {
    type Value = ElementResult<T>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ElementResult<T>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn not_an_object<T>(wire: Wire<'_>) -> ElementResult<T> {
    Err(Unread { raw: wire.into_json(), reason: "not an object".to_owned() })
}

impl<'de, T: Resource> Visitor<'de> for Element<T> {
    type Value = ElementResult<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a record")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ElementResult<T>, A::Error> {
        T::decode_map(map)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<ElementResult<T>, E> {
        WireVisitor.visit_bool(v).map(not_an_object)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<ElementResult<T>, E> {
        WireVisitor.visit_i64(v).map(not_an_object)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<ElementResult<T>, E> {
        WireVisitor.visit_u64(v).map(not_an_object)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<ElementResult<T>, E> {
        WireVisitor.visit_f64(v).map(not_an_object)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<ElementResult<T>, E> {
        WireVisitor.visit_str(v).map(not_an_object)
    }

    fn visit_unit<E: de::Error>(self) -> Result<ElementResult<T>, E> {
        WireVisitor.visit_unit().map(not_an_object)
    }

    fn visit_none<E: de::Error>(self) -> Result<ElementResult<T>, E> {
        WireVisitor.visit_none().map(not_an_object)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<ElementResult<T>, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<ElementResult<T>, A::Error> {
        WireVisitor.visit_seq(seq).map(not_an_object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Company;
    use proptest::prelude::*;

    #[test]
    fn elements_that_are_not_records_are_set_aside() {
        let body = r#"{"data": [
            {"id": "c1", "name": "One"}, 42, "c2", null, [1, {"a": "b"}], {"name": "no id"},
            {"id": "c3", "name": "Three", "createdAt": {"$date": 1}}
        ], "pagination": {"hasMore": false}}"#;
        let page: Page<Company> = serde_json::from_str(body).expect("a page");
        let ids: Vec<&str> = page.data.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c3"]);
        assert_eq!(page.data[1].fallbacks(), ["createdAt"]);
        let set_aside: Vec<(usize, &str, &str)> =
            page.undecodable.iter().map(|u| (u.position, u.raw.as_str(), u.reason.as_str())).collect();
        assert_eq!(
            set_aside,
            [
                (1, "42", "not an object"),
                (2, r#""c2""#, "not an object"),
                (3, "null", "not an object"),
                (4, r#"[1,{"a":"b"}]"#, "not an object"),
                (5, r#"{"name":"no id"}"#, "missing or unreadable field `id`"),
            ]
        );
    }

    #[test]
    fn a_broken_envelope_is_still_an_error() {
        for body in [
            r#"{"data": {}, "pagination": {"hasMore": false}}"#,
            r#"{"data": [], "pagination": {}}"#,
            r#"{"data": [{"id": "c1", "name": "One"}"#,
        ] {
            assert!(serde_json::from_str::<Page<Company>>(body).is_err(), "{body}");
        }
    }

    proptest! {
        /// Any JSON value as `totalCount`: the page is read, and the count is the value when
        /// it is an integer from 0 to 2^53.
        #[test]
        fn any_total_count_leaves_the_page_readable(
            count in prop_oneof![
                any::<u64>().prop_map(|n| n.to_string()),
                any::<i64>().prop_map(|n| n.to_string()),
                any::<f64>().prop_map(|n| serde_json::json!(n).to_string()),
                "[1-9][0-9]{19,29}",
                "\"[a-z0-9 ]{0,10}\"|\\{\\}|\\[1\\]|true|null",
            ],
        ) {
            let body = format!(r#"{{"data": [], "pagination": {{"hasMore": false, "totalCount": {count}}}}}"#);
            let page: Page<Company> = serde_json::from_str(&body).map_err(|e| TestCaseError::fail(format!("{count}: {e}")))?;
            let expected = count.parse::<u64>().ok().filter(|count| *count <= crate::bounds::MAX_COUNT);
            prop_assert_eq!(page.total_count, expected);
        }

        #[test]
        fn no_body_panics_the_page_decoder(bytes in proptest::collection::vec(any::<u8>(), 0..200), text in ".{0,120}") {
            let _ = serde_json::from_slice::<Page<Company>>(&bytes);
            let _ = serde_json::from_str::<Page<crate::Contact>>(&format!(r#"{{"data":[{text}],"pagination":{{"hasMore":true}}}}"#));
        }
    }
}
