//! The request builder of a list endpoint (API Part 4.1), on top of the pagination layer.
//!
//! [`List`] holds a validated query: page size, sort, filters, a starting cursor and a cap on
//! the total. It serialises straight into the query string, and ends in [`List::send`] (one
//! page), [`List::pages`] (a stream of pages) or [`List::stream`] (a stream of items).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use http::Method;
use serde::de::DeserializeOwned;

use crate::limits::{MAX_CURSOR_BYTES, MAX_LIMIT};
use crate::model::{Company, CompanyStatus, Contact};
use crate::pagination::{Cursor, ItemStream, OnUndecodable, Page, PageStream, Query, cursor_rejected};
use crate::pipeline::{Call, Pipeline};
use crate::text::server_text;
use crate::urls::ApiPath;
use crate::{Error, RetryPolicy, Sort};

/// Names reserved for the paging parameters, which have methods of their own.
const RESERVED_PARAMETERS: [&str; 3] = ["limit", "cursor", "sort"];

/// A request builder for a list endpoint: [`Client::companies`](crate::Client::companies),
/// [`Client::contacts`](crate::Client::contacts), or any endpoint that answers with the page
/// envelope, [`Client::list`](crate::Client::list).
///
/// Setters never fail; the first invalid argument is kept and reported by
/// [`send`](List::send), [`pages`](List::pages) or [`stream`](List::stream) before any request
/// is sent, naming the method that took it.
///
/// ```no_run
/// use business_records::{Client, CompanySort};
/// # async fn run(client: Client) -> Result<(), business_records::Error> {
/// let page = client.companies()
///     .status("active")
///     .sort(CompanySort::Name.asc())
///     .limit(50)
///     .send()
///     .await?;
/// println!("{} of {:?}", page.data.len(), page.total_count);
/// # Ok(()) }
/// ```
#[must_use = "a list builder does nothing until `send`, `pages` or `stream`"]
pub struct List<T> {
    pipeline: Pipeline,
    query: Result<Query, Error>,
    items: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for List<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("List").field("query", &self.query).finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned + Send + 'static> List<T> {
    pub(crate) fn new(pipeline: Pipeline, path: ApiPath) -> Self {
        let query = Call::new(Method::GET, &pipeline.settings.api_root, &path).map(Query::new);
        List { pipeline, query, items: PhantomData }
    }

    /// Applies `change` unless an earlier setter failed; its error replaces the query.
    fn with(self, change: impl FnOnce(&mut Query) -> Result<(), Error>) -> Self {
        List { query: self.query.and_then(|mut query| change(&mut query).map(|()| query)), ..self }
    }

    /// Applies `change`, which cannot fail, unless an earlier setter failed.
    fn set(self, change: impl FnOnce(&mut Query)) -> Self {
        self.with(|query| {
            change(query);
            Ok(())
        })
    }

    /// Results per page, 1 to 100. Default: the server's (20) for [`send`](List::send), 100 for
    /// [`pages`](List::pages) and [`stream`](List::stream). This is a page size, not a total:
    /// see [`max_items`](List::max_items).
    pub fn limit(self, limit: u32) -> Self {
        self.with(|query| {
            if !(1..=MAX_LIMIT).contains(&limit) {
                let total = if limit > MAX_LIMIT { "; to cap the total, use `max_items`" } else { "" };
                let message = format!("expected a page size of 1..={MAX_LIMIT}, got {limit}{total}");
                return Err(Error::invalid("limit", message));
            }
            query.limit = Some(limit);
            Ok(())
        })
    }

    /// The sort order: a typed field of this resource (`CompanySort::CreatedAt.desc()`), or any
    /// field in the wire form (`"-createdAt"`, `"employeeCount"`): the spec names only the
    /// common fields, so other names are sent as given and the server decides. A name with
    /// spaces or commas, or an empty one, is refused. Default: the server's order.
    pub fn sort(self, sort: impl Into<Sort<T>>) -> Self {
        let sort = sort.into();
        let wire = sort.to_string();
        self.with(|query| {
            if !sort.is_well_formed() {
                let expected = "expected a field name (no spaces or commas), optionally with a leading `-`";
                return Err(Error::invalid("sort", format!("{expected}, got {:?}", server_text(&wire))));
            }
            query.sort = Some(wire);
            Ok(())
        })
    }

