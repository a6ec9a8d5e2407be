//! The OpenAPI document (`reference-server/openapi/business-records-v1.yaml`) and the crate agree: limits, sort
//! fields, filters, error codes, and the models decode every example the document gives. That
//! the reference server conforms to the document is checked by schemathesis (`.ci/openapi`).

use std::collections::BTreeSet;

use business_records::error::ErrorCode;
use business_records::limits::{DEFAULT_LIMIT, MAX_LIMIT};
use business_records::{Auth, Client, Company, CompanySort, Contact, ContactSort, Error, Page, RetryPolicy};
use business_records_reference_server::{OPENAPI_DOCUMENT, ReferenceServer};
use serde::Serialize;
use serde_json::{Map, Value, json};
use wiremock::{Mock, MockServer, ResponseTemplate, matchers};
use yaml_rust2::{Yaml, YamlLoader};

crate::cases! {
    Anywhere:
        limit_bounds_and_default_are_the_crates [sync],
        sort_values_are_the_crates_fields_in_both_directions [sync],
        parameters_are_the_ones_the_sdk_sends [sync],
        error_codes_are_known_to_the_sdk_and_cover_the_list_errors [sync],
        schema_examples_decode_into_the_models_without_loss [sync],
        the_sdk_decodes_every_response_example;
    ServerControl:
        the_reference_server_serves_the_document_with_its_own_addresses;
}

/// The sort fields of the SDK's typed sorts, the same for both resources.
const SORT_FIELDS: [&str; 3] =
    [CompanySort::Name.field(), CompanySort::CreatedAt.field(), ContactSort::UpdatedAt.field()];

/// The list endpoints: path, the resource's sort fields, the filter parameter.
const LISTS: [(&str, &[&str], &str); 2] =
    [("/v1/companies", &SORT_FIELDS, "status"), ("/v1/contacts", &SORT_FIELDS, "companyId")];

/// Codes the API sends from its list endpoints (docs/api.md, Decisions), by status.
const LIST_ERRORS: [(u16, &str); 9] = [
    (400, "invalid_request"),
    (400, "invalid_cursor"),
    (400, "cursor_expired"),
    (401, "invalid_token"),
    (401, "insufficient_scope"),
    (410, "version_sunset"),
    (429, "rate_limited"),
    (500, "server_error"),
    (503, "temporarily_unavailable"),
];

/// The document as JSON.
fn document() -> Value {
    let docs = YamlLoader::load_from_str(OPENAPI_DOCUMENT).expect("the document is YAML");
    assert_eq!(docs.len(), 1, "one YAML document");
    to_json(&docs[0])
}

fn to_json(yaml: &Yaml) -> Value {
    match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => json!(i),
        Yaml::Real(r) => json!(r.parse::<f64>().expect("a YAML float")),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(items.iter().map(to_json).collect()),
        Yaml::Hash(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.as_str().expect("string keys").to_owned(), to_json(v)))
                .collect::<Map<_, _>>(),
        ),
        Yaml::Alias(_) | Yaml::BadValue => panic!("unsupported YAML node {yaml:?}"),
    }
}

/// `node`, or what its `$ref` points at (`#/components/...`), followed transitively.
fn resolve<'a>(doc: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let pointer = reference.strip_prefix('#').expect("a local reference");
            resolve(doc, doc.pointer(pointer).unwrap_or_else(|| panic!("{reference} exists")))
        }
        None => node,
    }
}

fn operation<'a>(doc: &'a Value, path: &str) -> &'a Value {
    doc["paths"][path].get("get").unwrap_or_else(|| panic!("GET {path} is documented"))
}

/// The operation's parameters by name, references resolved.
fn parameters<'a>(doc: &'a Value, path: &str) -> Vec<(&'a str, &'a Value)> {
    operation(doc, path)["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .map(|p| resolve(doc, p))
        .map(|p| (p["name"].as_str().expect("a parameter name"), p))
        .collect()
}

fn parameter<'a>(doc: &'a Value, path: &str, name: &str) -> &'a Value {
    parameters(doc, path)
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, p)| p)
        .unwrap_or_else(|| panic!("{path} documents {name}"))
}

/// The operation's responses by status, references resolved.
fn responses<'a>(doc: &'a Value, path: &str) -> Vec<(u16, &'a Value)> {
    operation(doc, path)["responses"]
        .as_object()
        .expect("responses")
        .iter()
        .map(|(status, r)| (status.parse().expect("numeric statuses"), resolve(doc, r)))
        .collect()
}

