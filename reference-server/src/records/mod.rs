//! The records the reference server serves: the test's own, generated ones, or both.
//!
//! Every resource (companies, contacts, and those a test declares) is a [`Table`] of
//! [`Record`]s, JSON objects with a string `id`, kept in ascending id order. Generated records
//! come from a seed with a small splitmix64 generator, so the same
//! `(companies, contacts_per_company, seed)` always gives the same data, on every platform and
//! with every version of every dependency.

mod generate;
mod table;

use std::collections::BTreeMap;
use std::ops::Index;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Error, ReferenceServer};
pub(crate) use table::{Sort, Table, order};

/// Company status values used in the generated data.
pub const COMPANY_STATUSES: [&str; 4] = ["active", "inactive", "prospect", "churned"];

/// The table of companies.
pub(crate) const COMPANIES: &str = "companies";
/// The table of contacts.
pub(crate) const CONTACTS: &str = "contacts";

/// Now, as the timestamps of records are written: RFC 3339 UTC, whole seconds.
pub(crate) fn timestamp_now() -> String {
    generate::rfc3339(super::jwt::unix_now())
}

/// One record as the server holds and serves it: a JSON object with a string `id`.
///
/// Generated companies carry `id` (`cmp_0001` style, zero-padded so string order is numeric
/// order), `name`, `status` (one of [`COMPANY_STATUSES`]), `createdAt` and `updatedAt` (RFC 3339
/// UTC, whole seconds), and `industry`, `employeeCount` and `country`, fields the specification
/// does not name. Generated contacts carry `id` (`cnt_00001` style), `companyId`, `name`,
/// `email`, `createdAt`, `updatedAt` and `title`. A test's own records carry what the test
/// gave them.
///
/// ```
/// use business_records_reference_server::Dataset;
///
/// let dataset = Dataset::generate(3, 1, 42);
/// let company = &dataset.companies()[0];
/// assert_eq!(company.id(), "cmp_0001");
/// assert_eq!(company["id"], "cmp_0001");
/// assert!(company.str("name").is_some());
/// assert_eq!(company["no such field"], serde_json::Value::Null);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Record(Map<String, Value>);

impl Record {
    /// `value` as a record: a JSON object whose `id` is a non-empty string.
    pub(crate) fn from_json(value: Value, argument: &'static str) -> Result<Self, Error> {
        let Value::Object(fields) = value else {
            return Err(Error::invalid(argument, "a record is a JSON object"));
        };
        match fields.get("id") {
            Some(Value::String(id)) if !id.is_empty() => Ok(Record(fields)),
            _ => Err(Error::invalid(argument, "a record needs a non-empty string `id`")),
        }
    }

    /// The record's `id`.
    pub fn id(&self) -> &str {
        self.str("id").unwrap_or_default()
    }

    /// The value of a top-level field.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.0.get(field)
    }

    /// The value of a top-level field, when it is a string.
    pub fn str(&self, field: &str) -> Option<&str> {
        self.get(field).and_then(Value::as_str)
    }

    /// Every field.
    pub fn fields(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The record as a JSON object.
    pub fn to_json(&self) -> Value {
        Value::Object(self.0.clone())
    }

    pub(crate) fn fields_mut(&mut self) -> &mut Map<String, Value> {
        &mut self.0
    }
}

/// `record["field"]`: the field's value, `Value::Null` when absent (as `serde_json::Value`
/// indexes).
impl Index<&str> for Record {
    type Output = Value;

    fn index(&self, field: &str) -> &Value {
        static NULL: Value = Value::Null;
        self.get(field).unwrap_or(&NULL)
    }
}

/// The records a reference server serves, as [`ReferenceServer::dataset`](crate::ReferenceServer::dataset)
/// saw them: companies, contacts, and the resources the test declared.
///
/// The `*_sorted` helpers return records in exactly the order the list endpoints use, so tests
/// can compare what a client received with what it should have received.
#[derive(Debug, Clone, Default)]
pub struct Dataset {
    tables: BTreeMap<String, Arc<Vec<Record>>>,
}