    /// Sends the query parameter `name=value` on every page request: for filters the API adds
    /// later (API Part 9.3 lets it add optional parameters without a new version). Setting a
    /// name again replaces its value. `limit`, `cursor` and `sort` are refused (they have
    /// methods of their own), as are an empty name and an empty value; the error names the
    /// `filter` argument.
    ///
    /// ```no_run
    /// # async fn run(client: business_records::Client) -> Result<(), business_records::Error> {
    /// let page = client.companies().status("active").filter("country", "DE").send().await?;
    /// # let _ = page;
    /// # Ok(()) }
    /// ```
    pub fn filter(self, name: impl Into<String>, value: impl Into<String>) -> Self {
        let name = name.into();
        if RESERVED_PARAMETERS.contains(&name.as_str()) {
            let message = format!("`{name}` is a paging parameter, not a filter: use `{name}(..)` instead");
            return self.with(|_| Err(Error::invalid("filter", message)));
        }
        self.set_filter("filter", Cow::Owned(name), value.into())
    }

    /// Sets a filter; `argument` names the method in the error for an empty name or value.
    fn set_filter(self, argument: &'static str, name: Cow<'static, str>, value: String) -> Self {
        self.with(|query| {
            if name.trim().is_empty() {
                return Err(Error::invalid(argument, "expected a parameter name, got an empty one"));
            }
            if value.trim().is_empty() {
                return Err(Error::invalid(argument, format!("expected a non-empty value for `{name}`")));
            }
            query.filters.retain(|(n, _)| *n != name);
            query.filters.push((name, value));
            Ok(())
        })
    }

    /// What to do with an element of a page that is not a `T` (not an object, or without a
    /// required field). Default: [`OnUndecodable::Skip`]: the listing goes on, and the
    /// element is reported in [`Page::undecodable`], by
    /// [`ItemStream::take_undecodable`], in the stream's counts and as a `tracing` warning.
    /// [`OnUndecodable::Fail`] ends the listing with [`Error::Undecodable`] instead.
    pub fn on_undecodable(self, policy: OnUndecodable) -> Self {
        self.set(|query| query.on_undecodable = policy)
    }

    /// Starts at this cursor instead of the first page (a `nextCursor` from this session:
    /// cursors expire and are bound to the query that produced them). At most
    /// [`MAX_CURSOR_BYTES`] (8 KiB).
    pub fn cursor(self, cursor: impl Into<Cursor>) -> Self {
        let cursor = cursor.into();
        self.with(|query| {
            let length = cursor.as_str().len();
            if length == 0 || length > MAX_CURSOR_BYTES {
                let message = format!("expected a cursor of 1 to {MAX_CURSOR_BYTES} bytes, got {length}");
                return Err(Error::invalid("cursor", message));
            }
            query.cursor = Some(cursor);
            Ok(())
        })
    }

    /// Stops after this many items in total, and never requests more than that. Default: no
    /// cap. Zero is refused: a listing that must deliver nothing needs no request.
    pub fn max_items(self, max_items: u64) -> Self {
        self.with(|query| {
            if max_items == 0 {
                return Err(Error::invalid("max_items", "expected 1 or more, got 0"));
            }
            query.max_items = Some(max_items);
            Ok(())
        })
    }

    /// How many empty pages with `hasMore: true` may come in a row before the listing fails
    /// with [`PaginationError::TooManyEmptyPages`](crate::error::PaginationError). Default: 25.
    pub fn max_empty_pages(self, count: u32) -> Self {
        self.set(|query| query.max_empty_pages = count)
    }

    /// Asks for preview features with `X-API-Preview` on this listing, overriding the client's
    /// label. The label is `YYYY-MM`.
    pub fn preview(self, label: impl AsRef<str>) -> Self {
        self.with(|query| query.call.preview(label))
    }

    /// The retry policy for this listing's requests, instead of the client's.
    pub fn retry(self, policy: RetryPolicy) -> Self {
        self.set(|query| query.call.retry = Some(policy))
    }

    /// Fetches one page.
    pub async fn send(self) -> Result<Page<T>, Error> {
        let query = self.query?;
        let call = query.page(query.page_limit(None, 0), query.cursor.as_ref());
        let page = Page::fetch(&self.pipeline, &call, None, 1, query.on_undecodable).await;
        let page = page.map_err(|error| cursor_rejected(error, query.cursor.is_some(), 0))?;
        Ok(page.truncated(query.max_items))
    }

    /// Every page, following `nextCursor` while `hasMore` is true.
    pub fn pages(self) -> PageStream<T> {
        PageStream::new(self.pipeline, self.query)
    }

    /// Every item of every page.
    pub fn stream(self) -> ItemStream<T> {
        ItemStream::new(self.pages())
    }
}

impl List<Company> {
    /// Only companies with this status (`status=`). It must not be empty.
    pub fn status(self, status: impl Into<CompanyStatus>) -> Self {
        let status: CompanyStatus = status.into();
        self.set_filter("status", Cow::Borrowed("status"), status.as_str().to_owned())
    }
}

impl List<Contact> {
    /// Only contacts of this company (`companyId=`). It must not be empty.
    pub fn company_id(self, company_id: impl Into<String>) -> Self {
        self.set_filter("company_id", Cow::Borrowed("companyId"), company_id.into())
    }
}
