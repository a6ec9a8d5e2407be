use serde_json::json;

use super::*;

fn record(value: Value) -> Record {
    Record::from_json(value, "record").unwrap()
}

fn ids<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<&'a str> {
    records.into_iter().map(Record::id).collect()
}

#[test]
fn generation_is_deterministic_and_fast() {
    let start = std::time::Instant::now();
    let a = Dataset::generate(1000, 3, 42);
    let elapsed = start.elapsed();
    let b = Dataset::generate(1000, 3, 42);
    assert_eq!(a.companies(), b.companies());
    assert_eq!(a.contacts(), b.contacts());
    assert_ne!(a.companies(), Dataset::generate(1000, 3, 43).companies());
    assert!(elapsed < std::time::Duration::from_millis(500), "took {elapsed:?}");
    let (companies, contacts) = (a.companies(), a.contacts());
    assert_eq!((companies.len(), contacts.len()), (1000, 3000));
    assert_eq!((companies[0].id(), companies[999].id()), ("cmp_0001", "cmp_1000"));
    assert_eq!(contacts[0].id(), "cnt_00001");
    assert_eq!(
        (contacts[2]["companyId"].as_str(), contacts[3]["companyId"].as_str()),
        (Some("cmp_0001"), Some("cmp_0002"))
    );
    assert!(companies.iter().all(|c| COMPANY_STATUSES.contains(&c.str("status").unwrap())));
    assert!(companies.iter().all(|c| c.str("createdAt").is_some_and(|t| t.len() == 20 && t.ends_with('Z'))));
    assert!(companies.iter().all(|c| c.str("updatedAt") >= c.str("createdAt")));
    assert!(companies[0]["employeeCount"].is_u64() && contacts[0]["email"].is_string());
}

#[test]
fn ids_stay_ordered_beyond_padding() {
    let d = Dataset::generate(12_000, 0, 1);
    assert_eq!(d.companies()[0].id(), "cmp_00001");
    assert!(d.companies().windows(2).all(|w| w[0].id() < w[1].id()));
}

#[test]
fn records_are_objects_with_an_id() {
    for bad in [json!([1]), json!("x"), json!({}), json!({"id": 7}), json!({"id": ""})] {
        let error = Record::from_json(bad.clone(), "company").unwrap_err();
        assert!(error.to_string().starts_with("invalid argument `company`"), "{bad}: {error}");
    }
    let acme = record(json!({"id": "a/b ü", "name": "Acme"}));
    assert_eq!((acme.id(), acme.str("name"), &acme["missing"]), ("a/b ü", Some("Acme"), &Value::Null));
    assert_eq!(acme.to_json(), json!({"id": "a/b ü", "name": "Acme"}));
}

#[test]
fn sorting_is_stable_with_id_tie_breaker() {
    let d = Dataset::generate(1000, 0, 42);
    for field in ["name", "createdAt", "updatedAt"] {
        for desc in [false, true] {
            let sort = if desc { format!("-{field}") } else { field.to_owned() };
            let list = d.companies_sorted(&sort, Some("active"));
            assert!(list.iter().all(|c| c["status"] == "active"));
            let mut ties = 0;
            for w in list.windows(2) {
                let (a, b) = (w[0].str(field), w[1].str(field));
                if a == b {
                    ties += 1;
                    assert!(w[0].id() < w[1].id(), "{sort}: tie not broken by ascending id");
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
    assert!(all.windows(2).all(|w| w[0].id() < w[1].id()));
    let active = d.companies().iter().filter(|c| c["status"] == "active").count();
    assert_eq!(d.companies_sorted("-name", Some("active")).len(), active);
    assert!(d.companies_sorted("name", Some("nope")).is_empty());
}

#[test]
fn any_field_sorts_by_type_then_value_and_filters_by_equality() {
    let records = vec![
        record(json!({"id": "a", "amount": 10, "stage": "won", "open": true})),
        record(json!({"id": "b", "amount": "ten", "stage": "won"})),
        record(json!({"id": "c", "amount": 9.5, "stage": "lost", "open": false})),
        record(json!({"id": "d", "stage": "won"})),
        record(json!({"id": "e", "amount": null, "stage": 3})),
        record(json!({"id": "f", "amount": -2})),
        record(json!({"id": "g", "amount": 18_446_744_073_709_551_615u64})),
    ];
    let table = Table::new(records.clone());
    let sorted = |sort: &str, filters: &[(&str, &str)]| {
        let filters: Vec<(String, String)> =
            filters.iter().map(|(f, v)| ((*f).into(), (*v).into())).collect();
        let order = order(&records, Sort::parse(sort).as_ref(), &filters);
        order.into_iter().map(|i| records[i as usize].id()).collect::<Vec<_>>()
    };
    // Missing and null first, then numbers by value, then strings.
    assert_eq!(sorted("amount", &[]), ["d", "e", "f", "c", "a", "g", "b"]);
    assert_eq!(sorted("-amount", &[]), ["b", "g", "a", "c", "f", "d", "e"], "ties keep ascending id");
    assert_eq!(sorted("", &[("stage", "won")]), ["a", "b", "d"]);
    assert_eq!(sorted("", &[("stage", "3")]), ["e"], "a number equals its JSON text");
    assert_eq!(sorted("open", &[("open", "false")]), ["c"]);
    assert_eq!(sorted("", &[("stage", "won"), ("amount", "10")]), ["a"]);
    assert_eq!(table.records().len(), 7);
}

#[test]
fn a_table_keeps_id_order_and_forgets_its_orders_on_every_write() {
    let later = record(json!({"id": "b", "name": "second b"}));
    let mut table = Table::new(vec![
        record(json!({"id": "c", "name": "z"})),
        record(json!({"id": "b", "name": "first b"})),
        later.clone(),
    ]);
    assert_eq!(ids(table.records().iter()), ["b", "c"]);
    assert_eq!(table.get("b"), Some(&later), "a later record replaces an earlier one");
    let by_name = Sort::parse("name");
    assert_eq!(*table.select(by_name.as_ref(), &[]), [0, 1]);
    let snapshot = table.records();
    assert_eq!(table.upsert(record(json!({"id": "a", "name": "m"}))), None);
    assert_eq!(*table.select(by_name.as_ref(), &[]), [0, 1, 2], "a, second b, z");
    assert_eq!(ids(snapshot.iter()), ["b", "c"], "a snapshot does not change");
    assert_eq!(table.remove("c").map(|r| r.id().to_owned()).as_deref(), Some("c"));
    assert_eq!(table.remove("c"), None);
    assert_eq!(*table.select(by_name.as_ref(), &[]), [0, 1]);
    assert_eq!(table.new_id("notes"), "notes_1");
    table.upsert(record(json!({"id": "notes_2"})));
    assert_eq!(table.new_id("notes"), "notes_3", "never an id in use");
}

#[test]
fn contacts_filter_by_company() {
    let d = Dataset::generate(10, 3, 7);
    let list = d.contacts_sorted("-updatedAt", Some("cmp_0004"));
    assert_eq!(list.len(), 3);
    assert!(list.iter().all(|c| c["companyId"] == "cmp_0004"));
    assert_eq!(d.contacts_of("cmp_0004").count(), 3);
    assert!(list.windows(2).all(|w| w[0].str("updatedAt") >= w[1].str("updatedAt")));
    assert_eq!(d.record("contacts", list[0].id()), Some(list[0]));
    assert!(d.records("deals").is_empty());
}
