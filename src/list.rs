//! The request builder of a list endpoint (API Part 4.1), on top of the pagination layer.
//!
//! [`List`] holds a validated query: page size, sort, filters, a starting cursor and a cap on
//! the total. It serialises straight into the query string, and ends in [`List::send`] (one
//! page), [`List::pages`] (a stream of pages) or [`List::stream`] (a stream of items).

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use crate::limits::{MAX_CURSOR_BYTES, MAX_LIMIT};
use crate::model::{Company, CompanyStatus, Contact, IntoSort, Resource};
use crate::pagination::{
    Cursor, ItemStream, ListEndpoint, ListParams, OnUndecodable, Page, PageRequest, PageStream,
};
use crate::{Error, Preview, RetryPolicy};

/// Names reserved for the paging parameters, which have methods of their own.
const RESERVED_PARAMETERS: [&str; 3] = ["limit", "cursor", "sort"];

/// A request builder for a list endpoint: `client.companies()` or `client.contacts()`.
///
/// Setters never fail; the first invalid argument is kept and reported by
/// [`send`](List::send), [`pages`](List::pages) or [`stream`](List::stream) before any request
/// is sent.
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
    source: ListEndpoint,
    query: ListParams,
    error: Option<Error>,
    _resource: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for List<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("List").field("query", &self.query).field("error", &self.error).finish_non_exhaustive()
    }
}

impl<T: Resource> List<T> {
    pub(crate) fn new(source: ListEndpoint) -> Self {
        List { source, query: ListParams::default(), error: None, _resource: PhantomData }
    }

    fn fail(mut self, error: Error) -> Self {
        self.error.get_or_insert(error);
        self
    }

    /// Results per page, 1 to 100. Default: the server's (20) for [`send`](List::send), 100 for
    /// [`pages`](List::pages) and [`stream`](List::stream). This is a page size, not a total:
    /// see [`max_items`](List::max_items).
    pub fn limit(mut self, limit: u32) -> Self {
        if !(1..=MAX_LIMIT).contains(&limit) {
            return self.fail(Error::invalid("limit", format!("expected 1..={MAX_LIMIT}, got {limit}")));
        }
        self.query.limit = Some(limit);
        self
    }

    /// The sort order. Takes this resource's typed field (`CompanySort::CreatedAt.desc()`), or
    /// any field in the wire form (`"-createdAt"`, `"employeeCount"`) or as a [`Sort`](crate::Sort): the
    /// spec names only the common fields, so other names are sent as given and the server
    /// decides. A name with spaces or commas, or an empty one, is refused. Default: the
    /// server's order.
    pub fn sort(mut self, sort: impl IntoSort<T>) -> Self {
        match sort.into_sort() {
            Ok(sort) => {
                self.query.sort = Some(sort);
                self
            }
            Err(e) => self.fail(e),
        }
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
        if name.trim().is_empty() {
            return self.fail(Error::invalid("filter", "expected a parameter name, got an empty one"));
        }
        if RESERVED_PARAMETERS.contains(&name.as_str()) {
            return self.fail(Error::invalid(
                "filter",
                format!("`{name}` is a paging parameter, not a filter: use `{name}(..)` instead"),
            ));
        }
        self.set_filter("filter", Cow::Owned(name), value.into())
    }

    /// Sets a filter; `argument` names the method in the error for an empty value.
    fn set_filter(mut self, argument: &'static str, name: Cow<'static, str>, value: String) -> Self {
        if value.trim().is_empty() {
            return self.fail(Error::invalid(argument, format!("expected a non-empty value for `{name}`")));
        }
        self.query.filters.retain(|(n, _)| *n != name);
        self.query.filters.push((name, value));
        self
    }