impl Dataset {
    /// Generates `companies` companies with `contacts_per_company` contacts
    /// each, deterministically from `seed`.
    pub fn generate(companies: usize, contacts_per_company: usize, seed: u64) -> Self {
        let (companies, contacts) = generate::generate(companies, contacts_per_company, seed);
        let tables = [(COMPANIES, companies), (CONTACTS, contacts)];
        Dataset {
            tables: tables.into_iter().map(|(name, records)| (name.to_owned(), Arc::new(records))).collect(),
        }
    }

    pub(crate) fn from_tables<'t>(tables: impl IntoIterator<Item = (&'t String, &'t Table)>) -> Self {
        Dataset { tables: tables.into_iter().map(|(name, table)| (name.clone(), table.records())).collect() }
    }

    pub(crate) fn into_tables(self) -> impl Iterator<Item = (String, Vec<Record>)> {
        self.tables.into_iter().map(|(name, records)| (name, Arc::unwrap_or_clone(records)))
    }

    /// Every record of `resource` (`companies`, `contacts`, or a declared resource), in
    /// ascending id order; none for a resource that is not served.
    pub fn records(&self, resource: &str) -> &[Record] {
        self.tables.get(resource).map_or(&[], |records| records.as_slice())
    }

    /// All companies, in ascending id order.
    pub fn companies(&self) -> &[Record] {
        self.records(COMPANIES)
    }

    /// All contacts, in ascending id order.
    pub fn contacts(&self) -> &[Record] {
        self.records(CONTACTS)
    }

    /// The record of `resource` with this id.
    pub fn record(&self, resource: &str, id: &str) -> Option<&Record> {
        let records = self.records(resource);
        records.binary_search_by(|r| r.id().cmp(id)).ok().map(|i| &records[i])
    }

    /// The company with this id.
    pub fn company(&self, id: &str) -> Option<&Record> {
        self.record(COMPANIES, id)
    }

    /// The contacts of one company, in ascending id order.
    pub fn contacts_of<'a>(&'a self, company_id: &'a str) -> impl Iterator<Item = &'a Record> {
        self.contacts().iter().filter(move |c| c.str("companyId") == Some(company_id))
    }

    /// The records of `resource` in the order `GET /v1/{resource}?sort={sort}&{filters}`
    /// returns them: `sort` a field name, `-` first for descending, ties by ascending id
    /// (empty: no `sort` parameter, ascending id); each filter a field and the value it
    /// equals.
    pub fn sorted(&self, resource: &str, sort: &str, filters: &[(&str, &str)]) -> Vec<&Record> {
        let records = self.records(resource);
        let filters: Vec<(String, String)> =
            filters.iter().map(|(f, v)| ((*f).to_owned(), (*v).to_owned())).collect();
        order(records, Sort::parse(sort).as_ref(), &filters)
            .into_iter()
            .map(|i| &records[i as usize])
            .collect()
    }

    /// Companies in the order `GET /v1/companies?sort={sort}&status={status}` returns them.
    pub fn companies_sorted(&self, sort: &str, status: Option<&str>) -> Vec<&Record> {
        self.sorted(COMPANIES, sort, &status.map(|s| ("status", s)).into_iter().collect::<Vec<_>>())
    }

    /// Contacts in the order `GET /v1/contacts?sort={sort}&companyId={company_id}` returns them.
    pub fn contacts_sorted(&self, sort: &str, company_id: Option<&str>) -> Vec<&Record> {
        self.sorted(CONTACTS, sort, &company_id.map(|c| ("companyId", c)).into_iter().collect::<Vec<_>>())
    }
}

impl ReferenceServer {
    /// The records served at this moment: a snapshot, unchanged by later writes.
    pub fn dataset(&self) -> Dataset {
        Dataset::from_tables(self.shared.store().iter())
    }

