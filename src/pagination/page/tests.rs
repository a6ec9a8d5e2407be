//! The page decoder over arbitrary input: no panic, every element that is a `T` delivered in
//! order, the others counted, and what a page keeps of them bounded whatever they are.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{KEPT_UNDECODABLE, Page};
use crate::model::tests::json;
use crate::text::{MAX_SERVER_TEXT, server_text};
use crate::{Company, Error};

/// A page envelope around `elements`.
fn envelope(elements: &[Value]) -> String {
    json!({"data": elements, "pagination": {"hasMore": true, "nextCursor": "c2"}}).to_string()
}

/// An element of a page: a company most often, else any JSON value.
fn element() -> impl Strategy<Value = Value> {
    let company = (".{0,8}", ".{0,8}", json()).prop_map(|(id, name, extra)| {
        json!({"id": id, "name": name, "status": "active", "createdAt": "2024-01-02T03:04:05Z", "x": extra})
    });
    prop_oneof![2 => company, 1 => json()]
}

/// `elements` as the page decoder reads them back (a float may come back a bit off).
fn as_parsed(elements: &[Value]) -> Vec<Value> {
    serde_json::from_str(&serde_json::to_string(elements).unwrap_or_default()).unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn no_bytes_make_a_page_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = Page::<Company>::from_json(&bytes);
        let _ = Page::<Value>::from_json(&bytes);
    }

    /// A page damaged anywhere is read or refused, never a panic.
    #[test]
    fn no_damaged_page_panics(
        elements in prop::collection::vec(element(), 0..8),
        damage in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let mut body = envelope(&elements).into_bytes();
        for (at, byte) in damage {
            let at = at.index(body.len());
            body[at] = byte;
        }
        let _ = Page::<Company>::from_json(&body);
    }

    /// Every element that is a company is delivered, in order; every other one is counted, the
    /// first five kept with their positions and bounded excerpts.
    #[test]
    fn every_company_is_delivered_and_every_other_element_counted(
        elements in prop::collection::vec(element(), 0..40),
    ) {
        let page = Page::<Company>::from_json(envelope(&elements).as_bytes())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let read: Vec<Result<Company, _>> =
            as_parsed(&elements).iter().map(|e| serde_json::from_value::<Company>(e.clone())).collect();
        let companies: Vec<&Company> = read.iter().filter_map(|r| r.as_ref().ok()).collect();
        let others: Vec<usize> = (0..read.len()).filter(|&i| read[i].is_err()).collect();
        prop_assert_eq!(page.data.iter().collect::<Vec<_>>(), companies);
        prop_assert_eq!(page.undecodable_total, others.len() as u64);
        let kept: Vec<usize> = page.undecodable.iter().map(|u| u.position).collect();
        prop_assert_eq!(&kept[..], &others[..others.len().min(KEPT_UNDECODABLE)]);
        for odd in &page.undecodable {
            prop_assert!(odd.raw.len() <= MAX_SERVER_TEXT + '…'.len_utf8(), "{} bytes", odd.raw.len());
            prop_assert!(odd.reason.len() <= MAX_SERVER_TEXT + '…'.len_utf8());
            prop_assert_eq!(&odd.raw, &server_text(&elements[odd.position].to_string()));
        }
        prop_assert!((page.has_more, page.next_cursor.as_ref().map(|c| c.as_str())) == (true, Some("c2")));
    }

    /// Into `serde_json::Value`, every element is an item, whatever it is.
    #[test]
    fn every_element_is_a_value(elements in prop::collection::vec(json(), 0..40)) {
        let page = Page::<Value>::from_json(envelope(&elements).as_bytes())
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(page.data, as_parsed(&elements));
        prop_assert_eq!(page.undecodable_total, 0);
    }
}

#[test]
fn what_is_not_a_page_envelope_is_a_decode_error() {
    for body in
        [&b""[..], b"[]", br#"{"data": []}"#, br#"{"data": {}, "pagination": {"hasMore": false}}"#, b"\xff"]
    {
        let error = Page::<Company>::from_json(body).expect_err("not an envelope");
        assert!(matches!(error, Error::Decode(_)), "{error:?}");
    }
}

#[test]
fn a_next_cursor_absent_or_other_than_a_non_empty_string_is_no_cursor() {
    for cursor in [json!(""), json!(7), json!(null), json!({"c": 1}), json!(["c"])] {
        let body = json!({"data": [], "pagination": {"hasMore": true, "nextCursor": cursor}});
        let page = Page::<Value>::from_json(body.to_string().as_bytes()).expect("a page envelope");
        assert_eq!((page.has_more, page.next_cursor), (true, None), "{cursor}");
    }
    let without = Page::<Value>::from_json(br#"{"data": [], "pagination": {"hasMore": false}}"#);
    assert_eq!(without.expect("a page envelope").next_cursor, None, "no nextCursor at all");
}
