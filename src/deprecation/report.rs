//! What the client does with a deprecation notice: the user's callback and `tracing` logs.

use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, TimeDelta, Utc};
use tracing::Level;

use super::{DeprecationNotice, rfc3339};
use crate::text::shown_url;

/// A function called with every deprecation notice the client receives
/// ([`ClientBuilder::on_deprecation`](crate::ClientBuilder::on_deprecation)).
pub(crate) type DeprecationCallback = Arc<dyn Fn(&DeprecationNotice) + Send + Sync>;

/// How the client reacts to responses that carry a deprecation notice.
///
/// Whatever the policy, the `on_deprecation` callback receives every notice and every page
/// carries its notice.
///
/// ```
/// use business_records::DeprecationPolicy;
///
/// assert_eq!(DeprecationPolicy::default(), DeprecationPolicy::WarnOnce);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeprecationPolicy {
    /// Log one `tracing` warning per endpoint for the life of the client (the default).
    #[default]
    WarnOnce,
    /// Log a `tracing` warning for every response that carries a notice.
    WarnEvery,
    /// Log nothing.
    Ignore,
    /// Log nothing, and turn responses from deprecated endpoints into errors (for CI runs
    /// that must notice deprecations).
    Fail,
}

/// How many endpoints a [`DeprecationReporter`] remembers with
/// [`DeprecationPolicy::WarnOnce`]; past that, warnings for further endpoints are dropped so
/// that memory stays bounded.
const REMEMBERED_ENDPOINTS: usize = 1024;

/// How close a sunset date makes the log line an error rather than a warning.
const SUNSET_SOON_DAYS: i64 = 30;

/// Decides, per client, whether a deprecation notice is logged, and passes every notice to
/// the user's callback.
///
/// `Send + Sync`; the client keeps one and shares it between its clones, so "once" means
/// once per client.
///
/// Log lines go to `tracing` with the fields `method`, `endpoint`, `sunset`, `successor`,
/// `deprecated_since`, `documentation` and `diagnostic` (each only when known): a warning,
/// or an error that says so when the sunset date is within 30 days or already past.
pub(crate) struct DeprecationReporter {
    policy: DeprecationPolicy,
    callback: Option<DeprecationCallback>,
    warned: Mutex<HashSet<String>>,
}

impl DeprecationReporter {
    /// A reporter with this policy and, optionally, a callback for every notice.
    #[must_use]
    pub(crate) fn new(policy: DeprecationPolicy, callback: Option<DeprecationCallback>) -> Self {
        Self { policy, callback, warned: Mutex::new(HashSet::new()) }
    }

    /// Handles one notice: logs it as the policy says, then calls the callback.
    ///
    /// With [`DeprecationPolicy::WarnOnce`] the first notice for each endpoint is logged and later ones are not; [`DeprecationPolicy::WarnEvery`] logs each one;
    /// [`DeprecationPolicy::Ignore`] and [`DeprecationPolicy::Fail`] log nothing (with
    /// `Fail`, the client turns the response into an error). The callback, when set, is
    /// called for every notice whatever the policy, outside any lock.
    pub(crate) fn report(&self, notice: &DeprecationNotice, route: &str) {
        let log = match self.policy {
            DeprecationPolicy::WarnEvery => true,
            DeprecationPolicy::Ignore | DeprecationPolicy::Fail => false,
            DeprecationPolicy::WarnOnce => {
                let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
                warned.len() < REMEMBERED_ENDPOINTS && warned.insert(format!("{} {route}", notice.method))
            }
        };
        if log {
            self::log(notice, Utc::now());
        }
        if let Some(callback) = &self.callback {
            callback(notice);
        }
    }

    /// The policy given to [`DeprecationReporter::new`].
    #[must_use]
    pub(crate) fn policy(&self) -> DeprecationPolicy {
        self.policy
    }
}

impl fmt::Debug for DeprecationReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner).len();
        f.debug_struct("DeprecationReporter")
            .field("policy", &self.policy)
            .field("callback", &self.callback.as_ref().map(|_| "Fn(&DeprecationNotice)"))
            .field("warned_endpoints", &warned)
            .finish()
    }
}

/// How loudly a notice is logged: as an error when its sunset is past or within
/// [`SUNSET_SOON_DAYS`], else as a warning; and the message that says why.
fn urgency(notice: &DeprecationNotice, now: DateTime<Utc>) -> (Level, &'static str) {
    match notice.sunset {
        Some(sunset) if sunset <= now => {
            (Level::ERROR, "deprecated endpoint is past its sunset date and may stop working at any time")
        }
        Some(sunset) if sunset - now <= TimeDelta::days(SUNSET_SOON_DAYS) => (
            Level::ERROR,
            "deprecated endpoint reaches its sunset date within 30 days and will then stop working",
        ),
        _ if notice.deprecation.is_some() => (Level::WARN, "endpoint is deprecated"),
        _ => (Level::WARN, "endpoint has a scheduled sunset date"),
    }
}