/// Codes a response's schema allows in `error` (`enum` or `const`, through `allOf`).
fn response_codes(doc: &Value, response: &Value) -> BTreeSet<String> {
    let schema = resolve(doc, &response["content"]["application/json"]["schema"]);
    let mut codes = BTreeSet::new();
    for part in schema["allOf"].as_array().into_iter().flatten().chain([schema]) {
        let error = &resolve(doc, part)["properties"]["error"];
        codes.extend(
            error["enum"].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned),
        );
        codes.extend(error["const"].as_str().map(str::to_owned));
    }
    codes
}

fn enum_strings(schema: &Value) -> BTreeSet<String> {
    schema["enum"]
        .as_array()
        .expect("an enum")
        .iter()
        .map(|v| v.as_str().expect("a string").to_owned())
        .collect()
}

/// The named examples of a response's JSON content.
fn examples(response: &Value) -> Vec<(&str, &Value)> {
    response["content"]["application/json"]["examples"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, example)| (name.as_str(), &example["value"]))
        .collect()
}

fn limit_bounds_and_default_are_the_crates() {
    let doc = document();
    for (path, _, _) in LISTS {
        let schema = &parameter(&doc, path, "limit")["schema"];
        assert_eq!(schema["type"], "integer", "{path}");
        assert_eq!(schema["minimum"], 1, "{path}");
        assert_eq!(schema["maximum"], MAX_LIMIT, "{path}");
        assert_eq!(schema["default"], DEFAULT_LIMIT, "{path}");
    }
}

fn sort_values_are_the_crates_fields_in_both_directions() {
    let doc = document();
    for (path, fields, _) in LISTS {
        let documented = enum_strings(&parameter(&doc, path, "sort")["schema"]);
        let expected: BTreeSet<String> =
            fields.iter().flat_map(|f| [f.to_string(), format!("-{f}")]).collect();
        assert_eq!(documented, expected, "{path}");
    }
}

fn parameters_are_the_ones_the_sdk_sends() {
    let doc = document();
    for (path, _, filter) in LISTS {
        let names: BTreeSet<&str> = parameters(&doc, path).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, BTreeSet::from(["limit", "cursor", "sort", filter, "X-API-Preview"]), "{path}");
        let preview = parameter(&doc, path, "X-API-Preview");
        assert_eq!(preview["in"], "header");
        // The SDK validates labels the same way the document's pattern does.
        assert_eq!(preview["schema"]["pattern"], "^[0-9]{4}-(0[1-9]|1[0-2])$");
        let preview = |label| {
            Client::builder()
                .base_url("https://a.example")
                .auth(Auth::static_token("t"))
                .preview(label)
                .build()
        };
        for label in ["2026-01", "1999-12"] {
            assert!(preview(label).is_ok(), "{label}");
        }
        for label in ["2026-00", "2026-13", "26-01", "2026-1"] {
            assert!(preview(label).is_err(), "{label}");
        }
    }
}

fn error_codes_are_known_to_the_sdk_and_cover_the_list_errors() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    let api_codes = enum_strings(&schemas["ApiErrorCode"]);
    let oauth_codes = enum_strings(&schemas["OAuthErrorCode"]);
    let known: BTreeSet<String> = ErrorCode::KNOWN.iter().map(|c| c.to_string()).collect();

    let documented: BTreeSet<String> = api_codes.union(&oauth_codes).cloned().collect();
    assert_eq!(documented, known, "the document's codes (left) and ErrorCode::KNOWN (right)");
    for code in &documented {
        assert!(!matches!(ErrorCode::parse(code), ErrorCode::Other(_)), "{code} has a variant");
    }

    for (path, _, _) in LISTS {
        let responses = responses(&doc, path);
        for (status, response) in &responses {
            for code in response_codes(&doc, response) {
                assert!(api_codes.contains(&code), "{path} {status}: {code} is an ApiErrorCode");
            }
            for (name, example) in examples(response) {
                if let Some(code) = example.get("error").and_then(Value::as_str) {
                    assert!(response_codes(&doc, response).contains(code), "{path} {status} example {name}");
                }
            }
        }
        for (status, code) in LIST_ERRORS {
            let response = responses
                .iter()
                .find(|(s, _)| *s == status)
                .unwrap_or_else(|| panic!("{path} documents {status}"))
                .1;
            assert!(response_codes(&doc, response).contains(code), "{path} {status} allows {code}");
        }
    }
    assert!(api_codes.contains("not_found"), "unknown paths and versions are documented");
}

