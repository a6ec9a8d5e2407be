//! Contacts (API Part 2).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::record::{self, Field, Record};

/// A contact (API Part 2). The API names only `companyId` and fixes no contact field as
/// always present, so every field may be absent: `id` and `company_id` are `None` when absent,
/// `null` or not a string (a value that is not a string is kept in [`extra`](Contact::extra)
/// and listed by [`fallbacks`](Contact::fallbacks)), and whatever else the API sends is kept
/// in `extra`.
///
/// ```
/// use business_records::Contact;
/// let contact: Contact = serde_json::from_str(
///     r#"{"id": "cnt_1", "companyId": "cmp_1", "name": "Ada", "email": "ada@example.com"}"#,
/// )?;
/// assert_eq!(contact.company_id.as_deref(), Some("cmp_1"));
/// assert_eq!(contact.field_str("email"), Some("ada@example.com"));
///
/// let mut mine = Contact::new("cnt_2");
/// mine.company_id = Some("cmp_1".into());
/// assert_eq!(serde_json::to_value(&mine)?, serde_json::json!({"id": "cnt_2", "companyId": "cmp_1"}));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Contact {
    /// Identifier of the contact, when the API sends one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Identifier of the owning company, when the API sends one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub company_id: Option<String>,
    /// Every other field the API sent (`name`, `email`, `createdAt`, ... in the reference
    /// data), and the raw value of every field that fell back.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    #[serde(skip)]
    fallbacks: Vec<&'static str>,
}

impl<'de> Deserialize<'de> for Contact {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        record::read(deserializer)
    }
}

impl Record for Contact {
    const EXPECTING: &'static str = "a contact object";
    const FIELDS: &'static [(&'static str, Field<Self>)] = &[
        ("id", Field::Text(|contact, id| contact.id = Some(id))),
        ("companyId", Field::Text(|contact, id| contact.company_id = Some(id))),
    ];

    fn empty() -> Self {
        Contact::default()
    }

    fn rest(&mut self) -> (&mut Map<String, Value>, &mut Vec<&'static str>) {
        (&mut self.extra, &mut self.fallbacks)
    }
}

impl Contact {
    /// A contact with this id and nothing else.
    pub fn new(id: impl Into<String>) -> Self {
        Contact { id: Some(id.into()), ..Contact::default() }
    }

    /// The wire names of the fields whose values could not be read (`id`, `companyId`): each
    /// is `None` here and its raw value is in [`extra`](Contact::extra).
    pub fn fallbacks(&self) -> &[&'static str] {
        &self.fallbacks
    }

    /// A string field from [`extra`](Contact::extra), if present and a string.
    pub fn field_str(&self, name: &str) -> Option<&str> {
        self.extra.get(name).and_then(Value::as_str)
    }
}

super::sort::sort_fields! {
    /// The fields contacts sort on (API Part 4.1): `ContactSort::Name.asc()` is `sort=name`.
    ContactSort for Contact
}