fn log(notice: &DeprecationNotice, now: DateTime<Utc>) {
    let (level, message) = urgency(notice, now);
    // An absent field (`None`) is left out of the event.
    macro_rules! emit {
        ($macro:ident) => {
            tracing::$macro!(
                method = notice.method.as_str(),
                endpoint = notice.endpoint.as_str(),
                sunset = notice.sunset.map(rfc3339),
                successor = notice.successor.as_ref().map(shown_url),
                deprecated_since = notice.deprecated_since().map(rfc3339),
                documentation = notice.documentation.as_ref().map(shown_url),
                diagnostic = notice.diagnostic.as_deref(),
                "{message}"
            )
        };
    }
    if level == Level::ERROR {
        emit!(error);
    } else {
        emit!(warn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::{HeaderMap, HeaderValue};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::subscriber::Interest;
    use tracing::{Event, Level, Metadata, Subscriber};

    /// One event seen by [`Capture`].
    #[derive(Debug, Clone)]
    struct Captured {
        level: Level,
        fields: Vec<(String, String)>,
    }

    impl Captured {
        fn field(&self, name: &str) -> Option<&str> {
            self.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
        }
    }

    /// A subscriber that keeps every event from this module.
    #[derive(Clone, Default)]
    struct Capture {
        events: Arc<Mutex<Vec<Captured>>>,
    }

    impl Capture {
        fn events(&self) -> Vec<Captured> {
            self.events.lock().map(|e| e.clone()).unwrap_or_default()
        }
    }

    struct Fields(Vec<(String, String)>);

    impl Visit for Fields {
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.push((field.name().to_owned(), value.to_owned()));
        }

        fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
            self.0.push((field.name().to_owned(), format!("{value:?}")));
        }
    }

    impl Subscriber for Capture {
        fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
            Interest::always()
        }

        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }

        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }

        fn record(&self, _: &Id, _: &Record<'_>) {}

        fn record_follows_from(&self, _: &Id, _: &Id) {}

        fn event(&self, event: &Event<'_>) {
            if !event.metadata().target().contains("deprecation") {
                return;
            }
            let mut fields = Fields(Vec::new());
            event.record(&mut fields);
            if let Ok(mut events) = self.events.lock() {
                events.push(Captured { level: *event.metadata().level(), fields: fields.0 });
            }
        }

        fn enter(&self, _: &Id) {}

        fn exit(&self, _: &Id) {}
    }

    fn notice(path: &str, headers: &[(&'static str, &'static str)]) -> DeprecationNotice {
        let url = url::Url::parse("https://api.example.com")
            .and_then(|base| base.join(path))
            .expect("valid test url");
        let mut map = HeaderMap::new();
        for (name, value) in headers {
            map.append(*name, HeaderValue::from_static(value));
        }
        DeprecationNotice::from_headers(&http::Method::GET, &url, &map).expect("test headers hold a notice")
    }

    fn deprecated(path: &str) -> DeprecationNotice {
        notice(
            path,
            &[
                ("deprecation", "@1767225600"),
                ("sunset", "Fri, 01 Jan 9999 00:00:00 GMT"),
                ("link", "</v2/companies>; rel=\"successor-version\""),
            ],
        )
    }

    /// Reports `count` copies of `notice` under a capturing subscriber; returns the captured
    /// events and the number of callback calls.
    fn run(policy: DeprecationPolicy, notices: &[DeprecationNotice], count: usize) -> (Vec<Captured>, usize) {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&calls);
        let reporter = DeprecationReporter::new(
            policy,
            Some(Arc::new(move |_| {
                counter.fetch_add(1, Ordering::SeqCst);
            })),
        );
        let capture = Capture::default();
        tracing::subscriber::with_default(capture.clone(), || {
            for _ in 0..count {
                for notice in notices {
                    reporter.report(notice, &notice.endpoint);
                }
            }
        });
        (capture.events(), calls.load(Ordering::SeqCst))
    }

    #[test]
    fn warn_once_logs_once_and_calls_back_every_time() {
        let (events, calls) = run(DeprecationPolicy::WarnOnce, &[deprecated("/v1/companies")], 50);
        assert_eq!(events.len(), 1);
        assert_eq!(calls, 50);
        assert_eq!(events[0].level, Level::WARN);
        assert_eq!(events[0].field("method"), Some("GET"));
        assert_eq!(events[0].field("endpoint"), Some("/v1/companies"));
        assert_eq!(events[0].field("sunset"), Some("9999-01-01T00:00:00Z"));
        assert_eq!(events[0].field("successor"), Some("https://api.example.com/v2/companies"));
        assert_eq!(events[0].field("deprecated_since"), Some("2026-01-01T00:00:00Z"));
        assert_eq!(events[0].field("message"), Some("endpoint is deprecated"));
        assert_eq!((events[0].field("documentation"), events[0].field("diagnostic")), (None, None));
    }

    #[test]
    fn warn_once_is_per_endpoint() {
        let notices = [
            deprecated("/v1/companies"),
            deprecated("/v1/companies?limit=5&cursor=abc"),
            deprecated("/v1/contacts"),
            notice("/v1/companies", &[("deprecation", "@1767225600")]),
        ];
        let (events, calls) = run(DeprecationPolicy::WarnOnce, &notices, 10);
        assert_eq!(events.len(), 2);
        assert_eq!(calls, 40);
    }

    #[test]
    fn warn_once_is_per_reporter() {
        let notices = [deprecated("/v1/companies")];
        assert_eq!(run(DeprecationPolicy::WarnOnce, &notices, 5).0.len(), 1);
        assert_eq!(run(DeprecationPolicy::WarnOnce, &notices, 5).0.len(), 1);
    }

    #[test]
    fn warn_every_logs_every_time() {
        let (events, calls) = run(DeprecationPolicy::WarnEvery, &[deprecated("/v1/companies")], 50);
        assert_eq!((events.len(), calls), (50, 50));
    }

    #[test]
    fn ignore_and_fail_log_nothing_but_call_back() {
        for policy in [DeprecationPolicy::Ignore, DeprecationPolicy::Fail] {
            let (events, calls) = run(policy, &[deprecated("/v1/companies")], 50);
            assert_eq!((events.len(), calls), (0, 50), "{policy:?}");
        }
    }

    #[test]
    fn no_callback_is_fine() {
        let reporter = DeprecationReporter::new(DeprecationPolicy::default(), None);
        reporter.report(&deprecated("/v1/companies"), &deprecated("/v1/companies").endpoint);
        assert_eq!(reporter.policy(), DeprecationPolicy::WarnOnce);
        assert!(format!("{reporter:?}").contains("warned_endpoints: 1"));
    }

    #[test]
    fn remembered_endpoints_are_bounded() {
        let reporter = DeprecationReporter::new(DeprecationPolicy::WarnOnce, None);
        let base = deprecated("/v1/companies");
        let capture = Capture::default();
        tracing::subscriber::with_default(capture.clone(), || {
            for i in 0..REMEMBERED_ENDPOINTS + 10 {
                let mut notice = base.clone();
                notice.endpoint = format!("/v1/companies/{i}");
                reporter.report(&notice, &notice.endpoint);
            }
        });
        assert_eq!(capture.events().len(), REMEMBERED_ENDPOINTS);
    }

    #[test]
    fn warn_once_holds_across_threads() {
        let reporter = DeprecationReporter::new(DeprecationPolicy::WarnOnce, None);
        let notice = deprecated("/v1/companies");
        let capture = Capture::default();
        let dispatch = tracing::Dispatch::new(capture.clone());
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    tracing::dispatcher::with_default(&dispatch, || {
                        for _ in 0..25 {
                            reporter.report(&notice, &notice.endpoint);
                        }
                    });
                });
            }
        });
        assert_eq!(capture.events().len(), 1);
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap_or_default()
    }

    #[test]
    fn urgency_follows_the_sunset_date() {
        let mut n = deprecated("/v1/companies");
        let now = at(1_800_000_000);
        n.sunset = Some(now - TimeDelta::seconds(1));
        assert!(matches!(urgency(&n, now), (Level::ERROR, m) if m.contains("past its sunset")));
        n.sunset = Some(now);
        assert!(matches!(urgency(&n, now), (Level::ERROR, m) if m.contains("past its sunset")));
        n.sunset = Some(now + TimeDelta::days(30));
        assert!(matches!(urgency(&n, now), (Level::ERROR, m) if m.contains("within 30 days")));
        n.sunset = Some(now + TimeDelta::days(31));
        assert_eq!(urgency(&n, now), (Level::WARN, "endpoint is deprecated"));
        n.sunset = None;
        assert_eq!(urgency(&n, now), (Level::WARN, "endpoint is deprecated"));
        n.deprecation = None;
        n.sunset = Some(now + TimeDelta::days(365));
        assert_eq!(urgency(&n, now), (Level::WARN, "endpoint has a scheduled sunset date"));
    }

    #[test]
    fn near_or_past_sunset_is_logged_as_an_error() {
        let now = Utc::now();
        let reporter = DeprecationReporter::new(DeprecationPolicy::WarnEvery, None);
        let mut soon = deprecated("/v1/companies");
        soon.sunset = Some(now + TimeDelta::days(3));
        let mut past = deprecated("/v1/contacts");
        past.sunset = Some(now - TimeDelta::days(3));
        let capture = Capture::default();
        tracing::subscriber::with_default(capture.clone(), || {
            reporter.report(&soon, &soon.endpoint);
            reporter.report(&past, &past.endpoint);
        });
        let events = capture.events();
        assert_eq!(events.len(), 2);
        assert!(events.iter().all(|e| e.level == Level::ERROR));
        assert!(events[0].field("message").is_some_and(|m| m.contains("within 30 days")));
        assert!(events[1].field("message").is_some_and(|m| m.contains("past its sunset")));
        assert_eq!(events[1].field("endpoint"), Some("/v1/contacts"));
    }

    #[test]
    fn reporter_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<DeprecationReporter>();
        check::<DeprecationNotice>();
        check::<DeprecationCallback>();
    }
}
