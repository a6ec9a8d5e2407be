//! A stream: one list endpoint, its filters, and the table it is mirrored into.

use crate::SyncError;
use crate::record::Fields;
use crate::sink::valid_table;

/// What a run does when a page is not in descending order of the updated field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disorder {
    /// Fail with [`SyncError::OutOfOrder`]; the rows already written stay, the mark does not
    /// move.
    #[default]
    Fail,
    /// Read the rest of the list as a full scan, without the stop; the mark does not move.
    FullScan,
}

/// What a run does with a record without the key field.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Missing {
    /// Skip it, counted in the report, with its page and position in a `tracing` warning.
    #[default]
    Skip,
    /// Fail the run with [`SyncError::MissingId`].
    Fail,
}

/// One list mirrored into one table: [`Stream::companies`], [`Stream::contacts`], or any list
/// that answers with the page envelope, [`Stream::list`].
///
/// A stream is named by its table: each table has its own state, lease and runs.
///
/// ```
/// use business_records_sync::{Disorder, Stream};
///
/// let active = Stream::companies().status("active").table("active_companies");
/// assert_eq!(active.name(), "active_companies");
/// let deals = Stream::list("crm/deals").filter("stage", "won").limit(50).on_disorder(Disorder::FullScan);
/// assert_eq!(deals.name(), "deals");
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Stream {
    pub(crate) path: String,
    pub(crate) table: String,
    pub(crate) filters: Vec<(String, String)>,
    pub(crate) limit: u32,
    pub(crate) fields: Fields,
    pub(crate) disorder: Disorder,
    pub(crate) missing: Missing,
}

impl Stream {
    /// `GET /v1/companies` into the table `companies`.
    pub fn companies() -> Self {
        Stream::list("companies")
    }

    /// `GET /v1/contacts` into the table `contacts`.
    pub fn contacts() -> Self {
        Stream::list("contacts")
    }

    /// Any list below the version root (`deals`, `crm/deals`), into a table named after the
    /// last segment of the path.
    pub fn list(path: impl Into<String>) -> Self {
        let path = path.into().trim_matches('/').to_owned();
        let table = path.rsplit('/').next().unwrap_or_default().to_owned();
        Stream {
            path,
            table,
            filters: Vec::new(),
            limit: 100,
            fields: Fields { key: "id".into(), updated: "updatedAt".into(), created: "createdAt".into() },
            disorder: Disorder::default(),
            missing: Missing::default(),
        }
    }

    /// The table (and the stream's name). Default: the last segment of the path. ASCII
    /// letters, digits and `_`, not starting with a digit, at most 63 bytes, not `br_sync_*`.
    pub fn table(mut self, table: impl Into<String>) -> Self {
        self.table = table.into();
        self
    }

    /// Only companies with this status (`status=`).
    pub fn status(self, status: impl Into<String>) -> Self {
        self.filter("status", status)
    }

    /// Sends `name=value` with every page request (a filter of the list).
    pub fn filter(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.filters.push((name.into(), value.into()));
        self
    }

    /// Records per page, 1 to 100. Default: 100.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = limit;
        self
    }

    /// The field that identifies a record. Default: `id`.
    pub fn key_field(mut self, field: impl Into<String>) -> Self {
        self.fields.key = field.into();
        self
    }

    /// The field of the last modification, sorted on descending. Default: `updatedAt`.
    pub fn updated_field(mut self, field: impl Into<String>) -> Self {
        self.fields.updated = field.into();
        self
    }

    /// The field of the creation, sorted on ascending by reconciliation. Default: `createdAt`.
    pub fn created_field(mut self, field: impl Into<String>) -> Self {
        self.fields.created = field.into();
        self
    }

    /// What a page out of order does. Default: [`Disorder::Fail`].
    pub fn on_disorder(mut self, disorder: Disorder) -> Self {
        self.disorder = disorder;
        self
    }

    /// What a record without the key field does. Default: [`Missing::Skip`].
    pub fn on_missing_id(mut self, missing: Missing) -> Self {
        self.missing = missing;
        self
    }

    /// The stream's name: its table.
    pub fn name(&self) -> &str {
        &self.table
    }

    /// Checks the arguments, naming the first one refused.
    pub(crate) fn check(&self) -> Result<(), SyncError> {
        if !valid_table(&self.table) {
            return Err(SyncError::invalid(
                "table",
                format!(
                    "expected ASCII letters, digits and `_` (not first a digit, at most 63, not `br_sync_*`), got {:?}",
                    self.table
                ),
            ));
        }
        if !(1..=100).contains(&self.limit) {
            return Err(SyncError::invalid("limit", format!("expected 1..=100, got {}", self.limit)));
        }
        let fields = [
            ("key_field", &self.fields.key),
            ("updated_field", &self.fields.updated),
            ("created_field", &self.fields.created),
        ];
        for (argument, field) in fields {
            if field.is_empty() || field.starts_with('-') || field.contains([',', ' ']) {
                return Err(SyncError::invalid(argument, format!("expected a field name, got {field:?}")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_named_by_its_table_and_checked_before_any_request() {
        assert_eq!(Stream::list("/crm/deals/").name(), "deals");
        assert!(Stream::companies().check().is_ok());
        let refused = |stream: Stream| match stream.check() {
            Err(SyncError::InvalidArgument { argument, .. }) => argument,
            other => panic!("expected a refusal, got {other:?}"),
        };
        assert_eq!(refused(Stream::companies().table("br_sync_state")), "table");
        assert_eq!(refused(Stream::list("a-b")), "table");
        assert_eq!(refused(Stream::companies().limit(0)), "limit");
        assert_eq!(refused(Stream::companies().limit(101)), "limit");
        assert_eq!(refused(Stream::companies().updated_field("-updatedAt")), "updated_field");
    }
}
