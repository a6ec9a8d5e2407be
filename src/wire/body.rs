//! Reading response bodies under their limits, and decoding them.

use serde::de::DeserializeOwned;
use std::sync::Arc;

use crate::Error;
use crate::error::{DecodeError, HttpError, ResponseTooLarge};
use crate::limits::BodyLimit;

/// Reads a response body, every one the crate reads: chunk by chunk, stopping as soon as it
/// passes `limit` (or at once when `Content-Length` says it will), so an oversized body is
/// never held in memory.
pub(crate) async fn read_body(
    endpoint: &str,
    mut response: reqwest::Response,
    limit: BodyLimit,
) -> Result<Vec<u8>, Error> {
    let too_large = || {
        let (endpoint, body, limit) = (endpoint.to_owned(), limit.body, limit.bytes);
        Error::ResponseTooLarge(Arc::new(ResponseTooLarge { endpoint, body, limit }))
    };
    let announced = response.content_length();
    if announced.is_some_and(|length| length > limit.bytes) {
        return Err(too_large());
    }
    let capacity = usize::try_from(announced.unwrap_or(0)).unwrap_or(0);
    let mut body = Vec::with_capacity(capacity);
    while let Some(chunk) =
        response.chunk().await.map_err(|e| Error::Http(HttpError::from_reqwest(endpoint, e)))?
    {
        if (body.len() + chunk.len()) as u64 > limit.bytes {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

pub(crate) fn decode<T: DeserializeOwned>(endpoint: &str, body: &[u8]) -> Result<T, Error> {
    serde_json::from_slice(body).map_err(|e| Error::Decode(DecodeError::new(endpoint, e)))
}
