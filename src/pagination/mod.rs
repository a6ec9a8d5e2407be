//! Cursor pagination (API Part 4.1): pages, cursors, and the streams that follow them.
//!
//! The rules, each enforced here:
//! - a listing ends only on `hasMore: false`; an empty page with `hasMore: true` continues
//!   (up to a bound, then an error);
//! - `hasMore: true` without a cursor, or with a cursor this listing already used, is an error;
//! - every page request repeats limit, sort and filters with the cursor;
//! - `max_items` stops early and never requests past the cap;
//! - a failed page ends the stream with that error, after every item already received;
//! - with prefetch on, page k+1 is requested as soon as page k arrives.
//!
//! Layout: [`params`] (the listing's parameters and the page-size rule), [`page`] (a page and
//! its cursor), [`envelope`] (the wire shape, decoded element by element), [`guards`] (the rules
//! above, apart from any request), [`fetch`] (one page request, as one value), [`raw`] (how
//! every page arrives: its envelope first, its items decoded after), [`pager`] (the state of a
//! listing, what it delivered and where it would resume) and [`stream`] (the streams). This
//! layer gets what a listing needs from the client in a [`ListEndpoint`], and nothing else.

mod envelope;
mod fetch;
mod guards;
mod page;
mod pager;
mod params;
mod raw;
mod stream;

use std::sync::Arc;
use std::time::Duration;

use url::Url;

pub use envelope::OnUndecodable;
pub(crate) use fetch::{GetPage, PageRequest};
pub use page::{Cursor, Page};
pub(crate) use params::ListParams;
pub use stream::{ItemStream, PageStream};

/// What a listing needs from the client: what sends its requests (the API pipeline), the
/// endpoint and the paging settings. Cheap to clone: streams and prefetch tasks hold one each.
#[derive(Debug, Clone)]
pub(crate) struct ListEndpoint {
    pub(crate) api: Arc<dyn GetPage>,
    /// The endpoint, below the versioned root: `https://api.example.com/v1/companies`.
    pub(crate) url: Arc<Url>,
    pub(crate) paging: Paging,
}

/// How a client's listings move from page to page.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Paging {
    /// Request page k+1 as soon as page k arrives.
    pub(crate) prefetch: bool,
    /// The least time between two page requests of a listing.
    pub(crate) page_delay: Option<Duration>,
}
