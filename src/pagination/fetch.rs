//! One page request: the query on the wire, the body decoded, odd elements settled.

use serde::de::DeserializeOwned;

use super::envelope::OnUndecodable;
use super::{Cursor, ListEndpoint, ListParams, Page};
use crate::Error;
use crate::deprecation::DeprecationNotice;
use crate::error::UndecodableError;
use crate::model::Resource;
use crate::pipeline::{ApiRequest, CallStats};
use crate::wire::decode;

/// Requests page number `number` (from 1) of a listing.
pub(crate) async fn fetch_page<T: Resource>(
    source: &ListEndpoint,
    query: &ListParams,
    limit: Option<u32>,
    cursor: Option<&Cursor>,
    stats: Option<&CallStats>,
    number: u64,
) -> Result<Page<T>, Error> {
    let (page, deprecation) = request_page::<Page<T>>(source, query, limit, cursor, stats).await?;
    let mut page = Page { deprecation, ..page };
    settle_undecodable(&mut page, number, source.url.path(), query.on_undecodable)?;
    Ok(page)
}

/// Numbers the elements of page `number` that are not records, warns about a few of them, and
/// with [`OnUndecodable::Fail`] turns the first into the listing's error.
pub(super) fn settle_undecodable<T>(
    page: &mut Page<T>,
    number: u64,
    endpoint: &str,
    on_undecodable: OnUndecodable,
) -> Result<(), Error> {
    for item in &mut page.undecodable {
        item.page = number;
    }
    // A few warnings per page: a page of thousands of odd elements must not flood the log.
    for item in page.undecodable.iter().take(3) {
        tracing::warn!(endpoint, "{item}");
    }
    if page.undecodable.len() > 3 {
        let more = page.undecodable.len() - 3;
        tracing::warn!(endpoint, "{more} more elements of page {number} are not records");
    }
    if on_undecodable == OnUndecodable::Fail
        && let Some(item) = page.undecodable.drain(..).next()
    {
        return Err(Error::Undecodable(UndecodableError::new(endpoint, item)));
    }
    Ok(())
}

/// Sends the request for a page of `T` and decodes the body as `B`.
pub(super) async fn request_page<B: DeserializeOwned>(
    source: &ListEndpoint,
    query: &ListParams,
    limit: Option<u32>,
    cursor: Option<&Cursor>,
    stats: Option<&CallStats>,
) -> Result<(B, Option<DeprecationNotice>), Error> {
    let pairs = query.pairs(limit, cursor);
    let call = ApiRequest {
        url: &source.url,
        query: &pairs,
        preview: query.preview.as_ref(),
        retry: query.retry.as_ref(),
        stats,
    };
    let response = source.pipeline.get(&call).await?;
    let body = decode(source.url.path(), &response.body)?;
    Ok((body, response.deprecation))
}

pub(super) type PageResult<T> = Result<Page<T>, Error>;
