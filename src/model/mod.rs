//! The records of the API (Part 2): companies and contacts, read leniently, and their sorts.
//!
//! Each record is read by the one visitor of [`record`], over the record's table of fields:
//! the named fields into their types, every other field into `extra`. Where the API leaves a
//! type or format open, a field is lenient: a value that cannot be read is kept raw in `extra`
//! under the field's own name, and the name is listed in the record's fallbacks, so nothing
//! the server sends is lost and no listing fails for it.

mod company;
mod contact;
mod record;
mod sort;
#[cfg(test)]
pub(crate) mod tests;

pub use company::{Company, CompanySort, CompanyStatus};
pub use contact::{Contact, ContactSort};
pub use sort::Sort;
