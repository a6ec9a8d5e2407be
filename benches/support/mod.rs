//! What the decode comparisons share: the baseline types and the page they decode.

use business_records_reference_server::Dataset;
use serde::Deserialize;

/// The baseline: the same fields as the dataset's companies, no unknown-field capture.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
pub(crate) struct PlainCompany {
    id: String,
    name: String,
    status: String,
    created_at: chrono::DateTime<chrono::Utc>,
    updated_at: chrono::DateTime<chrono::Utc>,
    pub industry: String,
    employee_count: u32,
    country: String,
}

/// A page of [`PlainCompany`].
#[derive(Deserialize)]
#[allow(dead_code)]
pub(crate) struct PlainPage {
    pub data: Vec<PlainCompany>,
    pagination: serde_json::Value,
}

/// A page of 100 generated companies, as the API sends it.
pub(crate) fn page_body() -> Vec<u8> {
    let dataset = Dataset::generate(100, 0, 7);
    let body = serde_json::json!({
        "data": dataset.companies(),
        "pagination": {"hasMore": true, "nextCursor": "abc", "totalCount": 20_000},
    });
    serde_json::to_vec(&body).unwrap_or_default()
}
