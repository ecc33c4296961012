//! Timing helpers shared by the benchmarks.
#![allow(dead_code)]

use std::time::{Duration, Instant};

pub fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Median wall time of `n` runs of `f`.
pub fn time<T>(n: usize, mut f: impl FnMut(usize) -> T) -> Duration {
    let samples = (0..n)
        .map(|i| {
            let start = Instant::now();
            std::hint::black_box(f(i));
            start.elapsed()
        })
        .collect();
    median(samples)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `cargo test --benches` runs bench binaries with `--list`; there is nothing to list.
pub fn listing_only() -> bool {
    std::env::args().any(|a| a == "--list")
}
