use super::*;
use proptest::prelude::*;

fn base() -> Url {
    Url::parse("https://api.example.com/v1/companies?limit=5").expect("valid base url")
}

fn parse(lines: &[&str]) -> Vec<Link> {
    parse_links(lines.iter().copied(), &base())
}

const THREE: [&str; 3] = ["https://a.example/1", "https://a.example/2", "https://a.example/3"];

fn targets(links: &[Link]) -> Vec<&str> {
    links.iter().map(|link| link.target.as_str()).collect()
}

#[test]
fn single_link() {
    let links = parse(&[r#"<https://api.example.com/v2/companies>; rel="successor-version""#]);
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].target.as_str(), "https://api.example.com/v2/companies");
    assert_eq!(links[0].relations, ["successor-version"]);
}

#[test]
fn several_links_in_one_line() {
    let links = parse(&[
        r#"<https://a.example/1>; rel=next, <https://a.example/2>; rel="prev",<https://a.example/3>;rel=last"#,
    ]);
    assert_eq!(targets(&links), THREE);
    assert_eq!(links[2].relations, ["last"]);
}

#[test]
fn links_across_two_field_lines() {
    let links = parse(&[
        r#"<https://a.example/1>; rel=successor-version"#,
        r#"<https://a.example/2>; rel=deprecation, <https://a.example/3>; rel=sunset"#,
    ]);
    assert_eq!(targets(&links), THREE);
    assert_eq!(links[1].relations, ["deprecation"]);
}