    /// What to do with an element of a page that is not a record (not an object, or without a
    /// required field). Default: [`OnUndecodable::Skip`]: the listing goes on, and the
    /// element is reported in [`Page::undecodable`], by
    /// [`ItemStream::take_undecodable`](crate::ItemStream::take_undecodable), in the
    /// stream's counts and as a `tracing` warning. [`OnUndecodable::Fail`] ends the listing
    /// with [`Error::Undecodable`] instead.
    pub fn on_undecodable(mut self, policy: OnUndecodable) -> Self {
        self.query.on_undecodable = policy;
        self
    }

    /// Starts at this cursor instead of the first page (a `nextCursor` from this session:
    /// cursors expire and are bound to the query that produced them). At most
    /// [`MAX_CURSOR_BYTES`](crate::limits::MAX_CURSOR_BYTES) (8 KiB).
    pub fn cursor(mut self, cursor: impl Into<Cursor>) -> Self {
        let cursor = cursor.into();
        if cursor.as_str().is_empty() {
            return self.fail(Error::invalid("cursor", "expected a non-empty cursor"));
        }
        if cursor.as_str().len() > MAX_CURSOR_BYTES {
            return self.fail(Error::invalid(
                "cursor",
                format!("expected at most {} bytes, got {}", MAX_CURSOR_BYTES, cursor.as_str().len()),
            ));
        }
        self.query.cursor = Some(cursor);
        self
    }

    /// Stops after this many items in total, and never requests more than that. Default: no
    /// cap.
    ///
    /// Zero is refused (naming `max_items`): a listing that must deliver nothing needs no
    /// request.
    pub fn max_items(mut self, max_items: u64) -> Self {
        if max_items == 0 {
            return self.fail(Error::invalid("max_items", "expected 1 or more, got 0"));
        }
        self.query.max_items = Some(max_items);
        self
    }

    /// How many empty pages with `hasMore: true` may come in a row before the listing fails
    /// with [`PaginationError::TooManyEmptyPages`](crate::PaginationError). Default: 25.
    pub fn max_empty_pages(mut self, count: u32) -> Self {
        self.query.max_empty_pages = Some(count);
        self
    }

    /// Asks for preview features with `X-API-Preview` on this listing, overriding the client's
    /// label. The label is `YYYY-MM`.
    pub fn preview(mut self, label: impl AsRef<str>) -> Self {
        match Preview::new(label) {
            Ok(label) => {
                self.query.preview = Some(label);
                self
            }
            Err(e) => self.fail(e),
        }
    }

    /// The retry policy for this listing's requests, instead of the client's.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.query.retry = Some(policy);
        self
    }

    /// Fetches one page.
    pub async fn send(self) -> Result<Page<T>, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let request = PageRequest {
            limit: self.query.page_limit(None, 0),
            cursor: self.query.cursor.clone(),
            params: Arc::new(self.query),
            stats: None,
        };
        let page = self.source.page::<T>(&request).await?;
        Ok(match request.params.max_items {
            Some(max) => page.truncated(max),
            None => page,
        })
    }

    /// Every page, following `nextCursor` while `hasMore` is true.
    pub fn pages(self) -> PageStream<T> {
        PageStream::new(self.source, self.query, self.error)
    }

    /// Every item of every page.
    pub fn stream(self) -> ItemStream<T> {
        ItemStream::new(self.pages())
    }
}

/// The builder behind [`Client::companies`](crate::Client::companies).
pub type ListCompanies = List<Company>;

impl List<Company> {
    /// Only companies with this status (`status=`). It must not be empty.
    pub fn status(self, status: impl Into<CompanyStatus>) -> Self {
        let status: CompanyStatus = status.into();
        self.set_filter("status", std::borrow::Cow::Borrowed("status"), status.as_str().to_owned())
    }
}

/// The builder behind [`Client::contacts`](crate::Client::contacts).
pub type ListContacts = List<Contact>;

