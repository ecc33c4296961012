//! The fuzz targets' checks of the driver's store files (issue 39), built into the driver where its
//! code is: natively in the fuzz crate (`--cfg fuzzing`, scripts/fuzz; the fuzz binaries call these
//! functions) and in the driver's unit tests, which replay each target's kept corpus
//! (`fuzz/corpus/<target>/`). Never in the component.
//!
//! - [`lines`]: `events.jsonl`'s lines (`jsonl_line`);
//! - [`store`]: `read-cursors.tsv`, the log as agmsg's sync journal, the index's `meta.json` and
//!   `messages.bin` as bytes (`jsonl_cursors`, `jsonl_journal`, `jsonl_index`);
//! - [`catch_up`]: the index built and caught up over a log, with damaged `ids.bin` and
//!   `messages.bin`, through the driver's ops on a real store directory (`jsonl_catch_up`).

pub mod catch_up;
pub mod lines;
pub mod store;

/// A target's check: one input in, a panic when a property breaks.
pub type Target = fn(&[u8]);

/// Each target by the name of its binary and corpus directory.
pub const TARGETS: &[(&str, Target)] = &[
    ("jsonl_line", lines::jsonl_line),
    ("jsonl_cursors", store::jsonl_cursors),
    ("jsonl_journal", store::jsonl_journal),
    ("jsonl_index", store::jsonl_index),
    ("jsonl_catch_up", catch_up::jsonl_catch_up),
];

#[cfg(test)]
mod replay {
    /// Every kept input through its target's check (CI does not fuzz; scripts/fuzz does), each within a
    /// deadline far above what it takes.
    #[test]
    fn the_kept_corpora_replay() {
        for (name, target) in super::TARGETS {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(name);
            let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
            files.sort();
            assert!(!files.is_empty(), "{} holds no input", dir.display());
            for file in files {
                let data = std::fs::read(&file).unwrap();
                let started = std::time::Instant::now();
                if let Err(e) = std::panic::catch_unwind(|| target(&data)) {
                    let why = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                    panic!("{}: {}", file.display(), why.unwrap_or_default());
                }
                assert!(started.elapsed() < std::time::Duration::from_secs(10), "{}: a hang", file.display());
            }
        }
    }
}
