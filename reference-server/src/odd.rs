//! Odd records: the shapes a server that follows the API's letter may send where the API
//! leaves types and formats open (Part 2), at a chosen rate.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

/// One way of sending a record oddly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OddKind {
    /// `updatedAt: null`.
    NullTimestamp,
    /// `createdAt` as a JSON number of epoch seconds.
    EpochSeconds,
    /// `updatedAt` as a JSON number of epoch milliseconds.
    EpochMillis,
    /// `createdAt` as `2024-01-02 03:04:05`: a space for `T`, no offset (UTC).
    SpaceSeparated,
    /// `status` and `createdAt` left out (for a contact: `companyId` and `name`).
    MissingFields,
    /// Values no client can read as the field's type: `createdAt: "not a date"` and
    /// `status: 42` (for a contact: `companyId: 42`).
    Unreadable,
    /// The record is sent as usual, and an element that is not an object (the record's id as
    /// a bare string) is sent just before it.
    NotAnObject,
}

impl OddKind {
    /// Every kind, in the order [`OddRecords::every`] cycles through them.
    pub const ALL: [OddKind; 7] = [
        OddKind::NullTimestamp,
        OddKind::EpochSeconds,
        OddKind::EpochMillis,
        OddKind::SpaceSeparated,
        OddKind::MissingFields,
        OddKind::Unreadable,
        OddKind::NotAnObject,
    ];
}

/// Which records a [`ReferenceServer`](super::ReferenceServer) sends oddly, set with
/// [`ReferenceServerBuilder::odd_records`](super::ReferenceServerBuilder::odd_records).
///
/// Records are chosen by their position in the dataset (from 0, in id order), so the same
/// records are odd whatever the sort, filter or page size: with `every(7)`, records 6, 13,
/// 20, ... are odd, taking the kinds in turn.
///
/// ```
/// use business_records_reference_server::{OddKind, OddRecords};
///
/// let odd = OddRecords::every(7);
/// assert_eq!(odd.kind_of(5), None);
/// assert_eq!(odd.kind_of(6), Some(OddKind::NullTimestamp));
/// assert_eq!(odd.kind_of(13), Some(OddKind::EpochSeconds));
/// let unreadable = OddRecords::every(3).kinds([OddKind::Unreadable]);
/// assert_eq!(unreadable.kind_of(2), Some(OddKind::Unreadable));
/// ```
#[must_use]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OddRecords {
    every: usize,
    kinds: Vec<OddKind>,
}

impl OddRecords {
    /// One record in every `n` (`n` of 0 counts as 1), taking every [`OddKind`] in turn.
    pub fn every(n: usize) -> Self {
        OddRecords { every: n.max(1), kinds: OddKind::ALL.to_vec() }
    }

    /// Takes only these kinds, in turn (none at all: every kind).
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = OddKind>) -> Self {
        self.kinds = kinds.into_iter().collect();
        if self.kinds.is_empty() {
            self.kinds = OddKind::ALL.to_vec();
        }
        self
    }

    /// How the record at `index` of the dataset (from 0, in id order) is sent, if oddly.
    pub fn kind_of(&self, index: usize) -> Option<OddKind> {
        let position = index.checked_add(1)?;
        if !position.is_multiple_of(self.every) {
            return None;
        }
        let nth = position / self.every;
        self.kinds.get((nth - 1) % self.kinds.len()).copied()
    }

    /// The page's records (`indices` into the dataset, `data` their JSON), each odd one
    /// changed as its kind says.
    pub(crate) fn apply(&self, indices: &[u32], data: Vec<Value>) -> Vec<Value> {
        let mut out = Vec::with_capacity(data.len() + data.len() / self.every + 1);
        for (&index, mut record) in indices.iter().zip(data) {
            let kind = usize::try_from(index).ok().and_then(|i| self.kind_of(i));
            if let (Some(kind), Value::Object(fields)) = (kind, &mut record) {
                if kind == OddKind::NotAnObject {
                    out.push(fields.get("id").cloned().unwrap_or(Value::Null));
                } else {
                    render(kind, fields);
                }
            }
            out.push(record);
        }
        out
    }
}

/// Changes one record's fields as `kind` says.
fn render(kind: OddKind, fields: &mut Map<String, Value>) {
    let is_contact = fields.contains_key("companyId");
    let epoch = |fields: &Map<String, Value>, name: &str| {
        fields
            .get(name)
            .and_then(Value::as_str)
            .and_then(|text| DateTime::parse_from_rfc3339(text).ok())
            .map(|date| date.with_timezone(&Utc))
    };
    match kind {
        OddKind::NullTimestamp => {
            fields.insert("updatedAt".into(), Value::Null);
        }
        OddKind::EpochSeconds => {
            if let Some(date) = epoch(fields, "createdAt") {
                fields.insert("createdAt".into(), date.timestamp().into());
            }
        }
        OddKind::EpochMillis => {
            if let Some(date) = epoch(fields, "updatedAt") {
                fields.insert("updatedAt".into(), date.timestamp_millis().into());
            }
        }
        OddKind::SpaceSeparated => {
            if let Some(date) = epoch(fields, "createdAt") {
                fields.insert("createdAt".into(), date.format("%Y-%m-%d %H:%M:%S").to_string().into());
            }
        }
        OddKind::MissingFields if is_contact => {
            fields.remove("companyId");
            fields.remove("name");
        }
        OddKind::MissingFields => {
            fields.remove("status");
            fields.remove("createdAt");
        }
        OddKind::Unreadable if is_contact => {
            fields.insert("companyId".into(), 42.into());
        }
        OddKind::Unreadable => {
            fields.insert("createdAt".into(), "not a date".into());
            fields.insert("status".into(), 42.into());
        }
        OddKind::NotAnObject => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_in_turn_at_the_chosen_rate() {
        let odd = OddRecords::every(7);
        let chosen: Vec<(usize, OddKind)> = (0..56).filter_map(|i| odd.kind_of(i).map(|k| (i, k))).collect();
        assert_eq!(chosen.len(), 8);
        assert_eq!(chosen[0], (6, OddKind::NullTimestamp));
        assert_eq!(chosen[6], (48, OddKind::NotAnObject));
        assert_eq!(chosen[7], (55, OddKind::NullTimestamp));
        assert_eq!(OddRecords::every(0).kind_of(0), Some(OddKind::NullTimestamp));
    }

    #[test]
    fn records_are_changed_and_non_objects_added() {
        let record = |id: &str| {
            serde_json::json!({"id": id, "name": "n", "status": "active",
                "createdAt": "2024-01-02T03:04:05Z", "updatedAt": "2024-01-02T03:04:05Z"})
        };
        let odd = OddRecords::every(1);
        let indices: Vec<u32> = (0..7).collect();
        let data = odd.apply(&indices, indices.iter().map(|i| record(&format!("c{i}"))).collect());
        assert_eq!(data.len(), 8);
        assert_eq!(data[0]["updatedAt"], Value::Null);
        assert_eq!(data[1]["createdAt"], 1_704_164_645);
        assert_eq!(data[2]["updatedAt"], 1_704_164_645_000i64);
        assert_eq!(data[3]["createdAt"], "2024-01-02 03:04:05");
        assert!(data[4].get("status").is_none() && data[4].get("createdAt").is_none());
        assert_eq!(
            (&data[5]["createdAt"], &data[5]["status"]),
            (&Value::from("not a date"), &Value::from(42))
        );
        assert_eq!((&data[6], &data[7]["id"]), (&Value::from("c6"), &Value::from("c6")));
    }
}
