//! What agmsg-host adds to a store that is only a cache, found and removed for `shim uninstall
//! --remove-caches`. Only a cache: jsonl's `.events-index/` (the persistent index of `events.jsonl`,
//! rebuilt from the log whenever it is missing or stale). Never a cache, so never here: the sqlite
//! driver's rows and indexes (part of the database), and `.agmsg-host/sealed/`, the host's record of the
//! envelopes it sealed for remote-sync reservations.

use std::path::{Path, PathBuf};

/// The names of the cache directories agmsg-host's drivers keep beside a store's files.
pub const CACHE_DIRS: &[&str] = &[".events-index"];

/// How deep below the store a team's own store may be (agmsg's partitions put one in a subdirectory).
const MAX_DEPTH: usize = 3;

/// The store agmsg's install at `agmsg_dir` uses: `AGMSG_STORAGE_PATH`, else its own `db/`.
pub fn store_of(agmsg_dir: &Path) -> PathBuf {
    match std::env::var("AGMSG_STORAGE_PATH") {
        Ok(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => agmsg_dir.join("db"),
    }
}

/// The cache directories below `store`, found without following a link (a link named like one is not
/// one), and never inside the names a driver does not see (`.agmsg-host/`, `remote-sync/`).
pub fn find(store: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![(store.to_owned(), 0)];
    while let Some((dir, depth)) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if !is_dir || name == ".agmsg-host" || name == "remote-sync" {
                continue;
            }
            if CACHE_DIRS.contains(&name.as_ref()) {
                found.push(entry.path());
            } else if depth + 1 < MAX_DEPTH {
                todo.push((entry.path(), depth + 1));
            }
        }
    }
    found.sort();
    found
}

/// Remove each cache directory (a link put in its place is removed, not followed); what failed, why.
pub fn remove(caches: &[PathBuf]) -> Vec<(PathBuf, std::io::Error)> {
    caches
        .iter()
        .filter_map(|dir| match std::fs::remove_dir_all(dir) {
            Ok(()) => None,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some((dir.clone(), e)),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_real_cache_directories_are_found() {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path();
        for dir in [".events-index", "team-a/.events-index", ".agmsg-host/sealed/.events-index", "remote-sync/.events-index"] {
            std::fs::create_dir_all(store.join(dir)).unwrap();
        }
        std::fs::write(store.join("events.jsonl"), "").unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir(elsewhere.path().join("keep")).unwrap();
        std::fs::create_dir(store.join("linked")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), store.join("linked/.events-index")).unwrap();
        assert_eq!(find(store), vec![store.join(".events-index"), store.join("team-a/.events-index")]);
        assert!(remove(&find(store)).is_empty());
        assert_eq!(find(store), Vec::<PathBuf>::new());
        assert!(store.join("events.jsonl").exists() && store.join(".agmsg-host/sealed").is_dir());
        assert!(elsewhere.path().join("keep").is_dir(), "a link is never followed");
    }
}
