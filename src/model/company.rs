//! Companies (API Part 2).

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use super::record::{self, Field, Record};

/// A company (API Part 2).
///
/// `id` and `name` are required: an element of a page without them is not a company (it is
/// reported, see [`Page::undecodable`](crate::Page::undecodable)). The spec does not fix the
/// type or format of `status`, `createdAt` and `updatedAt`, so they are optional: absent or
/// `null` leaves them `None`; timestamps are read in RFC 3339 and the common variants (a space
/// for `T`, no offset meaning UTC, epoch seconds or milliseconds as numbers); a value that
/// still cannot be read leaves the field `None`, keeps the raw value in
/// [`extra`](Company::extra) under the field's name, and is listed by
/// [`fallbacks`](Company::fallbacks). Fields the API does not name are kept in `extra`, so
/// nothing the API sends is lost.
///
/// ```
/// use business_records::Company;
/// let company: Company = serde_json::from_str(r#"{
///     "id": "cmp_1", "name": "Acme", "status": "active",
///     "createdAt": "2024-01-02 03:04:05", "updatedAt": 1706929506,
///     "industry": "retail"
/// }"#)?;
/// assert_eq!(company.status.as_ref().map(|s| s.as_str()), Some("active"));
/// assert_eq!(company.updated_at.map(|d| d.to_rfc3339()).as_deref(), Some("2024-02-03T03:05:06+00:00"));
/// assert_eq!(company.extra["industry"], "retail");
///
/// let odd: Company = serde_json::from_str(r#"{"id": "cmp_2", "name": "Odd", "createdAt": "last week"}"#)?;
/// assert_eq!((odd.created_at, odd.fallbacks()), (None, &["createdAt"][..]));
/// assert_eq!(odd.extra["createdAt"], "last week");
/// # Ok::<(), serde_json::Error>(())
/// ```
///
/// Built in code, for tests of your own:
///
/// ```
/// use business_records::Company;
/// let mut company = Company::new("cmp_1", "Acme");
/// company.status = Some("active".into());
/// company.extra.insert("industry".into(), "retail".into());
/// assert_eq!(serde_json::to_value(&company)?["industry"], "retail");
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Company {
    /// Identifier of the company.
    pub id: String,
    /// Name of the company.
    pub name: String,
    /// Status; the API lists no values, so any string is kept. `None` when absent, `null` or
    /// not a string.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<CompanyStatus>,
    /// Creation time; `None` when absent, `null` or unreadable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created_at: Option<DateTime<Utc>>,
    /// Last modification time; `None` when absent, `null` or unreadable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<DateTime<Utc>>,
    /// Every other field the API sent, and the raw value of every field that fell back.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    #[serde(skip)]
    fallbacks: Vec<&'static str>,
}

impl<'de> Deserialize<'de> for Company {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        record::read(deserializer)
    }
}

impl Record for Company {
    const EXPECTING: &'static str = "a company object";
    const FIELDS: &'static [(&'static str, Field<Self>)] = &[
        ("id", Field::Required(|company, id| company.id = id)),
        ("name", Field::Required(|company, name| company.name = name)),
        ("status", Field::Text(|company, status| company.status = Some(CompanyStatus(status)))),
        ("createdAt", Field::Time(|company, at| company.created_at = Some(at))),
        ("updatedAt", Field::Time(|company, at| company.updated_at = Some(at))),
    ];

    fn empty() -> Self {
        Company::new("", "")
    }

    fn rest(&mut self) -> (&mut Map<String, Value>, &mut Vec<&'static str>) {
        (&mut self.extra, &mut self.fallbacks)
    }
}

impl Company {
    /// A company with these required fields and nothing else.
    pub fn new(id: impl Into<String>, name: impl Into<String>) -> Self {
        Company {
            id: id.into(),
            name: name.into(),
            status: None,
            created_at: None,
            updated_at: None,
            extra: Map::new(),
            fallbacks: Vec::new(),
        }
    }

    /// The wire names of the fields whose values could not be read (`status`, `createdAt`,
    /// `updatedAt`): each is `None` here and its raw value is in [`extra`](Company::extra).
    /// Empty for a record read in full.
    pub fn fallbacks(&self) -> &[&'static str] {
        &self.fallbacks
    }
}

/// A company status: an open set of strings (`active`, `inactive`, ...), compared exactly.
///
/// ```
/// use business_records::CompanyStatus;
/// let status = CompanyStatus::from("active");
/// assert_eq!(status.as_str(), "active");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CompanyStatus(String);

impl CompanyStatus {
    /// The status as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for CompanyStatus {
    fn from(s: &str) -> Self {
        CompanyStatus(s.to_owned())
    }
}

impl From<String> for CompanyStatus {
    fn from(s: String) -> Self {
        CompanyStatus(s)
    }
}

impl fmt::Display for CompanyStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl AsRef<str> for CompanyStatus {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

super::sort::sort_fields! {
    /// The fields companies sort on (API Part 4.1): `CompanySort::CreatedAt.desc()` is
    /// `sort=-createdAt`.
    CompanySort for Company
}
