use super::order::SortField;
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

fn key<'a>(c: &'a DatasetCompany, field: &str) -> &'a str {
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
