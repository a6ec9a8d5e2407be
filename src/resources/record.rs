//! Decoding of records that keep unknown fields: the named fields are read directly and every
//! other field goes to `extra`, in one pass and without buffering the object (which
//! `#[serde(flatten)]` would do).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

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

    pub(crate) fn into_owned(self) -> String {
        match self {
            Key::Borrowed(s) => s.to_owned(),
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

/// Implements `Deserialize` for a record with required fields, optional fields and `extra`.
macro_rules! deserialize_record {
    (
        $record:ident, $expecting:literal,
        required { $($req:ident: $req_ty:ty = $req_name:literal),* $(,)? },
        optional { $($opt:ident: $opt_ty:ty = $opt_name:literal),* $(,)? }
    ) => {
        impl<'de> serde::Deserialize<'de> for $record {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct RecordVisitor;
                impl<'de> serde::de::Visitor<'de> for RecordVisitor {
                    type Value = $record;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<$record, A::Error> {
                        use serde::de::Error as _;
                        $(let mut $req: Option<$req_ty> = None;)*
                        $(let mut $opt: Option<$opt_ty> = None;)*
                        let mut extra = serde_json::Map::new();
                        while let Some(key) = map.next_key::<$crate::resources::record::Key<'de>>()? {
                            match key.as_str() {
                                $($req_name => {
                                    if $req.is_some() {
                                        return Err(A::Error::duplicate_field($req_name));
                                    }
                                    $req = Some(map.next_value()?);
                                })*
                                $($opt_name => $opt = map.next_value::<Option<$opt_ty>>()?,)*
                                _ => {
                                    let value = map.next_value::<serde_json::Value>()?;
                                    extra.insert(key.into_owned(), value);
                                }
                            }
                        }
                        Ok($record {
                            $($req: $req.ok_or_else(|| A::Error::missing_field($req_name))?,)*
                            $($opt,)*
                            extra,
                        })
                    }
                }
                deserializer.deserialize_map(RecordVisitor)
            }
        }
    };
}

pub(crate) use deserialize_record;

#[cfg(test)]
mod tests {
    use crate::{Company, Contact};

    const COMPANY: &str = r#"{"id":"cmp_1","name":"Acme","status":"active",
        "createdAt":"2024-01-02T03:04:05Z","updatedAt":"2024-01-02T03:04:05+02:00",
        "industry":"retail","nested":{"a":[1,2]},"esc\u0061ped":true}"#;

    #[test]
    fn named_fields_are_typed_and_the_rest_is_kept() {
        let company: Company = serde_json::from_str(COMPANY).expect("valid company");
        assert_eq!(company.id, "cmp_1");
        assert_eq!(company.updated_at.to_rfc3339(), "2024-01-02T01:04:05+00:00");
        assert_eq!(company.extra.len(), 3);
        assert_eq!(company.extra["nested"]["a"][1], 2);
        assert_eq!(company.extra["escaped"], true);
        let again: Company =
            serde_json::from_value(serde_json::to_value(&company).expect("serializes")).expect("round trip");
        assert_eq!(again, company);
    }

    #[test]
    fn missing_duplicate_and_mistyped_fields_are_errors() {
        let missing = serde_json::from_str::<Company>(r#"{"id":"cmp_1"}"#).expect_err("fields missing");
        assert!(missing.to_string().contains("missing field `name`"), "{missing}");
        let twice = COMPANY.replace(r#""name":"Acme""#, r#""name":"Acme","name":"Other""#);
        let duplicate = serde_json::from_str::<Company>(&twice).expect_err("duplicate");
        assert!(duplicate.to_string().contains("duplicate field `name`"), "{duplicate}");
        let bad_date = COMPANY.replace("2024-01-02T03:04:05Z", "yesterday");
        assert!(serde_json::from_str::<Company>(&bad_date).is_err());
        assert!(serde_json::from_str::<Company>("[1, 2]").is_err());
    }

    #[test]
    fn optional_fields_may_be_absent_or_null() {
        let absent: Contact = serde_json::from_str(r#"{"companyId":"cmp_1"}"#).expect("valid contact");
        assert_eq!((absent.id, absent.extra.len()), (None, 0));
        let null: Contact =
            serde_json::from_str(r#"{"companyId":"cmp_1","id":null}"#).expect("valid contact");
        assert_eq!(null.id, None);
        assert!(serde_json::from_str::<Contact>(r#"{"id":"cnt_1"}"#).is_err());
    }
}
