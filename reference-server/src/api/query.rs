//! The list query: `limit`, `sort`, the resource's filters and `cursor`, validated.

use wiremock::Request;

use super::super::ErrorReply;
use super::super::records::Sort;
use super::{DEFAULT_LIMIT, Kind, MAX_LIMIT, Resource};

/// The sort fields of companies and contacts.
const SORT_FIELDS: [&str; 3] = ["name", "createdAt", "updatedAt"];

/// A validated list query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListQuery {
    pub(crate) version: u32,
    pub(crate) resource: &'static str,
    pub(crate) limit: usize,
    pub(crate) sort: Option<Sort>,
    /// Field and value, by field name.
    pub(crate) filters: Vec<(String, String)>,
    pub(crate) cursor: Option<String>,
}

impl ListQuery {
    pub(super) fn parse(version: u32, resource: Resource, request: &Request) -> Result<Self, ErrorReply> {
        let pairs = request.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned()));
        Ok(Self { version, ..Self::from_pairs(resource, pairs)? })
    }

    /// Parses query pairs (of a `v1` request). Companies and contacts ignore unknown
    /// parameters; a declared list reads every parameter but `limit`, `sort` and `cursor` as
    /// an equality filter. Each parameter may appear once.
    pub(crate) fn from_pairs(
        resource: Resource,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ErrorReply> {
        let (mut limit, mut sort, mut cursor, mut filters) =
            (None, None, None, Vec::<(String, String)>::new());
        let filter = match resource.kind {
            Kind::Companies => Some("status"),
            Kind::Contacts => Some("companyId"),
            Kind::List | Kind::Collection => None,
        };
        for (name, value) in pairs {
            let slot = match name.as_str() {
                "limit" => &mut limit,
                "sort" => &mut sort,
                "cursor" => &mut cursor,
                n if filter.is_none_or(|f| f == n) => {
                    if filters.iter().any(|(field, _)| *field == name) {
                        return Err(repeated(&name));
                    }
                    if value.is_empty() {
                        return Err(ErrorReply::invalid_request(format!(
                            "parameter {name} must not be empty"
                        )));
                    }
                    filters.push((name, value));
                    continue;
                }
                _ => continue,
            };
            if slot.is_some() {
                return Err(repeated(&name));
            }
            *slot = Some(value);
        }
        filters.sort();
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(raw) => parse_limit(&raw).ok_or_else(|| {
                ErrorReply::invalid_request(format!(
                    "parameter limit must be an integer from 1 to {MAX_LIMIT}"
                ))
            })?,
        };
        let sort = match sort {
            None => None,
            Some(raw) => Some(parse_sort(&raw, filter.is_some())?),
        };
        if cursor.as_deref() == Some("") {
            return Err(ErrorReply::new(400, "invalid_cursor", "cursor is empty"));
        }
        Ok(Self { version: 1, resource: resource.name, limit, sort, filters, cursor })
    }

    /// What a cursor is bound to: version, resource, sort and filters (not the limit).
    pub(crate) fn binding(&self) -> String {
        let sort = self.sort.as_ref().map(|s| (&s.field, s.descending));
        serde_json::json!([self.version, self.resource, sort, self.filters]).to_string()
    }
}

fn repeated(name: &str) -> ErrorReply {
    ErrorReply::invalid_request(format!("parameter {} is repeated", super::super::form::printable(name)))
}

/// A sort of companies and contacts is one of [`SORT_FIELDS`]; a declared list's any field.
fn parse_sort(raw: &str, fixed_fields: bool) -> Result<Sort, ErrorReply> {
    let sort = Sort::parse(raw).filter(|sort| !fixed_fields || SORT_FIELDS.contains(&sort.field.as_str()));
    sort.ok_or_else(|| {
        ErrorReply::invalid_request(if fixed_fields {
            "parameter sort must be one of name, createdAt, updatedAt, optionally prefixed with -"
        } else {
            "parameter sort must be a field name, optionally prefixed with -"
        })
    })
}

/// `1..=100`, ASCII digits only (no sign, no spaces).
fn parse_limit(raw: &str) -> Option<usize> {
    if raw.is_empty() || raw.len() > 3 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok().filter(|n| (1..=MAX_LIMIT).contains(n))
}
