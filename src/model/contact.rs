//! Contacts: the model and `GET /v1/contacts`.

use serde::Serialize;
use serde_json::Value;

use super::Resource;
use super::extra::Extra;

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
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    pub extra: Extra,
    #[serde(skip)]
    fallbacks: Vec<&'static str>,
}

super::record::record! {
    Contact, "a contact object",
    required {},
    optional { id: text = "id", company_id: text = "companyId" }
}

impl Contact {
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

sort_fields! {
    /// The sortable contact fields (API Part 4.1).
    ///
    /// ```
    /// use business_records::ContactSort;
    /// assert_eq!(ContactSort::Name.asc().to_string(), "name");
    /// ```
    ContactSort for Contact
}

impl Resource for Contact {
    const PATH: &'static str = "contacts";
    const SORT_FIELDS: &'static [&'static str] = &["name", "createdAt", "updatedAt"];
}
