//! The order of the list endpoints: the `sort` parameter, the comparison rule, and the
//! record indices in every order, computed once.

use std::cmp::Ordering;

use super::{DatasetCompany, DatasetContact};

/// A field the list endpoints sort by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum SortField {
    Name,
    CreatedAt,
    UpdatedAt,
}

/// A parsed `sort` parameter: field and direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Sort {
    pub(crate) field: SortField,
    pub(crate) descending: bool,
}

impl Sort {
    /// Parses `name`, `createdAt`, `updatedAt`, each optionally prefixed with `-`.
    pub(crate) fn parse(raw: &str) -> Option<Self> {
        let (descending, name) = match raw.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, raw),
        };
        let field = match name {
            "name" => SortField::Name,
            "createdAt" => SortField::CreatedAt,
            "updatedAt" => SortField::UpdatedAt,
            _ => return None,
        };
        Some(Self { field, descending })
    }

    /// Position of this sort in [`Orders`] (0 is "no sort").
    pub(crate) fn slot(sort: Option<Self>) -> usize {
        match sort {
            None => 0,
            Some(s) => {
                let field = match s.field {
                    SortField::Name => 0,
                    SortField::CreatedAt => 1,
                    SortField::UpdatedAt => 2,
                };
                1 + field * 2 + usize::from(s.descending)
            }
        }
    }

    pub(crate) fn all() -> impl Iterator<Item = Option<Self>> {
        std::iter::once(None).chain(
            [SortField::Name, SortField::CreatedAt, SortField::UpdatedAt]
                .into_iter()
                .flat_map(|field| [false, true].map(|descending| Some(Sort { field, descending }))),
        )
    }
}

/// The sortable view of a record.
pub(crate) trait Sortable {
    fn id(&self) -> &str;
    fn name(&self) -> &str;
    fn created_at(&self) -> &str;
    fn updated_at(&self) -> &str;
}

macro_rules! sortable {
    ($t:ty) => {
        impl Sortable for $t {
            fn id(&self) -> &str {
                &self.id
            }
            fn name(&self) -> &str {
                &self.name
            }
            fn created_at(&self) -> &str {
                &self.created_at
            }
            fn updated_at(&self) -> &str {
                &self.updated_at
            }
        }
    };
}
sortable!(DatasetCompany);
sortable!(DatasetContact);

/// The ordering rule of the list endpoints.
///
/// The sort field compares byte-wise (timestamps share one fixed format, so
/// this is chronological); the direction applies to the field only; ties are
/// broken by ascending `id` in both directions. Without a sort, records are
/// ordered by ascending `id`.
fn compare<R: Sortable>(a: &R, b: &R, sort: Option<Sort>) -> Ordering {
    let primary = match sort {
        None => Ordering::Equal,
        Some(s) => {
            let ord = match s.field {
                SortField::Name => a.name().cmp(b.name()),
                SortField::CreatedAt => a.created_at().cmp(b.created_at()),
                SortField::UpdatedAt => a.updated_at().cmp(b.updated_at()),
            };
            if s.descending { ord.reverse() } else { ord }
        }
    };
    primary.then_with(|| a.id().cmp(b.id()))
}

/// Record indices in every supported order, computed once.
#[derive(Debug, Clone, Default)]
pub(crate) struct Orders(Vec<Vec<u32>>);

impl Orders {
    pub(crate) fn compute<R: Sortable>(records: &[R]) -> Self {
        Orders(
            Sort::all()
                .map(|sort| {
                    let mut idx: Vec<u32> = (0..records.len() as u32).collect();
                    idx.sort_by(|&a, &b| compare(&records[a as usize], &records[b as usize], sort));
                    idx
                })
                .collect(),
        )
    }

    pub(crate) fn get(&self, sort: Option<Sort>) -> &[u32] {
        self.0.get(Sort::slot(sort)).map_or(&[], Vec::as_slice)
    }
}