#[test]
fn quoted_commas_semicolons_and_escapes() {
    let links = parse(&[
        r#"<https://a.example/1>; title="one, two; three"; rel="next", <https://a.example/2>; rel="say \"hi\", \\ ok""#,
    ]);
    assert_eq!(links.len(), 2);
    assert_eq!(links[0].relations, ["next"]);
    assert_eq!(links[1].relations, ["say", r#""hi","#, "\\", "ok"]);
}

#[test]
fn commas_inside_the_target() {
    let links = parse(&[r#"<https://a.example/a,b;c>; rel=x, <https://a.example/d>; rel=y"#]);
    assert_eq!(targets(&links), ["https://a.example/a,b;c", "https://a.example/d"]);
}

#[test]
fn space_separated_relations() {
    let links = parse(&[r#"</v2/companies>; rel="successor-version latest-version""#]);
    assert_eq!(links[0].relations, ["successor-version", "latest-version"]);
}

#[test]
fn parameter_names_and_relations_ignore_case() {
    let links = parse(&[r#"</v2/companies>; REL=Successor-Version; Title="V2""#]);
    assert_eq!(links[0].relations, ["successor-version"]);
    assert_eq!(find_relation(&links, "successor-version").as_ref().map(Url::path), Some("/v2/companies"));
}

#[test]
fn only_the_first_rel_counts() {
    let links = parse(&[r#"</a>; rel=first; rel=second"#]);
    assert_eq!(links[0].relations, ["first"]);
}

#[test]
fn relative_targets_resolve_against_the_request_url() {
    let links = parse(&[
        r#"</v2/companies>; rel="successor-version", <v3>; rel=x, <?page=2>; rel=next, <>; rel=self, <//cdn.example/x>; rel=y"#,
    ]);
    assert_eq!(
        targets(&links),
        [
            "https://api.example.com/v2/companies",
            "https://api.example.com/v1/v3",
            "https://api.example.com/v1/companies?page=2",
            "https://api.example.com/v1/companies?limit=5",
            "https://cdn.example/x",
        ]
    );
}

#[test]
fn extended_parameters_are_read_past() {
    let links = parse(&[r#"</a>; title*=UTF-8'de'n%c3%a4chstes%20Kapitel; hreflang=de; rel=help"#]);
    assert_eq!(links[0].relations, ["help"]);
}

#[test]
fn parameters_without_values_and_odd_spacing() {
    let links = parse(&["  < /a >  ;  rel = \"x\" ; crossorigin ;; , </b>;rel=y;"]);
    assert_eq!(targets(&links), ["https://api.example.com/a", "https://api.example.com/b"]);
    assert_eq!(links[0].relations, ["x"]);
    assert_eq!(links[1].relations, ["y"]);
}

#[test]
fn links_without_rel_have_no_relations() {
    let links = parse(&["</a>; title=x"]);
    assert!(links[0].relations.is_empty());
}

#[test]
fn malformed_values_are_skipped() {
    let links = parse(&[
        r#"garbage, <https://a.example/1>; rel=ok, <https://a.example/2> junk; rel=bad, <https://a.example/3>; =x, <https://a.example/4>; rel="a,b" trailing, <https://a.example/5>; rel=ok2"#,
        "<http://[::1/>; rel=bad-url, </6>; rel=ok3",
        r#"<https://a.example/7>; title="unterminated, <https://a.example/8>"#,
        "<https://a.example/9; rel=unterminated-target",
        "",
        " , ,, ",
    ]);
    assert_eq!(targets(&links), ["https://a.example/1", "https://a.example/5", "https://api.example.com/6"]);
}

#[test]
fn non_ascii_text_does_not_break_parsing() {
    let links =
        parse(&[r#"</caf%C3%A9>; title="café, ☕"; rel=x, <https://a.example/ü>; rel=y, ü<x>, </z>; rel=z"#]);
    assert_eq!(links.len(), 3);
    assert_eq!(links[0].relations, ["x"]);
    assert_eq!(links[1].target.as_str(), "https://a.example/%C3%BC");
}

#[test]
fn find_relation_picks_the_first_match() {
    let links = parse(&[
        "</a>; rel=other, </b>; rel=\"latest-version successor-version\", </c>; rel=successor-version",
    ]);
    let found = find_relation(&links, "successor-version");
    assert_eq!(found.as_ref().map(Url::path), Some("/b"));
    assert!(find_relation(&links, "deprecation").is_none());
}

/// A generated link: target, `rel` name as written, relation types, other parameters.
#[derive(Debug, Clone)]
struct Generated {
    target: String,
    rel_name: String,
    rels: Vec<String>,
    params: Vec<(String, String, bool)>,
}

fn quote(value: &str) -> String {
    let mut quoted = String::from("\"");
    for c in value.chars() {
        if c == '"' || c == '\\' {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

fn serialize(link: &Generated) -> String {
    let mut text = format!("<{}>", link.target);
    for (name, value, quoted) in &link.params {
        if *quoted {
            text.push_str(&format!(";{name}={}", quote(value)));
        } else {
            text.push_str(&format!(" ; {name}={value}"));
        }
    }
    // Last, so that a parameter read wrongly before it shows in the relations.
    text.push_str(&format!("; {}={}", link.rel_name, quote(&link.rels.join(" "))));
    text
}

fn generated() -> impl Strategy<Value = Generated> {
    let target = prop_oneof![
        "/[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,2}",
        "https://[a-z]{1,8}\\.example/[a-z0-9,;]{0,8}",
        "[a-z]{1,8}\\?[a-z]=[0-9]{1,3}",
    ];
    let rel_name = "[rR][eE][lL]";
    let rels = proptest::collection::vec("[a-zA-Z][a-zA-Z0-9.-]{0,12}", 1..4);
    let param =
        ("[a-zA-Z][a-zA-Z0-9*-]{0,8}", "[ -~]{0,16}", "[a-zA-Z0-9.!#$%&'*+^_`|~-]{1,8}", any::<bool>())
            .prop_filter("rel is generated separately", |(name, ..)| !name.eq_ignore_ascii_case("rel"))
            .prop_map(
                |(name, free, token, quoted)| {
                    if quoted { (name, free, true) } else { (name, token, false) }
                },
            );
    let params = proptest::collection::vec(param, 0..4);
    (target, rel_name, rels, params).prop_map(|(target, rel_name, rels, params)| Generated {
        target,
        rel_name,
        rels,
        params,
    })
}

proptest! {
    #[test]
    fn never_panics(lines in proptest::collection::vec(any::<String>(), 0..4)) {
        let _ = parse_links(lines.iter().map(String::as_str), &base());
    }

    #[test]
    fn never_panics_on_link_like_text(
        lines in proptest::collection::vec("[<>;,=\"\\\\ a-zA-Z0-9:/?#*'%é]{0,60}", 0..4)
    ) {
        let _ = parse_links(lines.iter().map(String::as_str), &base());
    }

    #[test]
    fn generated_links_round_trip(
        links in proptest::collection::vec(generated(), 1..6),
        split in any::<proptest::sample::Index>(),
    ) {
        let values: Vec<String> = links.iter().map(serialize).collect();
        let at = split.index(values.len() + 1);
        let lines = [values[..at].join(", "), values[at..].join(",")];
        let parsed = parse_links(lines.iter().map(String::as_str), &base());
        prop_assert_eq!(parsed.len(), links.len());
        for (link, generated) in parsed.iter().zip(&links) {
            let target = base().join(&generated.target).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&link.target, &target);
            let rels: Vec<String> = generated.rels.iter().map(|r| r.to_ascii_lowercase()).collect();
            prop_assert_eq!(&link.relations, &rels);
        }
    }
}
