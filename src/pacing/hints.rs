//! What a response says about the server's rate limit, when it says anything: the IETF
//! `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers-09 and
//! later), the earlier drafts' `RateLimit-Limit`, `-Remaining` and `-Reset`, and the common
//! `X-RateLimit-*`. A field that cannot be read is ignored: the client must never need them.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderMap;

use crate::bounds::MAX_SERVER_WAIT;
use crate::text::{pieces, split_outside_quotes, unquote};

/// `X-RateLimit-Reset` values from here on are Unix times, not delays (GitHub sends seconds
/// since the epoch, others send the seconds left).
const EPOCH_SECONDS_FROM: u64 = 1_000_000_000;
/// ... and from here on, Unix times in milliseconds.
const EPOCH_MILLIS_FROM: u64 = 1_000_000_000_000;

/// The rate-limit hints of one response.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Hints {
    /// The sustained rate the server's policy allows, in requests per second: the lowest
    /// `q / w` of its request quotas.
    pub(crate) policy_rate: Option<f64>,
    /// Quota left now (the lowest, when several policies apply).
    pub(crate) remaining: Option<u64>,
    /// How long until that quota is given back, when the server says.
    pub(crate) reset: Option<Duration>,
}

/// One member of a structured-field list: its bare item under an empty name, then its
/// parameters, unquoted.
type Member = Vec<(String, String)>;

impl Hints {
    /// Reads the fields of `headers`: the IETF fields, else the earlier drafts', else the
    /// `X-RateLimit-*` ones.
    pub(crate) fn read(headers: &HeaderMap) -> Hints {
        [ietf(headers), legacy(headers, "ratelimit-"), legacy(headers, "x-ratelimit-")]
            .into_iter()
            .find(|hints| *hints != Hints::default())
            .unwrap_or_default()
    }
}

/// `RateLimit-Policy: "default";q=100;w=60` and `RateLimit: "default";r=50;t=30`: the lowest
/// rate of the request quotas, and the lowest quota left with its reset.
fn ietf(headers: &HeaderMap) -> Hints {
    let requests = |item: &Member| param(item, "qu").is_none_or(|unit| unit.eq_ignore_ascii_case("requests"));
    let policies = members(headers, "ratelimit-policy").into_iter().filter(requests);
    let quotas =
        members(headers, "ratelimit").into_iter().filter_map(|item| Some((integer(&item, "r")?, item)));
    let lowest = quotas.min_by_key(|(left, _)| *left);
    let reset = lowest.as_ref().and_then(|(_, item)| integer(item, "t")).map(Duration::from_secs);
    Hints {
        policy_rate: policies.filter_map(|item| rate(&item, "q")).reduce(f64::min),
        remaining: lowest.map(|(left, _)| left),
        reset: reset.filter(|reset| *reset <= MAX_SERVER_WAIT),
    }
}

/// `{prefix}Limit`, `{prefix}Remaining` and `{prefix}Reset`: the limit may carry windows as the
/// early drafts wrote them (`10, 10;w=1, 1000;w=3600`).
fn legacy(headers: &HeaderMap, prefix: &str) -> Hints {
    let first =
        |name: &str| members(headers, &format!("{prefix}{name}")).first().and_then(|item| integer(item, ""));
    let limits = members(headers, &format!("{prefix}limit"));
    Hints {
        policy_rate: limits.iter().filter_map(|item| rate(item, "")).reduce(f64::min),
        remaining: first("remaining"),
        reset: first("reset").and_then(reset_delay),
    }
}

/// A reset given as seconds left, or as a Unix time in seconds or milliseconds.
fn reset_delay(value: u64) -> Option<Duration> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let delay = match value {
        EPOCH_MILLIS_FROM.. => Duration::from_millis(value).saturating_sub(now),
        EPOCH_SECONDS_FROM.. => Duration::from_secs(value).saturating_sub(now),
        _ => Duration::from_secs(value),
    };
    (delay <= MAX_SERVER_WAIT).then_some(delay)
}

/// The quota of `member` (its parameter `quota`) per its window (`w`, in seconds), as requests
/// a second.
fn rate(member: &Member, quota: &str) -> Option<f64> {
    Some(integer(member, quota)? as f64 / integer(member, "w").filter(|window| *window > 0)? as f64)
}

/// The value of `member`'s parameter `name` (`""`: its bare item).
fn param<'m>(member: &'m Member, name: &str) -> Option<&'m str> {
    member.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
}

fn integer(member: &Member, name: &str) -> Option<u64> {
    param(member, name)?.parse().ok()
}

