//! How much the client reads from a server: the size limits of response bodies.
//!
//! Every answer is read on one path (the wire's), which stops reading a body as soon as the
//! bytes received pass the limit for the body's kind, before anything is decoded, and answers
//! [`Error::ResponseTooLarge`](crate::Error::ResponseTooLarge) naming the limit. A
//! `Content-Length` above the limit is refused before the body is read. An error answer's body
//! past its limit is the exception: it is ignored, and the status and headers alone make the
//! error, so that a 429 or a 503 is still retried.
//!
//! | Body | Limit | Set with |
//! |---|---|---|
//! | a page of a listing | 32 MiB | [`ClientBuilder::max_page_bytes`](crate::ClientBuilder::max_page_bytes) |
//! | an error response | 256 KiB | fixed; a larger one is ignored and the error made from the status and headers |
//! | a token response | 64 KiB | fixed |
//! | an OpenID discovery document | 256 KiB | fixed |
//! | a token introspection response | 64 KiB | fixed |
//! | a JWKS document | 1 MiB | fixed |

/// Largest page size the API accepts (API Part 8): [`List::limit`](crate::List::limit) takes
/// 1 to this.
pub const MAX_LIMIT: u32 = 100;

/// Page size the API uses when a request gives none (API Part 8).
pub const DEFAULT_LIMIT: u32 = 20;

/// The longest cursor accepted, from the server or the caller: 8 KiB.
pub const MAX_CURSOR_BYTES: usize = 8 * 1024;

/// The default limit of a page body: 32 MiB (a page holds at most 100 records).
pub const DEFAULT_MAX_PAGE_BYTES: u64 = 32 * 1024 * 1024;

/// A kind of response body and the most bytes read of it (the table above).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BodyLimit {
    /// The kind's name, as in error messages: `page`, `error`, `token`, ...
    pub(crate) body: &'static str,
    /// The most bytes read.
    pub(crate) bytes: u64,
}

impl BodyLimit {
    /// A page of a listing, unless the client sets another limit.
    pub(crate) const PAGE: BodyLimit = BodyLimit { body: "page", bytes: DEFAULT_MAX_PAGE_BYTES };
    /// An error response.
    pub(crate) const ERROR: BodyLimit = BodyLimit { body: "error", bytes: 256 * 1024 };
    /// A token endpoint response.
    pub(crate) const TOKEN: BodyLimit = BodyLimit { body: "token", bytes: 64 * 1024 };
    /// An OpenID discovery document.
    pub(crate) const DISCOVERY: BodyLimit = BodyLimit { body: "discovery", bytes: 256 * 1024 };
    /// A token introspection response.
    pub(crate) const INTROSPECTION: BodyLimit = BodyLimit { body: "introspection", bytes: 64 * 1024 };
    /// A JWKS document.
    pub(crate) const JWKS: BodyLimit = BodyLimit { body: "jwks", bytes: 1024 * 1024 };
}
