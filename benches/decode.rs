//! `Page<Company>` decoding against `serde_json` into a plain struct of the same fields.
//!
//! ```text
//! cargo bench --bench decode
//! ```

use std::hint::black_box;

use business_records::{Company, Page};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

mod support;
use support::{PlainPage, page_body};

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
