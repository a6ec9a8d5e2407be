//! The deterministic records the reference server serves.
//!
//! Records are generated from a seed with a small splitmix64 generator, so the
//! same `(companies, contacts_per_company, seed)` always gives the same data,
//! on every platform and with every version of every dependency.

use std::cmp::Ordering;

use serde::Serialize;

/// Company status values used in the reference data.
pub const COMPANY_STATUSES: [&str; 4] = ["active", "inactive", "prospect", "churned"];

/// A company as served by `GET /v1/companies`.
///
/// Serialises to the wire shape (`createdAt`, `employeeCount`, ...).
/// `industry`, `employeeCount` and `country` are fields the specification
/// does not name; clients are expected to keep them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Company {
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

/// A contact as served by `GET /v1/contacts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Contact {
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
    fn slot(sort: Option<Self>) -> usize {
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

    fn all() -> impl Iterator<Item = Option<Self>> {
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
sortable!(Company);
sortable!(Contact);

/// The ordering rule of the list endpoints.
///
/// The sort field compares byte-wise (timestamps share one fixed format, so
/// this is chronological); the direction applies to the field only; ties are
/// broken by ascending `id` in both directions. Without a sort, records are
/// ordered by ascending `id`.
pub(crate) fn compare<R: Sortable>(a: &R, b: &R, sort: Option<Sort>) -> Ordering {
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
struct Orders(Vec<Vec<u32>>);

impl Orders {
    fn compute<R: Sortable>(records: &[R]) -> Self {
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

    fn get(&self, sort: Option<Sort>) -> &[u32] {
        self.0.get(Sort::slot(sort)).map_or(&[], Vec::as_slice)
    }
}

/// The companies and contacts a reference server serves.
///
/// The `*_sorted` helpers return records in exactly the order the list
/// endpoints use, so tests can compare what a client received with what it
/// should have received.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// All companies, in ascending id order.
    pub companies: Vec<Company>,
    /// All contacts, in ascending id order (grouped by company).
    pub contacts: Vec<Contact>,
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
    pub fn company(&self, id: &str) -> Option<&Company> {
        self.companies.iter().find(|c| c.id == id)
    }

    /// The contacts of one company, in ascending id order.
    pub fn contacts_of<'a>(&'a self, company_id: &'a str) -> impl Iterator<Item = &'a Contact> {
        self.contacts.iter().filter(move |c| c.company_id == company_id)
    }

    /// Companies in the order `GET /v1/companies?sort={sort}&status={status}`
    /// returns them. An empty `sort` means no `sort` parameter.
    ///
    /// # Panics
    ///
    /// If `sort` is not empty and not one of `name`, `createdAt`,
    /// `updatedAt` (optionally prefixed with `-`).
    pub fn companies_sorted(&self, sort: &str, status: Option<&str>) -> Vec<&Company> {
        let sort = parse_sort_or_panic(sort);
        self.company_indices(sort, status).into_iter().map(|i| &self.companies[i as usize]).collect()
    }

    /// Contacts in the order `GET /v1/contacts?sort={sort}&companyId={company_id}`
    /// returns them. An empty `sort` means no `sort` parameter.
    ///
    /// # Panics
    ///
    /// If `sort` is not empty and not a valid sort value.
    pub fn contacts_sorted(&self, sort: &str, company_id: Option<&str>) -> Vec<&Contact> {
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

fn digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// splitmix64: tiny, fast, and its output stream is fixed forever.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const ADJECTIVES: &[&str] = &[
    "Blue", "Bright", "Cedar", "Copper", "Crystal", "Delta", "Eastern", "Golden", "Granite", "Harbor",
    "Iron", "Lunar", "Maple", "Northern", "Oak", "Pacific", "Prime", "Quantum", "Red", "Silver", "Summit",
    "Swift", "Union", "Vertex",
];
const NOUNS: &[&str] = &[
    "Analytics",
    "Bakery",
    "Bridge",
    "Café",
    "Dynamics",
    "Energy",
    "Foods",
    "Freight",
    "Health",
    "Labs",
    "Logistics",
    "Media",
    "Metals",
    "Motors",
    "Networks",
    "Partners",
    "Robotics",
    "Software",
    "Solar",
    "Studios",
    "Systems",
    "Textiles",
    "Ventures",
    "Works",
];
const SUFFIXES: &[&str] = &["", "", "", " Inc", " LLC", " Ltd", " GmbH", " & Co", " Group", " AG"];
const INDUSTRIES: &[&str] =
    &["software", "manufacturing", "retail", "healthcare", "finance", "logistics", "energy", "media"];
const COUNTRIES: &[&str] = &["US", "DE", "GB", "FR", "NL", "SE", "JP", "CA", "AU", "BR"];
const FIRST_NAMES: &[&str] = &[
    "Ada", "Ben", "Chloé", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kofi", "Lena",
    "Mateo", "Nora", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara", "Uma", "Victor",
];
const LAST_NAMES: &[&str] = &[
    "Adams", "Berg", "Chen", "Dubois", "Evans", "Fischer", "García", "Hansen", "Ito", "Jensen", "Kowalski",
    "Lopez", "Müller", "Nakamura", "O'Brien", "Patel", "Rossi", "Schmidt", "Tanaka",
];
const TITLES: &[&str] = &["CEO", "CTO", "Buyer", "Engineer", "Office Manager", "Sales Lead"];

/// 2020-01-01T00:00:00Z.
const EPOCH_2020: i64 = 1_577_836_800;
/// Hours in four years: creation times are whole hours, so ties occur.
const CREATION_HOURS: u64 = 4 * 365 * 24;

/// A company and its creation time in seconds.
fn gen_company(rng: &mut SplitMix64, n: usize, width: usize) -> (Company, i64) {
    let name = format!("{} {}{}", rng.pick(ADJECTIVES), rng.pick(NOUNS), rng.pick(SUFFIXES));
    let status = match rng.below(100) {
        0..50 => "active",
        50..65 => "inactive",
        65..90 => "prospect",
        _ => "churned",
    };
    let created = EPOCH_2020 + rng.below(CREATION_HOURS) as i64 * 3600;
    let updated = touched(rng, created);
    let company = Company {
        id: format!("cmp_{n:0width$}"),
        name,
        status: status.to_owned(),
        created_at: rfc3339(created),
        updated_at: rfc3339(updated),
        industry: rng.pick(INDUSTRIES).to_owned(),
        employee_count: 1 + rng.below(5000) as u32,
        country: rng.pick(COUNTRIES).to_owned(),
    };
    (company, created)
}

fn gen_contact(
    rng: &mut SplitMix64,
    company: &Company,
    company_created: i64,
    n: usize,
    width: usize,
) -> Contact {
    let first = rng.pick(FIRST_NAMES);
    let last = rng.pick(LAST_NAMES);
    let created = company_created + rng.below(300 * 24) as i64 * 3600;
    let updated = touched(rng, created);
    Contact {
        id: format!("cnt_{n:0width$}"),
        company_id: company.id.clone(),
        name: format!("{first} {last}"),
        email: format!(
            "{}.{}{}@{}.example",
            ascii_slug(first),
            ascii_slug(last),
            n,
            ascii_slug(&company.name)
        ),
        created_at: rfc3339(created),
        updated_at: rfc3339(updated),
        title: rng.pick(TITLES).to_owned(),
    }
}

/// An update time: a fifth of the records were never modified.
fn touched(rng: &mut SplitMix64, created: i64) -> i64 {
    if rng.below(5) == 0 { created } else { created + 1 + rng.below(400 * 86_400) as i64 }
}

fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn ascii_slug(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_and_fast() {
        let start = std::time::Instant::now();
        let a = Dataset::generate(1000, 3, 42);
        let elapsed = start.elapsed();
        let b = Dataset::generate(1000, 3, 42);
        assert_eq!(a.companies, b.companies);
        assert_eq!(a.contacts, b.contacts);
        assert_ne!(a.companies, Dataset::generate(1000, 3, 43).companies);
        assert!(elapsed < std::time::Duration::from_millis(500), "took {elapsed:?}");
        assert_eq!(a.companies.len(), 1000);
        assert_eq!(a.contacts.len(), 3000);
        assert_eq!(a.companies[0].id, "cmp_0001");
        assert_eq!(a.companies[999].id, "cmp_1000");
        assert_eq!(a.contacts[0].id, "cnt_00001");
        assert_eq!(a.contacts[2].company_id, "cmp_0001");
        assert_eq!(a.contacts[3].company_id, "cmp_0002");
        assert!(a.companies.iter().all(|c| COMPANY_STATUSES.contains(&c.status.as_str())));
        assert!(a.companies.iter().all(|c| c.created_at.len() == 20 && c.created_at.ends_with('Z')));
        assert!(a.companies.iter().all(|c| c.updated_at >= c.created_at));
    }

    #[test]
    fn ids_stay_ordered_beyond_padding() {
        let d = Dataset::generate(12_000, 0, 1);
        assert_eq!(d.companies[0].id, "cmp_00001");
        assert!(d.companies.windows(2).all(|w| w[0].id < w[1].id));
    }

    #[test]
    fn sort_parsing() {
        assert_eq!(Sort::parse("-createdAt"), Some(Sort { field: SortField::CreatedAt, descending: true }));
        assert_eq!(Sort::parse("name"), Some(Sort { field: SortField::Name, descending: false }));
        for bad in ["", "-", "--name", "Name", "created_at", "+name", "id"] {
            assert_eq!(Sort::parse(bad), None, "{bad}");
        }
        let slots: std::collections::HashSet<_> = Sort::all().map(Sort::slot).collect();
        assert_eq!(slots.len(), 7);
    }

    fn key<'a>(c: &'a Company, field: &str) -> &'a str {
        match field {
            "name" => &c.name,
            "createdAt" => &c.created_at,
            _ => &c.updated_at,
        }
    }

    #[test]
    fn sorting_is_stable_with_id_tie_breaker() {
        let d = Dataset::generate(1000, 0, 42);
        for field in ["name", "createdAt", "updatedAt"] {
            for desc in [false, true] {
                let sort = if desc { format!("-{field}") } else { field.to_owned() };
                let list = d.companies_sorted(&sort, Some("active"));
                assert!(list.iter().all(|c| c.status == "active"));
                let mut ties = 0;
                for w in list.windows(2) {
                    let (a, b) = (key(w[0], field), key(w[1], field));
                    if a == b {
                        ties += 1;
                        assert!(w[0].id < w[1].id, "{sort}: tie not broken by ascending id");
                    } else {
                        assert_eq!(a < b, !desc, "{sort}: wrong direction");
                    }
                }
                if field != "updatedAt" {
                    assert!(ties > 0, "{sort}: the data should contain ties");
                }
            }
        }
        let all = d.companies_sorted("", None);
        assert_eq!(all.len(), 1000);
        assert!(all.windows(2).all(|w| w[0].id < w[1].id));
        let active = d.companies.iter().filter(|c| c.status == "active").count();
        assert_eq!(d.companies_sorted("-name", Some("active")).len(), active);
        assert!(d.companies_sorted("name", Some("nope")).is_empty());
    }

    #[test]
    fn contacts_filter_by_company() {
        let d = Dataset::generate(10, 3, 7);
        let list = d.contacts_sorted("-updatedAt", Some("cmp_0004"));
        assert_eq!(list.len(), 3);
        assert!(list.iter().all(|c| c.company_id == "cmp_0004"));
        assert_eq!(d.contacts_of("cmp_0004").count(), 3);
        assert!(list.windows(2).all(|w| w[0].updated_at >= w[1].updated_at));
        let json = serde_json::to_value(list[0]).unwrap();
        assert!(json.get("companyId").is_some() && json.get("createdAt").is_some());
    }

    #[test]
    #[should_panic(expected = "invalid sort value")]
    fn helper_rejects_bad_sort() {
        let _ = Dataset::generate(1, 0, 1).companies_sorted("bogus", None);
    }
}