impl List<Contact> {
    /// Only contacts of this company (`companyId=`). It must not be empty.
    pub fn company_id(self, company_id: impl Into<String>) -> Self {
        self.set_filter("companyId", std::borrow::Cow::Borrowed("companyId"), company_id.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Sort;
    use crate::{Auth, Client, CompanySort, ContactSort};

    fn client() -> Client {
        Client::builder()
            .base_url("https://api.example.com")
            .auth(Auth::static_token("t"))
            .build()
            .expect("a valid client")
    }

    #[test]
    fn query_string_is_pinned() {
        let list = client().companies().status("active").sort(CompanySort::CreatedAt.desc()).limit(50);
        let cursor = Cursor::from("abc");
        let pairs = list.query.pairs(list.query.limit, Some(&cursor));
        let mut url = url::Url::parse("https://x.example/").expect("static url");
        url.query_pairs_mut().extend_pairs(pairs.iter().map(|(k, v)| (k.as_ref(), v.as_str())));
        assert_eq!(url.query(), Some("limit=50&sort=-createdAt&status=active&cursor=abc"));

        let list = client().contacts().company_id("cmp 1&x").sort("name");
        let pairs = list.query.pairs(None, None);
        let mut url = url::Url::parse("https://x.example/").expect("static url");
        url.query_pairs_mut().extend_pairs(pairs.iter().map(|(k, v)| (k.as_ref(), v.as_str())));
        assert_eq!(url.query(), Some("sort=name&companyId=cmp+1%26x"));
        assert_eq!(ContactSort::UpdatedAt.desc().to_string(), "-updatedAt");
    }

    #[test]
    fn invalid_arguments_name_the_argument() {
        let cases: Vec<(List<crate::Company>, &str)> = vec![
            (client().companies().limit(0), "limit"),
            (client().companies().limit(101), "limit"),
            (client().companies().sort("--name"), "sort"),
            (client().companies().sort(""), "sort"),
            (client().companies().sort("name,email"), "sort"),
            (client().companies().sort("created at"), "sort"),
            (client().companies().filter("limit", "5"), "filter"),
            (client().companies().filter("cursor", "abc"), "filter"),
            (client().companies().filter("sort", "name"), "filter"),
            (client().companies().filter("", "x"), "filter"),
            (client().companies().filter("country", " "), "filter"),
            (client().companies().cursor("c".repeat(8 * 1024 + 1)), "cursor"),
            (client().companies().status(""), "status"),
            (client().companies().status("  "), "status"),
            (client().companies().cursor(""), "cursor"),
            (client().companies().preview("2026-13"), "preview"),
            (client().companies().max_items(0), "max_items"),
        ];
        for (list, argument) in cases {
            match list.error {
                Some(Error::InvalidArgument(got)) => assert_eq!(got.argument(), argument),
                other => panic!("expected an error for {argument}, got {other:?}"),
            }
        }
        assert!(client().contacts().company_id("").error.is_some());
        assert!(client().companies().limit(1).limit(100).error.is_none());
        match client().companies().filter("sort", "name").error {
            Some(error) => assert!(error.to_string().contains("use `sort(..)`"), "{error}"),
            None => panic!("`sort` is not a filter"),
        }
    }

    #[test]
    fn any_sort_field_and_new_filters_reach_the_query() {
        let list = client()
            .companies()
            .sort("-employeeCount")
            .filter("country", "DE")
            .status("active")
            .filter("country", "FR")
            .filter("status", "churned");
        assert!(list.error.is_none());
        let pairs = list.query.pairs(None, None);
        let mut url = url::Url::parse("https://x.example/").expect("static url");
        url.query_pairs_mut().extend_pairs(pairs.iter().map(|(k, v)| (k.as_ref(), v.as_str())));
        assert_eq!(url.query(), Some("sort=-employeeCount&country=FR&status=churned"));
        let typed = client().contacts().sort(Sort::descending("email")).sort(ContactSort::Name);
        assert_eq!(typed.query.sort.map(|s| s.to_string()).as_deref(), Some("name"));
    }
}
