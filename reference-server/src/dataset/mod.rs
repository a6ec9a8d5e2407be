//! The deterministic records the reference server serves.
//!
//! Records are generated from a seed with a small splitmix64 generator, so the
//! same `(companies, contacts_per_company, seed)` always gives the same data,
//! on every platform and with every version of every dependency.

mod generate;
mod order;

use serde::Serialize;

use generate::{SplitMix64, digits, gen_company, gen_contact};
use order::Orders;
pub(crate) use order::Sort;

/// Company status values used in the reference data.
pub const COMPANY_STATUSES: [&str; 4] = ["active", "inactive", "prospect", "churned"];

/// A company of the reference [`Dataset`], as served by `GET /v1/companies` (the client's
/// view of it is `business_records::Company`).
///
/// Serialises to the wire shape (`createdAt`, `employeeCount`, ...).
/// `industry`, `employeeCount` and `country` are fields the specification
/// does not name; clients are expected to keep them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DatasetCompany {
    /// Identifier, `cmp_0001` style (zero-padded, so string order is numeric order).
    pub id: String,
    /// Display name; not unique.
    pub name: String,
    /// One of [`COMPANY_STATUSES`].
    pub status: String,
    /// Creation time, RFC 3339 UTC with second precision (`2024-03-01T12:00:00Z`).
    pub created_at: String,
    /// Last modification time, same format as `created_at`.
    pub updated_at: String,
    /// Industry (a field the specification does not name).
    pub industry: String,
    /// Head count (a field the specification does not name).
    pub employee_count: u32,
    /// ISO 3166 country code (a field the specification does not name).
    pub country: String,
}

/// A contact of the reference [`Dataset`], as served by `GET /v1/contacts` (the client's
/// view of it is `business_records::Contact`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DatasetContact {
    /// Identifier, `cnt_00001` style (zero-padded).
    pub id: String,
    /// The owning company's id.
    pub company_id: String,
    /// Full name; not unique.
    pub name: String,
    /// E-mail address.
    pub email: String,
    /// Creation time, RFC 3339 UTC with second precision.
    pub created_at: String,
    /// Last modification time, RFC 3339 UTC with second precision.
    pub updated_at: String,
    /// Job title (a field the specification does not name).
    pub title: String,
}

/// The companies and contacts a reference server serves.
///
/// The `*_sorted` helpers return records in exactly the order the list
/// endpoints use, so tests can compare what a client received with what it
/// should have received.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// All companies, in ascending id order.
    pub companies: Vec<DatasetCompany>,
    /// All contacts, in ascending id order (grouped by company).
    pub contacts: Vec<DatasetContact>,
    company_orders: Orders,
    contact_orders: Orders,
}

impl Dataset {
    /// Generates `companies` companies with `contacts_per_company` contacts
    /// each, deterministically from `seed`.
    pub fn generate(companies: usize, contacts_per_company: usize, seed: u64) -> Self {
        let mut rng = SplitMix64(seed);
        let company_width = digits(companies).max(4);
        let contact_width = digits(companies.saturating_mul(contacts_per_company)).max(5);
        let mut company_list = Vec::with_capacity(companies);
        let mut contact_list = Vec::with_capacity(companies.saturating_mul(contacts_per_company));
        for i in 1..=companies {
            let (company, created) = gen_company(&mut rng, i, company_width);
            for _ in 0..contacts_per_company {
                let n = contact_list.len() + 1;
                contact_list.push(gen_contact(&mut rng, &company, created, n, contact_width));
            }
            company_list.push(company);
        }
        Self {
            company_orders: Orders::compute(&company_list),
            contact_orders: Orders::compute(&contact_list),
            companies: company_list,
            contacts: contact_list,
        }
    }

    /// The company with this id.
    pub fn company(&self, id: &str) -> Option<&DatasetCompany> {
        self.companies.iter().find(|c| c.id == id)
    }

    /// The contacts of one company, in ascending id order.
    pub fn contacts_of<'a>(&'a self, company_id: &'a str) -> impl Iterator<Item = &'a DatasetContact> {
        self.contacts.iter().filter(move |c| c.company_id == company_id)
    }

    /// Companies in the order `GET /v1/companies?sort={sort}&status={status}`
    /// returns them. An empty `sort` means no `sort` parameter.
    ///
    /// # Panics
    ///
    /// If `sort` is not empty and not one of `name`, `createdAt`,
    /// `updatedAt` (optionally prefixed with `-`).
    pub fn companies_sorted(&self, sort: &str, status: Option<&str>) -> Vec<&DatasetCompany> {
        let sort = parse_sort_or_panic(sort);
        self.company_indices(sort, status).into_iter().map(|i| &self.companies[i as usize]).collect()
    }

    /// Contacts in the order `GET /v1/contacts?sort={sort}&companyId={company_id}`
    /// returns them. An empty `sort` means no `sort` parameter.
    ///
    /// # Panics
    ///
    /// If `sort` is not empty and not a valid sort value.
    pub fn contacts_sorted(&self, sort: &str, company_id: Option<&str>) -> Vec<&DatasetContact> {
        let sort = parse_sort_or_panic(sort);
        self.contact_indices(sort, company_id).into_iter().map(|i| &self.contacts[i as usize]).collect()
    }

    /// Indices of the companies matching `status`, in `sort` order.
    pub(crate) fn company_indices(&self, sort: Option<Sort>, status: Option<&str>) -> Vec<u32> {
        let order = self.company_orders.get(sort);
        match status {
            None => order.to_vec(),
            Some(s) => order.iter().copied().filter(|&i| self.companies[i as usize].status == s).collect(),
        }
    }

    /// Indices of the contacts matching `company_id`, in `sort` order.
    pub(crate) fn contact_indices(&self, sort: Option<Sort>, company_id: Option<&str>) -> Vec<u32> {
        let order = self.contact_orders.get(sort);
        match company_id {
            None => order.to_vec(),
            Some(c) => order.iter().copied().filter(|&i| self.contacts[i as usize].company_id == c).collect(),
        }
    }
}

fn parse_sort_or_panic(sort: &str) -> Option<Sort> {
    if sort.is_empty() {
        return None;
    }
    match Sort::parse(sort) {
        Some(s) => Some(s),
        None => panic!("invalid sort value `{sort}`"),
    }
}

#[cfg(test)]
mod tests;
