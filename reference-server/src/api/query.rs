//! The list query: `limit`, `sort`, the endpoint's filter and `cursor`, validated.

use wiremock::Request;

use super::super::ErrorReply;
use super::super::dataset::Sort;
use super::{DEFAULT_LIMIT, Endpoint, MAX_LIMIT};

/// A validated list query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ListQuery {
    pub(crate) version: u32,
    pub(crate) endpoint: Endpoint,
    pub(crate) limit: usize,
    pub(crate) sort: Option<Sort>,
    pub(crate) filter: Option<String>,
    pub(crate) cursor: Option<String>,
}

impl ListQuery {
    pub(super) fn parse(version: u32, endpoint: Endpoint, request: &Request) -> Result<Self, ErrorReply> {
        let pairs = request.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned()));
        Ok(Self { version, ..Self::from_pairs(endpoint, pairs)? })
    }

    /// Parses query pairs (of a `v1` request); unknown parameters are
    /// ignored, known ones may appear once.
    pub(crate) fn from_pairs(
        endpoint: Endpoint,
        pairs: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ErrorReply> {
        let (mut limit, mut sort, mut filter, mut cursor) = (None, None, None, None);
        for (name, value) in pairs {
            let slot = match name.as_str() {
                "limit" => &mut limit,
                "sort" => &mut sort,
                "cursor" => &mut cursor,
                n if n == endpoint.filter_param() => &mut filter,
                _ => continue,
            };
            if slot.is_some() {
                return Err(ErrorReply::invalid_request(format!("parameter {name} is repeated")));
            }
            *slot = Some(value);
        }
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
            Some(raw) => Some(Sort::parse(&raw).ok_or_else(|| {
                ErrorReply::invalid_request(
                    "parameter sort must be one of name, createdAt, updatedAt, optionally prefixed with -",
                )
            })?),
        };
        if filter.as_deref() == Some("") {
            return Err(ErrorReply::invalid_request(format!(
                "parameter {} must not be empty",
                endpoint.filter_param()
            )));
        }
        if cursor.as_deref() == Some("") {
            return Err(ErrorReply::new(400, "invalid_cursor", "cursor is empty"));
        }
        Ok(Self { version: 1, endpoint, limit, sort, filter, cursor })
    }

    /// What a cursor is bound to: version, endpoint, sort and filters (not the limit).
    pub(crate) fn binding(&self) -> String {
        let sort = self.sort.map(|s| format!("{s:?}"));
        serde_json::json!([self.version, self.endpoint.name(), sort, self.filter]).to_string()
    }
}

/// `1..=100`, ASCII digits only (no sign, no spaces).
fn parse_limit(raw: &str) -> Option<usize> {
    if raw.is_empty() || raw.len() > 3 || !raw.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    raw.parse().ok().filter(|n| (1..=MAX_LIMIT).contains(n))
}
