//! The generator of the records: splitmix64 and word lists.

use serde_json::json;

use super::Record;

/// `companies` companies with `contacts_per_company` contacts each, from `seed`: both in
/// ascending id order.
pub(super) fn generate(
    companies: usize,
    contacts_per_company: usize,
    seed: u64,
) -> (Vec<Record>, Vec<Record>) {
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
    (company_list, contact_list)
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
fn gen_company(rng: &mut SplitMix64, n: usize, width: usize) -> (Record, i64) {
    let name = format!("{} {}{}", rng.pick(ADJECTIVES), rng.pick(NOUNS), rng.pick(SUFFIXES));
    let status = match rng.below(100) {
        0..50 => "active",
        50..65 => "inactive",
        65..90 => "prospect",
        _ => "churned",
    };
    let created = EPOCH_2020 + rng.below(CREATION_HOURS) as i64 * 3600;
    let updated = touched(rng, created);
    let company = json!({
        "id": format!("cmp_{n:0width$}"),
        "name": name,
        "status": status,
        "createdAt": rfc3339(created),
        "updatedAt": rfc3339(updated),
        "industry": rng.pick(INDUSTRIES),
        "employeeCount": 1 + rng.below(5000),
        "country": rng.pick(COUNTRIES),
    });
    (record(company), created)
}

fn gen_contact(
    rng: &mut SplitMix64,
    company: &Record,
    company_created: i64,
    n: usize,
    width: usize,
) -> Record {
    let first = rng.pick(FIRST_NAMES);
    let last = rng.pick(LAST_NAMES);
    let created = company_created + rng.below(300 * 24) as i64 * 3600;
    let updated = touched(rng, created);
    let company_name = company.str("name").unwrap_or_default();
    record(json!({
        "id": format!("cnt_{n:0width$}"),
        "companyId": company.id(),
        "name": format!("{first} {last}"),
        "email": format!("{}.{}{}@{}.example", ascii_slug(first), ascii_slug(last), n, ascii_slug(company_name)),
        "createdAt": rfc3339(created),
        "updatedAt": rfc3339(updated),
        "title": rng.pick(TITLES),
    }))
}

/// A generated object: always a record.
fn record(value: serde_json::Value) -> Record {
    match value {
        serde_json::Value::Object(fields) => Record(fields),
        _ => Record(serde_json::Map::new()),
    }
}

/// An update time: a fifth of the records were never modified.
fn touched(rng: &mut SplitMix64, created: i64) -> i64 {
    if rng.below(5) == 0 { created } else { created + 1 + rng.below(400 * 86_400) as i64 }
}

pub(super) fn rfc3339(secs: i64) -> String {
    chrono::DateTime::from_timestamp(secs, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn ascii_slug(s: &str) -> String {
    s.chars().filter(char::is_ascii_alphanumeric).map(|c| c.to_ascii_lowercase()).collect()
}
