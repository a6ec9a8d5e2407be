//! Contacts: the model and `GET /v1/contacts`.

use serde::Serialize;
use serde_json::{Map, Value};

use super::{List, Resource};

/// A contact (spec Part 2). The spec names only `companyId`; every other field, the contact's
/// own `id` included, may be absent, and whatever the API sends is kept in
/// [`extra`](Contact::extra).
///
/// ```
/// use business_records::Contact;
/// let contact: Contact = serde_json::from_str(
///     r#"{"id": "cnt_1", "companyId": "cmp_1", "name": "Ada", "email": "ada@example.com"}"#,
/// )?;
/// assert_eq!(contact.company_id, "cmp_1");
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
    /// Identifier of the owning company.
    pub company_id: String,
    /// Every other field the API sent (`name`, `email`, `createdAt`, ... in the reference data).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

super::record::deserialize_record! {
    Contact, "a contact object",
    required { company_id: String = "companyId" },
    optional { id: String = "id" }
}

impl Contact {
    /// A string field from [`extra`](Contact::extra), if present and a string.
    pub fn field_str(&self, name: &str) -> Option<&str> {
        self.extra.get(name).and_then(Value::as_str)
    }
}

sort_fields! {
    /// The sortable contact fields (spec Part 4.1).
    ///
    /// ```
    /// use business_records::ContactSort;
    /// assert_eq!(ContactSort::Name.asc().to_string(), "name");
    /// ```
    ContactSort
}

impl Resource for Contact {
    const PATH: &'static str = "contacts";
    const SORT_FIELDS: &'static [&'static str] = &["name", "createdAt", "updatedAt"];
}

/// The builder behind [`Client::contacts`](crate::Client::contacts).
pub type ListContacts = List<Contact>;

impl List<Contact> {
    /// Only contacts of this company (`companyId=`). It must not be empty.
    pub fn company_id(self, company_id: impl Into<String>) -> Self {
        self.filter("companyId", company_id.into())
    }
}
