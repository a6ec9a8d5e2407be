use super::super::records::Sort;
use super::query::ListQuery;
use super::*;

const DEALS: Resource = Resource { name: "deals", kind: Kind::List };

fn parse(endpoint: Resource, query: &str) -> Result<ListQuery, ErrorReply> {
    ListQuery::from_pairs(
        endpoint,
        url::form_urlencoded::parse(query.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())),
    )
}

fn rejects(endpoint: Resource, query: &str, code: &str, mentions: &str) {
    let err = parse(endpoint, query).expect_err(query);
    assert_eq!((err.status, err.code), (400, code), "{query}");
    assert!(err.description.contains(mentions), "{query}: {}", err.description);
}

#[test]
fn defaults() {
    let q = parse(Resource::COMPANIES, "").unwrap();
    assert_eq!((q.limit, q.sort, q.filters, q.cursor), (20, None, vec![], None));
}

#[test]
fn full_query() {
    let q = parse(Resource::COMPANIES, "limit=100&sort=-createdAt&status=active&cursor=abc&x=1").unwrap();
    assert_eq!(q.limit, 100);
    assert_eq!(q.sort, Sort::parse("-createdAt"));
    assert_eq!(q.filters, [("status".to_owned(), "active".to_owned())]);
    assert_eq!(q.cursor.as_deref(), Some("abc"));
    let c = parse(Resource::CONTACTS, "companyId=cmp_0001&status=ignored&limit=1").unwrap();
    assert_eq!(c.filters, [("companyId".to_owned(), "cmp_0001".to_owned())]);
    assert_eq!(c.limit, 1);
    // companyId means nothing to the company list.
    assert_eq!(parse(Resource::COMPANIES, "companyId=x").unwrap().filters, []);
}

#[test]
fn a_declared_list_sorts_by_any_field_and_filters_on_every_other_parameter() {
    let q = parse(DEALS, "stage=won&sort=-amount&limit=5&owner=ada").unwrap();
    assert_eq!(q.sort, Sort::parse("-amount"));
    let filters = [("owner".to_owned(), "ada".to_owned()), ("stage".to_owned(), "won".to_owned())];
    assert_eq!((q.limit, q.filters), (5, filters.to_vec()), "filters by field name");
    rejects(DEALS, "sort=-", "invalid_request", "field name");
    rejects(DEALS, "stage=", "invalid_request", "stage");
    rejects(DEALS, "stage=a&stage=b", "invalid_request", "repeated");
    let reordered = parse(DEALS, "owner=ada&stage=won&sort=-amount").unwrap();
    assert_eq!(
        reordered.binding(),
        parse(DEALS, "stage=won&sort=-amount&limit=5&owner=ada").unwrap().binding()
    );
}

#[test]
fn invalid_values() {
    for bad in ["0", "101", "-1", "+5", " 5", "5 ", "1e2", "abc", "", "0100", "99999999999999999999"] {
        rejects(
            Resource::COMPANIES,
            &format!("limit={}", bad.replace('+', "%2B")),
            "invalid_request",
            "limit",
        );
    }
    for bad in ["", "Name", "--name", "id", "+name", "-", "industry"] {
        rejects(Resource::CONTACTS, &format!("sort={bad}"), "invalid_request", "sort");
    }
    rejects(Resource::COMPANIES, "status=", "invalid_request", "status");
    rejects(Resource::CONTACTS, "companyId=", "invalid_request", "companyId");
    rejects(Resource::COMPANIES, "limit=5&limit=6", "invalid_request", "limit");
    rejects(Resource::COMPANIES, "cursor=", "invalid_cursor", "cursor");
}

#[test]
fn binding_ignores_limit_only() {
    let a = parse(Resource::COMPANIES, "limit=5&sort=name&status=active").unwrap();
    let b = parse(Resource::COMPANIES, "limit=50&sort=name&status=active").unwrap();
    assert_eq!(a.binding(), b.binding());
    for other in ["sort=-name&status=active", "sort=name", "sort=name&status=churned"] {
        assert_ne!(a.binding(), parse(Resource::COMPANIES, other).unwrap().binding(), "{other}");
    }
    let contacts = parse(Resource::CONTACTS, "sort=name").unwrap();
    assert_ne!(contacts.binding(), parse(Resource::COMPANIES, "sort=name").unwrap().binding());
}

#[test]
fn header_text_is_quotable() {
    assert_eq!(quotable("a\"b\\c\u{e9}\n"), "a?b?c??");
}