fn schema_examples_decode_into_the_models_without_loss() {
    let doc = document();
    let schemas = &doc["components"]["schemas"];
    for example in schemas["Company"]["examples"].as_array().expect("company examples") {
        let company: Company = serde_json::from_value(example.clone()).expect("a company");
        assert_eq!(&serde_json::to_value(&company).expect("serialises"), example);
    }
    for example in schemas["Contact"]["examples"].as_array().expect("contact examples") {
        let contact: Contact = serde_json::from_value(example.clone()).expect("a contact");
        assert_eq!(&serde_json::to_value(&contact).expect("serialises"), example);
    }
}

/// A client of `server` that sends a fixed token and never retries.
fn client(server: &MockServer) -> Client {
    Client::builder()
        .base_url(server.uri())
        .auth(Auth::static_token("token"))
        .retry(RetryPolicy::none())
        .build()
        .expect("a valid client")
}

/// What a page says besides its items: `hasMore`, `nextCursor`, `totalCount`.
type PageMeta = (bool, Option<String>, Option<u64>);

fn summary<T: Serialize>(page: Page<T>) -> (Vec<Value>, PageMeta) {
    let items = page.data.iter().map(|item| serde_json::to_value(item).expect("serialises")).collect();
    (items, (page.has_more, page.next_cursor.map(|c| c.as_str().to_owned()), page.total_count))
}

/// Serves `body` with `status` at `path` and fetches one page of it through the SDK.
async fn fetch(path: &str, status: u16, body: &Value) -> Result<(Vec<Value>, PageMeta), Error> {
    let server = MockServer::builder().start().await;
    Mock::given(matchers::method("GET"))
        .and(matchers::path(path))
        .respond_with(ResponseTemplate::new(status).set_body_json(body))
        .mount(&server)
        .await;
    let client = client(&server);
    if path.ends_with("/companies") {
        client.companies().send().await.map(summary)
    } else {
        client.contacts().send().await.map(summary)
    }
}

async fn the_sdk_decodes_every_response_example() {
    let doc = document();
    let mut decoded = 0;
    for (path, _, _) in LISTS {
        for (status, response) in responses(&doc, path) {
            for (name, example) in examples(response) {
                let context = format!("{path} {status} example {name}");
                let result = fetch(path, status, example).await;
                if status == 200 {
                    let (items, meta) = result.unwrap_or_else(|e| panic!("{context}: {e}"));
                    assert_eq!(&Value::Array(items), &example["data"], "{context}: nothing lost");
                    let pagination = &example["pagination"];
                    let expected = (
                        pagination["hasMore"].as_bool().expect("hasMore"),
                        pagination["nextCursor"].as_str().map(str::to_owned),
                        pagination["totalCount"].as_u64(),
                    );
                    assert_eq!(meta, expected, "{context}");
                } else {
                    let err = result.expect_err(&context);
                    assert_eq!(err.status(), Some(status), "{context}: {err}");
                    assert_eq!(err.code().map(ErrorCode::as_str), example["error"].as_str(), "{context}");
                    assert_eq!(err.description(), example["error_description"].as_str(), "{context}");
                }
                decoded += 1;
            }
        }
    }
    assert!(decoded >= 15, "only {decoded} examples");
}

async fn the_reference_server_serves_the_document_with_its_own_addresses() {
    let server = ReferenceServer::builder().companies(5).start().await;
    assert_eq!(server.openapi_url(), format!("{}/openapi.yaml", server.base_url()));
    let response = reqwest::get(server.openapi_url()).await.expect("the document is served without a token");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/yaml");
    let served = response.text().await.expect("a text body");
    assert!(!served.contains("https://api.example.com") && !served.contains("https://auth.example.com"));
    let served = to_json(&YamlLoader::load_from_str(&served).expect("YAML")[0]);
    assert_eq!(served["servers"][0]["url"], server.base_url().as_str());
    let flows = &served["components"]["securitySchemes"]["oauth2"]["flows"];
    assert_eq!(flows["clientCredentials"]["tokenUrl"], server.token_url().as_str());
    assert_eq!(
        flows["authorizationCode"]["authorizationUrl"],
        format!("{}/oauth2/authorize", server.auth_url())
    );
    // Apart from the addresses, it is the document in the repository.
    assert_eq!(served["paths"], document()["paths"]);
}
