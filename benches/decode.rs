//! `Page<Company>` decoding against `serde_json` into a plain struct of the same fields.
//!
//! ```text
//! cargo bench --bench decode
//! ```

use std::hint::black_box;

use business_records::reference_server::Dataset;
use business_records::{Company, Page};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde::Deserialize;

/// The baseline: the same fields, no unknown-field capture.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(dead_code)]
struct PlainCompany {
    id: String,
    name: String,
    status: String,
    created_at: chrono::DateTime<chrono::Utc>,
    updated_at: chrono::DateTime<chrono::Utc>,
    industry: String,
    employee_count: u32,
    country: String,
}

#[derive(Deserialize)]
#[allow(dead_code)]
struct PlainPage {
    data: Vec<PlainCompany>,
    pagination: serde_json::Value,
}

fn page_body() -> Vec<u8> {
    let dataset = Dataset::generate(100, 0, 7);
    let body = serde_json::json!({
        "data": dataset.companies,
        "pagination": {"hasMore": true, "nextCursor": "abc", "totalCount": 20_000},
    });
    serde_json::to_vec(&body).unwrap_or_default()
}

fn decode(c: &mut Criterion) {
    let body = page_body();
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(body.len() as u64));
    group.bench_function("baseline_plain_struct", |b| {
        b.iter(|| serde_json::from_slice::<PlainPage>(black_box(&body)).map(|p| p.data.len()).unwrap_or(0))
    });
    group.bench_function("sdk_page_company", |b| {
        b.iter(|| {
            serde_json::from_slice::<Page<Company>>(black_box(&body)).map(|p| p.data.len()).unwrap_or(0)
        })
    });
    group.finish();
}

criterion_group!(benches, decode);
criterion_main!(benches);
