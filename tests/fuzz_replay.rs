//! Every fuzz target's kept corpus (`fuzz/corpus/<target>/`: the seeds, the inputs campaigns found that
//! add coverage, and each finding's input beside its fix) replayed through the target's checks, as an
//! ordinary test on the pinned stable toolchain: CI does not fuzz (scripts/fuzz does), but every input
//! that once found a bug, and every property a target asserts, is checked on each run. The checks are
//! the fuzz targets' own (fuzz/src/targets.rs, included as a module: the fuzz crate's own workspace is
//! never built here), with their allocation bound, and each input within a deadline.

#[path = "../fuzz/src/targets.rs"]
#[allow(dead_code)]
mod fuzz;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: fuzz::Counting = fuzz::Counting;

/// Far above what any input takes (milliseconds, in a debug build), far below a hang.
const DEADLINE: Duration = Duration::from_secs(10);

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus")
}

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_replays_through_its_target() {
    let mut failures = Vec::new();
    let mut replayed = 0;
    for (name, target) in fuzz::TARGETS {
        let files = inputs(&corpus_root().join(name));
        assert!(!files.is_empty(), "fuzz/corpus/{name} holds no input");
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let started = Instant::now();
            let outcome = std::panic::catch_unwind(|| fuzz::run(*target, &data));
            let took = started.elapsed();
            match outcome {
                Err(e) => {
                    let why = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                    failures.push(format!("{name}: {}: {}", file.display(), why.unwrap_or_default()));
                }
                Ok(()) if took > DEADLINE => failures.push(format!("{name}: {}: took {took:?}", file.display())),
                Ok(()) => {}
            }
            replayed += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {replayed} inputs failed:\n{}", failures.len(), failures.join("\n"));
}

/// Each corpus directory is a target's, and each target has one: a renamed target cannot leave its
/// corpus unreplayed.
#[test]
fn every_corpus_directory_is_a_target() {
    // The jsonl driver's targets are replayed by its own unit tests (it builds natively only as a cdylib).
    let names: Vec<&str> = fuzz::TARGETS.iter().map(|(n, _)| *n).chain(fuzz::DRIVER_TARGETS.iter().copied()).collect();
    for entry in std::fs::read_dir(corpus_root()).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        assert!(names.contains(&name.as_str()), "fuzz/corpus/{name} is no target's (fuzz/src/targets.rs TARGETS)");
    }
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/Cargo.toml")).unwrap();
    for name in names {
        assert!(manifest.contains(&format!("name = \"{name}\"")), "fuzz/Cargo.toml has no binary {name}");
    }
}
