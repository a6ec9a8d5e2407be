use super::super::dataset::Sort;
use super::*;

fn parse(endpoint: Endpoint, query: &str) -> Result<ListQuery, ErrorReply> {
    ListQuery::from_pairs(
        endpoint,
        url::form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())),
    )
}

fn rejects(endpoint: Endpoint, query: &str, code: &str, mentions: &str) {
    let err = parse(endpoint, query).expect_err(query);
    assert_eq!((err.status, err.code), (400, code), "{query}");
    assert!(err.description.contains(mentions), "{query}: {}", err.description);
}

#[test]
fn defaults() {
    let q = parse(Endpoint::Companies, "").unwrap();
    assert_eq!((q.limit, q.sort, q.filter, q.cursor), (20, None, None, None));
}

#[test]
fn full_query() {
    let q = parse(Endpoint::Companies, "limit=100&sort=-createdAt&status=active&cursor=abc&x=1").unwrap();
    assert_eq!(q.limit, 100);
    assert_eq!(q.sort, Sort::parse("-createdAt"));
    assert_eq!(q.filter.as_deref(), Some("active"));
    assert_eq!(q.cursor.as_deref(), Some("abc"));
    let c = parse(Endpoint::Contacts, "companyId=cmp_0001&status=ignored&limit=1").unwrap();
    assert_eq!(c.filter.as_deref(), Some("cmp_0001"));
    assert_eq!(c.limit, 1);
    // companyId means nothing to the company list.
    assert_eq!(parse(Endpoint::Companies, "companyId=x").unwrap().filter, None);
}

#[test]
fn invalid_values() {
    for bad in ["0", "101", "-1", "+5", " 5", "5 ", "1e2", "abc", "", "0100", "99999999999999999999"] {
        rejects(
            Endpoint::Companies,
            &format!("limit={}", bad.replace('+', "%2B")),
            "invalid_request",
            "limit",
        );
    }
    for bad in ["", "Name", "--name", "id", "+name", "-"] {
        rejects(Endpoint::Contacts, &format!("sort={bad}"), "invalid_request", "sort");
    }
    rejects(Endpoint::Companies, "status=", "invalid_request", "status");
    rejects(Endpoint::Contacts, "companyId=", "invalid_request", "companyId");
    rejects(Endpoint::Companies, "limit=5&limit=6", "invalid_request", "limit");
    rejects(Endpoint::Companies, "cursor=", "invalid_cursor", "cursor");
}

#[test]
fn binding_ignores_limit_only() {
    let a = parse(Endpoint::Companies, "limit=5&sort=name&status=active").unwrap();
    let b = parse(Endpoint::Companies, "limit=50&sort=name&status=active").unwrap();
    assert_eq!(a.binding(), b.binding());
    for other in ["sort=-name&status=active", "sort=name", "sort=name&status=churned"] {
        assert_ne!(a.binding(), parse(Endpoint::Companies, other).unwrap().binding(), "{other}");
    }
    let contacts = parse(Endpoint::Contacts, "sort=name").unwrap();
    assert_ne!(contacts.binding(), parse(Endpoint::Companies, "sort=name").unwrap().binding());
}

#[test]
fn header_text_is_quotable() {
    assert_eq!(quotable("a\"b\\c\u{e9}\n"), "a?b?c??");
}
