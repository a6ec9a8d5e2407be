//! Sort orders (API Part 4.1): a field name, ascending, or descending with a leading `-`.

use std::fmt;
use std::marker::PhantomData;

/// A sort order for a list of `T`: `createdAt` ascending, `-createdAt` descending.
///
/// Made from the typed fields of a resource (`CompanySort::CreatedAt.desc()`), which only sort
/// their own resource, or from the wire form as a string, for any field and any list (the
/// spec names only the common fields; the server decides what it can sort on). A malformed
/// string (empty, spaces, commas, `--`) is refused by [`List::sort`](crate::List::sort)
/// before anything is sent.
///
/// ```
/// use business_records::{Company, CompanySort, Sort};
/// let sort: Sort<Company> = "-createdAt".into();
/// assert_eq!(sort, CompanySort::CreatedAt.desc());
/// assert!(sort.is_descending());
/// assert_eq!(Sort::<Company>::from("employeeCount").to_string(), "employeeCount");
/// ```
///
/// A typed field of another resource does not compile:
///
/// ```compile_fail
/// # async fn run(client: business_records::Client) {
/// use business_records::ContactSort;
/// let _ = client.companies().sort(ContactSort::Name); // `ContactSort` does not sort companies
/// # }
/// ```
pub struct Sort<T> {
    /// The wire form: the field, after a `-` when descending.
    text: String,
    resource: PhantomData<fn() -> T>,
}

impl<T> Sort<T> {
    /// The field name.
    pub fn field(&self) -> &str {
        self.text.strip_prefix('-').unwrap_or(&self.text)
    }

    /// True for descending order.
    pub fn is_descending(&self) -> bool {
        self.text.starts_with('-')
    }

    /// Whether the field is a name the API can take: not empty, no spaces, control characters
    /// or commas, no second `-`.
    pub(crate) fn is_well_formed(&self) -> bool {
        let allowed = |c: char| !c.is_whitespace() && !c.is_control() && c != ',';
        let field = self.field();
        !field.is_empty() && !field.starts_with('-') && field.chars().all(allowed)
    }
}

/// The wire form: a field name, with a leading `-` for descending order.
impl<T> From<&str> for Sort<T> {
    fn from(text: &str) -> Self {
        Sort::from(text.to_owned())
    }
}

impl<T> From<String> for Sort<T> {
    fn from(text: String) -> Self {
        Sort { text, resource: PhantomData }
    }
}

impl<T> fmt::Display for Sort<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl<T> fmt::Debug for Sort<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sort({self})")
    }
}

impl<T> Clone for Sort<T> {
    fn clone(&self) -> Self {
        Sort::from(self.text.clone())
    }
}

impl<T> PartialEq for Sort<T> {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<T> Eq for Sort<T> {}

/// The sortable fields of a resource, as an enum with `asc()` and `desc()`.
macro_rules! sort_fields {
    ($(#[$doc:meta])* $name:ident for $resource:ty) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            /// `name`.
            Name,
            /// `createdAt`.
            CreatedAt,
            /// `updatedAt`.
            UpdatedAt,
        }

        impl $name {
            /// The field's name on the wire.
            pub const fn field(self) -> &'static str {
                match self {
                    $name::Name => "name",
                    $name::CreatedAt => "createdAt",
                    $name::UpdatedAt => "updatedAt",
                }
            }

            /// Ascending on this field.
            pub fn asc(self) -> $crate::Sort<$resource> {
                $crate::Sort::from(self.field())
            }

            /// Descending on this field.
            pub fn desc(self) -> $crate::Sort<$resource> {
                $crate::Sort::from(format!("-{}", self.field()))
            }
        }

        /// Ascending on the field.
        impl From<$name> for $crate::Sort<$resource> {
            fn from(field: $name) -> Self {
                field.asc()
            }
        }
    };
}

pub(crate) use sort_fields;
