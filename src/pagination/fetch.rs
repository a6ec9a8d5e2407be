//! One page request: its parameters as one value, and what sends it.

use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use url::Url;

use super::raw::RawPage;
use super::{Cursor, ListEndpoint, ListParams, Page};
use crate::Error;
use crate::model::Resource;
use crate::pipeline::{ApiPipeline, ApiRequest, ApiResponse, CallStats};

/// One page request of a listing: the listing's parameters, the page size, the cursor, and
/// where its retries and waits are counted. Owned, so a prefetch task can take it.
#[derive(Debug, Clone)]
pub(crate) struct PageRequest {
    pub(crate) params: Arc<ListParams>,
    /// `None` leaves the page size to the server.
    pub(crate) limit: Option<u32>,
    /// `None` for the first page.
    pub(crate) cursor: Option<Cursor>,
    pub(crate) stats: Option<Arc<CallStats>>,
}

/// Sends the page requests of listings: the API pipeline in a client, a script in tests.
pub(crate) trait GetPage: Send + Sync + fmt::Debug + 'static {
    /// Sends `request` for a page of the endpoint at `url`: the answer's body and deprecation
    /// headers, or the error it ended with.
    fn get_page<'a>(
        &'a self,
        url: &'a Url,
        request: &'a PageRequest,
    ) -> BoxFuture<'a, Result<ApiResponse, Error>>;
}

impl GetPage for ApiPipeline {
    fn get_page<'a>(
        &'a self,
        url: &'a Url,
        request: &'a PageRequest,
    ) -> BoxFuture<'a, Result<ApiResponse, Error>> {
        Box::pin(async move {
            let query = request.params.pairs(request.limit, request.cursor.as_ref());
            let call = ApiRequest {
                url,
                query: &query,
                preview: request.params.preview.as_ref(),
                retry: request.params.retry.as_ref(),
                stats: request.stats.as_deref(),
            };
            self.get(&call).await
        })
    }
}

impl ListEndpoint {
    /// Sends `request` and reads the page envelope of the answer, its items left for
    /// [`RawPage::decode`].
    pub(crate) async fn fetch(&self, request: &PageRequest) -> Result<RawPage, Error> {
        let response = self.api.get_page(&self.url, request).await?;
        RawPage::read(self.url.path(), response)
    }

    /// Sends `request` for a page on its own ([`List::send`](crate::List::send)): page 1, as
    /// far as numbering the elements that are not records goes.
    pub(crate) async fn page<T: Resource>(&self, request: &PageRequest) -> Result<Page<T>, Error> {
        let raw = self.fetch(request).await?;
        raw.decode(1, self.url.path(), request.params.on_undecodable)
    }
}
