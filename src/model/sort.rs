//! Sort orders: the typed fields of each resource, and any field by name (API Part 4.1:
//! `sort` is a field name, ascending, or descending with a leading `-`).

use std::fmt;
use std::str::FromStr;

use super::{Resource, sealed};
use crate::Error;

/// A typed sort field ([`CompanySort`](crate::CompanySort), [`ContactSort`](crate::ContactSort)).
pub trait SortField: Copy + sealed::SortFieldOf {
    /// The field name on the wire.
    fn wire_name(self) -> &'static str;
}

/// A typed field and a direction, from [`CompanySort::asc`](crate::CompanySort::asc) and
/// friends: it can only sort the resource the field belongs to.
///
/// ```
/// use business_records::{CompanySort, Sort};
/// let order = CompanySort::CreatedAt.desc();
/// assert_eq!(order.to_string(), "-createdAt");
/// assert_eq!(Sort::from(order), "-createdAt".parse::<Sort>()?);
/// # Ok::<(), business_records::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SortOrder<F> {
    field: F,
    descending: bool,
}

impl<F: SortField> SortOrder<F> {
    pub(crate) fn new(field: F, descending: bool) -> Self {
        SortOrder { field, descending }
    }

    /// The field.
    pub fn field(self) -> F {
        self.field
    }

    /// True for descending order.
    pub fn is_descending(self) -> bool {
        self.descending
    }
}

impl<F: SortField> From<SortOrder<F>> for Sort {
    fn from(order: SortOrder<F>) -> Sort {
        Sort { field: order.field.wire_name().to_owned(), descending: order.descending }
    }
}

impl<F: SortField> PartialEq<SortOrder<F>> for Sort {
    fn eq(&self, other: &SortOrder<F>) -> bool {
        self.descending == other.descending && self.field == other.field.wire_name()
    }
}

impl<F: SortField> fmt::Display for SortOrder<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.descending {
            f.write_str("-")?;
        }
        f.write_str(self.field.wire_name())
    }
}

/// A sort order on any field, ascending or descending (`-field` on the wire): the string form,
/// for fields the typed enums do not name.
///
/// Built from a field name or parsed from the wire form; any resource takes it, and the
/// server decides whether it can sort on the field:
///
/// ```
/// use business_records::{CompanySort, Sort};
/// let sort: Sort = "-createdAt".parse()?;
/// assert_eq!(sort, CompanySort::CreatedAt.desc());
/// assert!(sort.is_descending());
/// assert_eq!(Sort::ascending("employeeCount").to_string(), "employeeCount");
/// # Ok::<(), business_records::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Sort {
    field: String,
    descending: bool,
}

impl Sort {
    /// Ascending on `field`.
    pub fn ascending(field: impl Into<String>) -> Self {
        Sort { field: field.into(), descending: false }
    }

    /// Descending on `field`.
    pub fn descending(field: impl Into<String>) -> Self {
        Sort { field: field.into(), descending: true }
    }

    /// The field name.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// True for descending order.
    pub fn is_descending(&self) -> bool {
        self.descending
    }
}

impl fmt::Display for Sort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.descending {
            f.write_str("-")?;
        }
        f.write_str(&self.field)
    }
}

impl FromStr for Sort {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let (descending, field) = match s.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, s),
        };
        let printable = |c: char| !c.is_whitespace() && !c.is_control() && c != ',';
        if field.is_empty() || field.starts_with('-') || !field.chars().all(printable) {
            return Err(Error::invalid(
                "sort",
                format!(
                    "expected a field name (no spaces or commas), optionally with a leading `-`, got {:?}",
                    crate::text::server_text(s)
                ),
            ));
        }
        Ok(Sort { field: field.to_owned(), descending })
    }
}

/// Anything [`List::sort`](crate::List::sort) on resource `R` takes: `R`'s own typed field (ascending) or
/// [`SortOrder`], a [`Sort`], or the wire form as a string (`"-createdAt"`, any field).
///
/// A typed field of another resource is refused at compile time:
///
/// ```compile_fail
/// # async fn run(client: business_records::Client) {
/// use business_records::ContactSort;
/// let _ = client.companies().sort(ContactSort::Name); // `ContactSort` does not sort companies
/// # }
/// ```
///
/// ```compile_fail
/// # async fn run(client: business_records::Client) {
/// use business_records::CompanySort;
/// let _ = client.contacts().sort(CompanySort::CreatedAt.desc());
/// # }
/// ```
///
/// The trait is sealed: the list above is all it takes.
pub trait IntoSort<R>: sealed::IntoSortOf<R> {
    /// Converts, or says why not.
    fn into_sort(self) -> Result<Sort, Error>;
}

impl<R: Resource> sealed::IntoSortOf<R> for Sort {}
impl<R: Resource> sealed::IntoSortOf<R> for &str {}
impl<R: Resource> sealed::IntoSortOf<R> for String {}

impl<R: Resource> IntoSort<R> for Sort {
    fn into_sort(self) -> Result<Sort, Error> {
        Ok(self)
    }
}

impl<R: Resource> IntoSort<R> for &str {
    fn into_sort(self) -> Result<Sort, Error> {
        self.parse()
    }
}

impl<R: Resource> IntoSort<R> for String {
    fn into_sort(self) -> Result<Sort, Error> {
        self.parse()
    }
}
