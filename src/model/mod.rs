//! The records the API lists and how they are read: [`Company`] and [`Contact`], the fields
//! the API does not name ([`Extra`]), and the sort fields of each.
//!
//! This layer knows nothing of requests; the pagination and list layers above it use
//! [`Resource`] to name an endpoint and decode its pages.

use serde::de::DeserializeOwned;

macro_rules! sort_fields {
    ($(#[$doc:meta])* $name:ident for $resource:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            /// `name`
            Name,
            /// `createdAt`
            CreatedAt,
            /// `updatedAt`
            UpdatedAt,
        }

        impl $name {
            /// The field name on the wire.
            pub fn field(self) -> &'static str {
                match self {
                    $name::Name => "name",
                    $name::CreatedAt => "createdAt",
                    $name::UpdatedAt => "updatedAt",
                }
            }

            /// Ascending order on this field.
            pub fn asc(self) -> $crate::model::SortOrder<$name> {
                $crate::model::SortOrder::new(self, false)
            }

            /// Descending order on this field.
            pub fn desc(self) -> $crate::model::SortOrder<$name> {
                $crate::model::SortOrder::new(self, true)
            }
        }

        impl $crate::model::SortField for $name {
            fn wire_name(self) -> &'static str {
                self.field()
            }
        }

        impl $crate::model::sealed::SortFieldOf for $name {}

        impl From<$name> for $crate::Sort {
            fn from(field: $name) -> $crate::Sort {
                $crate::Sort::ascending(field.field())
            }
        }

        impl $crate::model::sealed::IntoSortOf<$resource> for $name {}
        impl $crate::model::sealed::IntoSortOf<$resource> for $crate::model::SortOrder<$name> {}

        impl $crate::model::IntoSort<$resource> for $name {
            fn into_sort(self) -> Result<$crate::Sort, $crate::Error> {
                Ok(self.into())
            }
        }

        impl $crate::model::IntoSort<$resource> for $crate::model::SortOrder<$name> {
            fn into_sort(self) -> Result<$crate::Sort, $crate::Error> {
                Ok(self.into())
            }
        }
    };
}

mod company;
mod contact;
mod extra;
pub(crate) mod record;
mod sort;

pub use company::{Company, CompanySort, CompanyStatus};
pub use contact::{Contact, ContactSort};
pub use extra::Extra;
pub use sort::{IntoSort, Sort, SortField, SortOrder};

/// A resource that can be listed. Implemented by [`Company`](crate::Company) and
/// [`Contact`](crate::Contact).
pub trait Resource: DeserializeOwned + record::Record + Send + Sync + 'static + sealed::Sealed {
    /// The path below the versioned API root (`companies`).
    const PATH: &'static str;
    /// The sort fields the API names; [`List::sort`](crate::List::sort) takes any other field name too.
    const SORT_FIELDS: &'static [&'static str];
}

pub(crate) mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::Company {}
    impl Sealed for crate::Contact {}

    /// Implemented by the typed sort fields only.
    pub trait SortFieldOf {}

    /// Implemented by what `IntoSort<R>` takes, and nothing else.
    pub trait IntoSortOf<R> {}
}
