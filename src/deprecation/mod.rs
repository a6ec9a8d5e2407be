//! Deprecation and sunset headers (placeholder until the parsers land).
#![allow(missing_docs, dead_code)]
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeprecationNotice {
    pub method: http::Method,
    pub endpoint: String,
    pub sunset: Option<chrono::DateTime<chrono::Utc>>,
    pub successor: Option<url::Url>,
}
impl DeprecationNotice {
    pub fn from_headers(_m: &http::Method, _u: &url::Url, _h: &http::HeaderMap) -> Option<Self> {
        None
    }
}
impl std::fmt::Display for DeprecationNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {} is deprecated", self.method, self.endpoint)
    }
}
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum DeprecationPolicy {
    #[default]
    WarnOnce,
    WarnEvery,
    Ignore,
    Fail,
}
pub type DeprecationCallback = Arc<dyn Fn(&DeprecationNotice) + Send + Sync>;
pub struct DeprecationReporter {
    policy: DeprecationPolicy,
    callback: Option<DeprecationCallback>,
}
impl std::fmt::Debug for DeprecationReporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeprecationReporter")
            .finish_non_exhaustive()
    }
}
impl DeprecationReporter {
    pub fn new(policy: DeprecationPolicy, callback: Option<DeprecationCallback>) -> Self {
        DeprecationReporter { policy, callback }
    }
    pub fn report(&self, notice: &DeprecationNotice) {
        if let Some(cb) = &self.callback {
            cb(notice)
        }
    }
    pub fn policy(&self) -> DeprecationPolicy {
        self.policy
    }
}
