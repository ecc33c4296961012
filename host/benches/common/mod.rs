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

/// One result line: ours, the baseline, and the ratio ours / baseline.
pub fn row(what: &str, ours: Duration, baseline: Duration, baseline_name: &str) {
    println!(
        "{what:<42} {:>9.3} ms   {baseline_name:<24} {:>9.3} ms   ratio {:>5.2}x",
        ms(ours),
        ms(baseline),
        ours.as_secs_f64() / baseline.as_secs_f64()
    );
}

/// Median of `n` runs each of `ours` and `base`, run one after the other so that drift hits both.
pub fn alternating(n: usize, mut ours: impl FnMut(usize), mut base: impl FnMut(usize)) -> (Duration, Duration) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for i in 0..n {
        let started = Instant::now();
        ours(i);
        a.push(started.elapsed());
        let started = Instant::now();
        base(i);
        b.push(started.elapsed());
    }
    (median(a), median(b))
}

/// `program` on `PATH` (the host's own lookup: an executable file in an absolute directory).
pub fn which(program: &str) -> Option<std::path::PathBuf> {
    agmsg_host::runtime::caps::process::find_on_path(program, &std::env::var_os("PATH")?)
}

/// `agmsg-host` run as one process per op (the resident server, on by default, switched off): what these
/// benches measure, unless they say otherwise (`overhead` and `watch_latency` also measure through it).
pub fn host_command() -> std::process::Command {
    let mut cmd = std::process::Command::new(host_binary());
    cmd.env(SERVER_SWITCH, "off");
    cmd
}

/// The variable that turns the resident server on or off for an `agmsg-host` process.
pub const SERVER_SWITCH: &str = "AGMSG_HOST_SERVER";

/// The `agmsg-host` binary the benchmarks run: `AGMSG_HOST_BIN`, else cargo's build of this tree, copied
/// once per bench process into a directory of cargo's temporary one with its engine
/// (`agmsg-host-engine`, beside it wherever it is built or installed), as `cargo install` or a package
/// places them. The copy is what users run, and it matters: the file the linker has just written is
/// served from page cache the linker filled through its own mapping, in small pages, and every process
/// that maps it takes more page faults. On the project's VM a whole `storage list-unread` took 20% more
/// CPU from the linker's file than from a copy of it (787 against 674 page faults, 100 alternating
/// runs), which earlier stops had mistaken for a difference between builds.
pub fn host_binary() -> &'static std::path::Path {
    static COPY: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    COPY.get_or_init(|| {
        let built =
            std::env::var_os("AGMSG_HOST_BIN").map(std::path::PathBuf::from).unwrap_or_else(|| env!("CARGO_BIN_EXE_agmsg-host").into());
        let base = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
        // Copied into a directory of this process's, then renamed: a bench running beside this one keeps
        // the files it is running.
        let partial = base.join(format!("agmsg-host-bench.{}", std::process::id()));
        let dir = base.join("agmsg-host-bench");
        let copied = std::fs::create_dir_all(&partial).and_then(|_| {
            for name in ["agmsg-host", "agmsg-host-engine"] {
                std::fs::copy(built.with_file_name(name), partial.join(name))?;
            }
            let _ = std::fs::remove_dir_all(&dir).or_else(|_| std::fs::remove_file(&dir));
            std::fs::rename(&partial, &dir)
        });
        copied.unwrap_or_else(|e| panic!("copying {} and its engine to {}: {e}", built.display(), dir.display()));
        dir.join("agmsg-host")
    })
}