    /// Serves `record` (a JSON object with a string `id`) in `resource` (`companies`,
    /// `contacts`, or a declared resource) from the next request on, replacing the record
    /// with its id, if any, by the fields given. `updatedAt` is set to now; `createdAt` is kept
    /// from the record replaced, or set to now for a new record, unless `record` has one.
    /// Returns the record as stored. Cursors are positions: a listing under way sees the
    /// records after the change, shifted by it.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidArgument`] if `record` is not a JSON object with a non-empty string
    /// `id`, or `resource` is not served.
    pub fn upsert(&self, resource: &str, record: Value) -> Result<Record, Error> {
        let mut record = Record::from_json(record, "record")?;
        let mut store = self.shared.store();
        let table = store.get_mut(resource).ok_or_else(|| not_served(resource))?;
        let now = Value::String(timestamp_now());
        let created = table.get(record.id()).and_then(|old| old.get("createdAt")).cloned();
        let fields = record.fields_mut();
        fields.insert("updatedAt".to_owned(), now.clone());
        if !fields.contains_key("createdAt") {
            fields.insert("createdAt".to_owned(), created.unwrap_or(now));
        }
        table.upsert(record.clone());
        Ok(record)
    }

    /// Serves `record` in `resource` exactly as given from the next request on, replacing the
    /// record with its id: unlike [`upsert`](Self::upsert), no timestamp is set or kept, so a
    /// test plays any clock (records that tie on `updatedAt`, an update without a new
    /// `updatedAt`, a record without one, a timestamp from the future). Returns the record.
    ///
    /// ```
    /// # async fn run() -> Result<(), business_records_reference_server::Error> {
    /// use business_records_reference_server::ReferenceServer;
    /// use serde_json::json;
    ///
    /// let server = ReferenceServer::builder().company(json!({"id": "cmp_1"})).start().await;
    /// let tie = json!({"id": "cmp_2", "updatedAt": "2024-05-01T10:00:00Z"});
    /// server.put("companies", tie.clone())?;
    /// assert_eq!(server.dataset().company("cmp_2").map(|c| c.to_json()), Some(tie));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`upsert`](Self::upsert).
    pub fn put(&self, resource: &str, record: Value) -> Result<Record, Error> {
        let record = Record::from_json(record, "record")?;
        let mut store = self.shared.store();
        let table = store.get_mut(resource).ok_or_else(|| not_served(resource))?;
        table.upsert(record.clone());
        Ok(record)
    }

    /// Stops serving the record of `resource` with this id; returns it, or `None` if there was
    /// none.
    pub fn remove(&self, resource: &str, id: &str) -> Option<Record> {
        self.shared.store().get_mut(resource)?.remove(id)
    }

    /// [`upsert`](Self::upsert) in `companies`.
    ///
    /// ```
    /// # async fn run() -> Result<(), business_records_reference_server::Error> {
    /// use business_records_reference_server::ReferenceServer;
    /// use serde_json::json;
    ///
    /// let server = ReferenceServer::builder().company(json!({"id": "cmp_1", "name": "Acme"})).start().await;
    /// let globex = server.upsert_company(json!({"id": "cmp_2", "name": "Globex"}))?;
    /// assert!(globex.str("updatedAt").is_some());
    /// server.remove_company("cmp_1");
    /// assert_eq!(server.dataset().companies(), [globex]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`upsert`](Self::upsert).
    pub fn upsert_company(&self, record: Value) -> Result<Record, Error> {
        self.upsert(COMPANIES, record)
    }

    /// [`remove`](Self::remove) from `companies`.
    pub fn remove_company(&self, id: &str) -> Option<Record> {
        self.remove(COMPANIES, id)
    }

    /// [`upsert`](Self::upsert) in `contacts`.
    ///
    /// # Errors
    ///
    /// As [`upsert`](Self::upsert).
    pub fn upsert_contact(&self, record: Value) -> Result<Record, Error> {
        self.upsert(CONTACTS, record)
    }

    /// [`remove`](Self::remove) from `contacts`.
    pub fn remove_contact(&self, id: &str) -> Option<Record> {
        self.remove(CONTACTS, id)
    }
}

fn not_served(resource: &str) -> Error {
    Error::invalid(
        "resource",
        format!("{:?} is not a resource this server serves", super::form::printable(resource)),
    )
}

#[cfg(test)]
mod tests;