/// The members of every `name` field line, read leniently as an RFC 8941 list: split on commas,
/// semicolons and equal signs outside quoted strings. Not through an RFC 8941 parser (`sfv`):
/// it refuses a whole field for one malformed member, as the RFC asks, where this reads the
/// members it can.
fn members(headers: &HeaderMap, name: &str) -> Vec<Member> {
    let lines = headers.get_all(name).iter().filter_map(|line| line.to_str().ok());
    let param = |(at, param): (usize, &str)| {
        let (key, value) = match split_outside_quotes(param, '=') {
            (key, Some(value)) if at > 0 => (key.trim(), value.trim()),
            _ => ("", param.trim()),
        };
        let value = value.strip_prefix('"').and_then(unquote).unwrap_or_else(|| value.to_owned());
        (key.to_owned(), value)
    };
    lines
        .flat_map(|line| pieces(line, ','))
        .map(|member| pieces(member, ';').enumerate().map(param).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(fields: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in fields {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn ietf_fields_give_the_lowest_request_rate_and_the_lowest_quota_left() {
        let hints = Hints::read(&headers(&[
            ("ratelimit-policy", r#""permin";q=50;w=60, "burst";q=20;w=1"#),
            ("ratelimit-policy", r#""bytes";q=1000;qu="content-bytes";w=1"#),
            ("ratelimit", r#""burst";r=7;t=1, "permin";r=3;t=40"#),
        ]));
        assert_eq!(hints.policy_rate, Some(50.0 / 60.0));
        assert_eq!((hints.remaining, hints.reset), (Some(3), Some(Duration::from_secs(40))));
        assert_ne!(hints.remaining, Some(0), "quota left");

        let tokens = Hints::read(&headers(&[("ratelimit", "default;r=0;t=2;pk=:cHsdsRa894==:")]));
        assert_eq!(tokens.remaining, Some(0), "spent");
        assert_eq!((tokens.policy_rate, tokens.reset), (None, Some(Duration::from_secs(2))));
    }

    #[test]
    fn older_drafts_and_x_ratelimit_fields() {
        let draft = Hints::read(&headers(&[
            ("ratelimit-limit", "10, 10;w=1, 1000;w=3600"),
            ("ratelimit-remaining", "4"),
            ("ratelimit-reset", "7"),
        ]));
        assert_eq!(draft.policy_rate, Some(1000.0 / 3600.0));
        assert_eq!((draft.remaining, draft.reset), (Some(4), Some(Duration::from_secs(7))));

        let in_a_minute = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() + 60;
        let mut github = HeaderMap::new();
        github.insert("x-ratelimit-limit", HeaderValue::from(5000));
        github.insert("x-ratelimit-remaining", HeaderValue::from(0));
        github.insert("x-ratelimit-reset", HeaderValue::from(in_a_minute));
        let hints = Hints::read(&github);
        assert_eq!(hints.remaining, Some(0), "spent");
        assert_eq!(hints.policy_rate, None, "a limit without a window says no rate");
        let reset = hints.reset.expect("a reset");
        assert!(reset > Duration::from_secs(55) && reset <= Duration::from_secs(60), "{reset:?}");

        // The same time in milliseconds, and a delay in seconds.
        github.insert("x-ratelimit-reset", HeaderValue::from(in_a_minute * 1000));
        let reset = Hints::read(&github).reset.expect("a reset in milliseconds");
        assert!(reset > Duration::from_secs(55) && reset <= Duration::from_secs(60), "{reset:?}");
        github.insert("x-ratelimit-reset", HeaderValue::from(60));
        assert_eq!(Hints::read(&github).reset, Some(Duration::from_secs(60)));
    }

    #[test]
    fn unreadable_fields_are_ignored() {
        for fields in [
            &[("ratelimit", "r=abc"), ("ratelimit-policy", r#""d";q=10;w=0"#)][..],
            &[("ratelimit-policy", r#""a;b";q=1"#)],
            &[("x-ratelimit-remaining", "-1"), ("x-ratelimit-reset", "99999999")],
            &[("ratelimit", "\"unterminated;r=0")],
        ] {
            assert_eq!(Hints::read(&headers(fields)), Hints::default(), "{fields:?}");
        }
        assert_eq!(Hints::read(&HeaderMap::new()), Hints::default());
    }

    proptest::proptest! {
        /// Any value in any of the fields: no panic, a reset within a day, a rate that is a
        /// number.
        #[test]
        fn any_field_value_is_read_within_bounds(
            values in proptest::collection::vec("\\PC{0,30}|[0-9]{1,25}|\"d\";q=[0-9]{1,25};w=[0-9]{1,25}|d;r=[0-9]{1,25};t=[0-9]{1,25}", 9),
        ) {
            let names = [
                "ratelimit-policy", "ratelimit", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
                "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit",
            ];
            let mut map = HeaderMap::new();
            for (name, value) in names.into_iter().zip(&values) {
                if let Ok(value) = HeaderValue::from_str(value) {
                    map.append(name, value);
                }
            }
            let hints = Hints::read(&map);
            proptest::prop_assert!(hints.reset.is_none_or(|reset| reset <= MAX_SERVER_WAIT), "{hints:?}");
            proptest::prop_assert!(hints.policy_rate.is_none_or(|rate| rate.is_finite() && rate >= 0.0), "{hints:?}");
        }
    }

    #[test]
    fn a_reset_further_than_a_day_is_ignored() {
        for fields in [
            &[("ratelimit", "d;r=0;t=86401")][..],
            &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "18446744073709551615")],
            &[("x-ratelimit-remaining", "0"), ("x-ratelimit-reset", "99999999999999999999999")],
        ] {
            let hints = Hints::read(&headers(fields));
            assert_eq!((hints.remaining, hints.reset), (Some(0), None), "{fields:?}");
        }
    }
}
