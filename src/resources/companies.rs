//! Companies: the model and `GET /v1/companies`.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{List, Resource};

/// A company (spec Part 2).
///
/// Fields the spec does not name are kept in [`extra`](Company::extra), so nothing the API
/// sends is lost when it adds fields.
///
/// ```
/// use business_records::Company;
/// let company: Company = serde_json::from_str(r#"{
///     "id": "cmp_1", "name": "Acme", "status": "active",
///     "createdAt": "2024-01-02T03:04:05Z", "updatedAt": "2024-02-03T04:05:06Z",
///     "industry": "retail"
/// }"#)?;
/// assert_eq!(company.status.as_str(), "active");
/// assert_eq!(company.extra["industry"], "retail");
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
    /// Status; the spec lists no values, so any string is kept.
    pub status: CompanyStatus,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last modification time.
    pub updated_at: DateTime<Utc>,
    /// Every other field the API sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

super::record::deserialize_record! {
    Company, "a company object",
    required {
        id: String = "id",
        name: String = "name",
        status: CompanyStatus = "status",
        created_at: DateTime<Utc> = "createdAt",
        updated_at: DateTime<Utc> = "updatedAt",
    },
    optional {}
}

/// A company status: an open set of strings (`active`, `inactive`, ...), compared exactly.
///
/// ```
/// use business_records::CompanyStatus;
/// assert_eq!(CompanyStatus::from("active"), CompanyStatus::new("active"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CompanyStatus(String);

impl CompanyStatus {
    /// A status with this exact text.
    pub fn new(status: impl Into<String>) -> Self {
        CompanyStatus(status.into())
    }

    /// The status text.
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

sort_fields! {
    /// The sortable company fields (spec Part 4.1).
    ///
    /// ```
    /// use business_records::CompanySort;
    /// assert_eq!(CompanySort::CreatedAt.desc().to_string(), "-createdAt");
    /// ```
    CompanySort
}

impl Resource for Company {
    const PATH: &'static str = "companies";
    const SORT_FIELDS: &'static [&'static str] = &["name", "createdAt", "updatedAt"];
}

/// The builder behind [`Client::companies`](crate::Client::companies).
pub type ListCompanies = List<Company>;

impl List<Company> {
    /// Only companies with this status (`status=`). It must not be empty.
    pub fn status(self, status: impl Into<CompanyStatus>) -> Self {
        let status: CompanyStatus = status.into();
        self.filter("status", status.0)
    }
}
