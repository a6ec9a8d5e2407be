//! One resource's records, the order of the list endpoints, and the orders already computed.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;

use super::Record;

/// How many computed orders a table keeps; past it, they are computed again.
const ORDERS_KEPT: usize = 64;

/// A parsed `sort` parameter: a top-level field and the direction.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Sort {
    pub(crate) field: String,
    pub(crate) descending: bool,
}

impl Sort {
    /// `field` or `-field`; `None` for an empty field or one that starts with `-`.
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        let (descending, field) = raw.strip_prefix('-').map_or((false, raw), |rest| (true, rest));
        (!field.is_empty() && !field.starts_with('-')).then(|| Sort { field: field.to_owned(), descending })
    }
}

/// The records of one resource in ascending id order, and the orders computed for queries.
#[derive(Debug, Clone, Default)]
pub(crate) struct Table {
    /// Shared with the [`Dataset`](super::Dataset)s handed out; a write copies them only then.
    records: Arc<Vec<Record>>,
    /// Record positions for each (sort, filters) asked for, until the next write.
    orders: HashMap<String, Arc<Vec<u32>>>,
    /// The number of the last record a `POST` created.
    created: u64,
}

impl Table {
    /// The records, a later one replacing an earlier one of the same id.
    pub(crate) fn new(records: Vec<Record>) -> Self {
        let records = if records.windows(2).all(|pair| pair[0].id() < pair[1].id()) {
            records
        } else {
            let by_id: BTreeMap<String, Record> =
                records.into_iter().map(|r| (r.id().to_owned(), r)).collect();
            by_id.into_values().collect()
        };
        Table { records: Arc::new(records), ..Table::default() }
    }

    pub(crate) fn records(&self) -> Arc<Vec<Record>> {
        Arc::clone(&self.records)
    }

    pub(crate) fn get(&self, id: &str) -> Option<&Record> {
        self.position(id).ok().map(|i| &self.records[i])
    }

    fn position(&self, id: &str) -> Result<usize, usize> {
        self.records.binary_search_by(|r| r.id().cmp(id))
    }

    /// Adds `record`, or replaces the one with its id; returns the one replaced.
    pub(crate) fn upsert(&mut self, record: Record) -> Option<Record> {
        self.orders.clear();
        let position = self.position(record.id());
        let records = Arc::make_mut(&mut self.records);
        match position {
            Ok(i) => Some(std::mem::replace(&mut records[i], record)),
            Err(i) => {
                records.insert(i, record);
                None
            }
        }
    }

    pub(crate) fn remove(&mut self, id: &str) -> Option<Record> {
        let i = self.position(id).ok()?;
        self.orders.clear();
        Some(Arc::make_mut(&mut self.records).remove(i))
    }

    /// A fresh id, `{prefix}_{n}`, for a record a `POST` creates.
    pub(crate) fn new_id(&mut self, prefix: &str) -> String {
        loop {
            self.created += 1;
            let id = format!("{prefix}_{}", self.created);
            if self.position(&id).is_err() {
                return id;
            }
        }
    }

    /// The positions of the records matching `filters`, in `sort` order.
    pub(crate) fn select(&mut self, sort: Option<&Sort>, filters: &[(String, String)]) -> Arc<Vec<u32>> {
        let key = serde_json::json!([sort.map(|s| (&s.field, s.descending)), filters]).to_string();
        if let Some(order) = self.orders.get(&key) {
            return Arc::clone(order);
        }
        if self.orders.len() >= ORDERS_KEPT {
            self.orders.clear();
        }
        let computed = Arc::new(order(&self.records, sort, filters));
        self.orders.insert(key, Arc::clone(&computed));
        computed
    }
}

/// The positions of the `records` (in ascending id order) matching every filter, in `sort`
/// order: the sort field's values compare by type (missing and null, booleans, numbers,
/// strings, arrays, objects), then by value (strings byte-wise, so timestamps of one format
/// chronologically); the direction applies to the field only; ties are broken by ascending
/// `id`. Without a sort, ascending `id`.
pub(crate) fn order(records: &[Record], sort: Option<&Sort>, filters: &[(String, String)]) -> Vec<u32> {
    let mut positions: Vec<u32> = (0..records.len() as u32)
        .filter(|&i| filters.iter().all(|(field, value)| matches(&records[i as usize], field, value)))
        .collect();
    if let Some(sort) = sort {
        // Stable: ties keep ascending id order.
        positions.sort_by(|&a, &b| {
            let ordering =
                compare(records[a as usize].get(&sort.field), records[b as usize].get(&sort.field));
            if sort.descending { ordering.reverse() } else { ordering }
        });
    }
    positions
}

/// Whether `record`'s `field` equals `value`: a string as it is, a number or boolean as its
/// JSON text.
fn matches(record: &Record, field: &str, value: &str) -> bool {
    match record.get(field) {
        Some(Value::String(s)) => s == value,
        Some(other @ (Value::Number(_) | Value::Bool(_))) => {
            serde_json::to_string(other).is_ok_and(|text| text == value)
        }
        _ => false,
    }
}

fn compare(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    let rank = |v: Option<&Value>| match v {
        None | Some(Value::Null) => 0,
        Some(Value::Bool(_)) => 1,
        Some(Value::Number(_)) => 2,
        Some(Value::String(_)) => 3,
        Some(Value::Array(_)) => 4,
        Some(Value::Object(_)) => 5,
    };
    rank(a).cmp(&rank(b)).then_with(|| match (a, b) {
        (Some(Value::Bool(a)), Some(Value::Bool(b))) => a.cmp(b),
        (Some(Value::String(a)), Some(Value::String(b))) => a.cmp(b),
        (Some(Value::Number(a)), Some(Value::Number(b))) => {
            match (a.as_i64(), b.as_i64(), a.as_u64(), b.as_u64()) {
                (Some(a), Some(b), ..) => a.cmp(&b),
                (_, _, Some(a), Some(b)) => a.cmp(&b),
                _ => a.as_f64().unwrap_or(f64::NAN).total_cmp(&b.as_f64().unwrap_or(f64::NAN)),
            }
        }
        _ => Ordering::Equal,
    })
}
