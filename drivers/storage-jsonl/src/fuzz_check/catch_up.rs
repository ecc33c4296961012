//! The index's catch-up over a log and its id table (`ids.bin`), through the driver's own ops on a
//! store directory (`jsonl_catch_up`). Any process with the store's directory writes the log and the
//! index files, so the input is both: `<log>\0<damage>\0<appended lines>`. The first op indexes the
//! log; the damage then overwrites or cuts `ids.bin` and `messages.bin` (`meta.json` is left as saved,
//! so the index is trusted as far as its checks reach); the next ops catch up with the appended lines
//! and look messages up by id through the table.
//!
//! Every op answers or fails with the contract's error: no panic, no hang, in bounded memory. Without
//! damage, an index caught up in two steps answers as one built from the whole log at once.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use agmsg_guest_sdk::storage::{Event, Pair, StorageDriver};

use crate::events::parse_line;
use crate::index::{DIR, index_path};
use crate::{Jsonl, LOG_FILE, store_path};

/// The pairs and ids asked about, at most: enough to reach every op's paths, few enough to stay fast.
const MAX_PAIRS: usize = 4;
const MAX_IDS: usize = 8;

/// A store directory of this process's own, emptied for each input (the fuzzer runs inputs one after
/// another on one thread; the replay test sets its own per thread).
fn store_dir() -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let thread = format!("{:?}", std::thread::current().id()).replace(|c: char| !c.is_ascii_alphanumeric(), "");
    let dir = base.join(format!("agmsg-fuzz-jsonl-{}-{thread}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a store directory for the fuzz check");
    dir
}

/// Apply the damage records (`selector, offset (2 bytes LE), length, bytes`) to the index files: an
/// even selector writes into `ids.bin`, an odd one into `messages.bin`; a selector with bit 1 set cuts
/// the file at the offset instead.
fn damage(mut records: &[u8]) -> bool {
    let mut damaged = false;
    while let [selector, lo, hi, len, rest @ ..] = records {
        let file = if selector % 2 == 0 { "ids.bin" } else { "messages.bin" };
        let Ok(f) = OpenOptions::new().write(true).open(index_path(file)) else { return damaged };
        let size = f.metadata().map(|m| m.len()).unwrap_or(0);
        let offset = u64::from(u16::from_le_bytes([*lo, *hi])) % size.max(1);
        let take = usize::from(*len).min(rest.len());
        if selector & 2 != 0 {
            f.set_len(offset).expect("cut an index file");
        } else {
            f.write_all_at(&rest[..take], offset).expect("write into an index file");
        }
        damaged = true;
        records = &rest[take..];
    }
    damaged
}

/// The (team, recipient) pairs and message ids the lines name, as the driver reads them.
fn names_in(lines: &[u8], pairs: &mut Vec<(String, String)>, ids: &mut Vec<String>) {
    for line in lines.split(|b| *b == b'\n') {
        for event in parse_line(line, 1).unwrap_or_default() {
            if let Event::MessageSent(m) = event {
                let pair = (m.team, m.to);
                if pairs.len() < MAX_PAIRS && !pairs.contains(&pair) {
                    pairs.push(pair);
                }
                if ids.len() < MAX_IDS {
                    ids.push(m.id);
                }
            }
        }
    }
}

/// What the read ops answer for the pairs: each pair's unread ids and cursor, each team's history.
fn answers(pairs: &[(String, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (team, agent) in pairs {
        let shown = |r: Result<Vec<agmsg_guest_sdk::storage::Message>, _>| match r {
            Ok(messages) => messages.iter().map(|m| m.id.as_str()).collect::<Vec<_>>().join(","),
            Err(e) => format!("error: {e:?}"),
        };
        out.push(format!("unread {team} {agent}: {}", shown(Jsonl.list_unread(team, agent, None))));
        out.push(format!("history {team}: {}", shown(Jsonl.history(team, None, None))));
        out.push(format!("cursor {team} {agent}: {:?}", Jsonl.read_cursor_get(team, agent)));
    }
    out
}

pub fn jsonl_catch_up(data: &[u8]) {
    let mut parts = data.splitn(3, |b| *b == 0);
    let (log, damage_records, appended) = (parts.next().unwrap_or_default(), parts.next(), parts.next().unwrap_or_default());
    let dir = store_dir();
    crate::host::set_store_dir(&dir);
    std::fs::write(store_path(LOG_FILE), log).expect("write the log");
    let (mut pairs, mut ids) = (Vec::new(), Vec::new());
    names_in(log, &mut pairs, &mut ids);
    names_in(appended, &mut pairs, &mut ids);
    pairs.push(("t".to_owned(), "nobody".to_owned()));
    ids.push("0192aaaa-0000-7000-8000-000000000001".to_owned());

    // The first op builds the index (and runs the one-time cursor migration).
    let _ = Jsonl.watch_tip(&[]);
    let damaged = damage_records.is_some_and(damage);
    let mut log_file = OpenOptions::new().append(true).open(store_path(LOG_FILE)).expect("open the log");
    std::io::Write::write_all(&mut log_file, appended).expect("append to the log");

    let caught_up = answers(&pairs);
    if !damaged {
        std::fs::remove_dir_all(dir.join(DIR)).expect("remove the index");
        assert_eq!(caught_up, answers(&pairs), "caught up in two steps vs built at once");
    }
    // Writes through the id table: read marks (found by id, or kept as pending), a send, a watch.
    for (team, agent) in &pairs {
        let _ = Jsonl.mark_read_batch(team, agent, &ids);
    }
    let _ = Jsonl.send("t", "a", "nobody", "after");
    let watched: Vec<Pair> = pairs.iter().map(|(team, agent)| Pair { team: team.clone(), agent: agent.clone() }).collect();
    let _ = Jsonl.watch_after("0", &watched);
    let _ = answers(&pairs);
    let _ = std::fs::remove_dir_all(&dir);
}
