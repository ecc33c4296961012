//! Do the storage components stay flat as the store grows? 10k vs 100k stored events across 50 agents,
//! side by side: send, list-unread, watch-after from the tip, and history --limit 20, each in one warm
//! process; and list-unread from a new instance each call, which is what every `agmsg-host` process
//! does (no state but what the driver keeps in the store). The store is filled through the component's
//! own import.
//!
//! Then, whole `agmsg-host` processes on a big log (`AGMSG_BENCH_MESSAGES`, default 1M messages and a read
//! for every tenth: 1.1M events, about 250 MB in agmsg's jsonl format): the log is placed as a jsonl
//! store and imported into a sqlite store (`storage import`); then the first op, and later sends,
//! `history --limit 20` and `list-unread`, each with its peak RSS (GNU time's `%M`).
//! `AGMSG_BENCH_MESSAGES=0` skips it; `AGMSG_BENCH_DRIVERS=` (empty) runs only it.
//!
//! Run: `cargo bench -p agmsg-host --bench scale`.

mod common;

use agmsg_host::runtime::cache::CompileCache;
use agmsg_host::runtime::sandbox::StoreDir;
use agmsg_host::runtime::{Limits, Runtime};
use agmsg_host::storage::driver::Pair;
use agmsg_host::storage::types::{Event, Message, ReadMark};
use agmsg_host::storage::{DriverSource, Storage};
use common::{ms, time};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const AGENTS: usize = 50;
const UNREAD_PER_AGENT: usize = 10;
const RUNS: usize = 200;
const FRESH_RUNS: usize = 20;

fn agent(i: usize) -> String {
    format!("agent{:02}", i % AGENTS)
}

fn at(i: usize) -> String {
    let (h, m, s) = (i / 3600 % 24, i / 60 % 60, i % 60);
    format!("2026-{:02}-{:02}T{h:02}:{m:02}:{s:02}Z", 1 + i / 86400 / 28 % 12, 1 + i / 86400 % 28)
}

/// `events` events in all: about half messages, and a read for every message but the newest
/// UNREAD_PER_AGENT of each recipient.
fn dataset(events: usize) -> Vec<Event> {
    let messages = (events + AGENTS * UNREAD_PER_AGENT) / 2;
    let mut out = Vec::with_capacity(events);
    let mut reads = Vec::new();
    for i in 0..messages {
        let id = format!("0192{i:08x}-0000-7000-8000-{i:012x}");
        out.push(Event::MessageSent(Message {
            id: id.clone(),
            team: "t".into(),
            from: agent(i + 1),
            to: agent(i),
            body: format!("message {i} with a body of ordinary length"),
            at: at(i),
        }));
        if i + AGENTS * UNREAD_PER_AGENT < messages {
            reads.push(Event::MessageRead(ReadMark { id: format!("r{i}"), msg_id: id, team: "t".into(), agent: agent(i), at: at(i) }));
        }
    }
    out.extend(reads);
    out
}

struct Figures {
    send: f64,
    list_unread: f64,
    watch_after_tip: f64,
    history_team: f64,
    history_agent: f64,
    list_unread_fresh: f64,
}

fn measure(runtime: &Runtime, source: &DriverSource, events: usize) -> Figures {
    let dir = tempfile::tempdir().unwrap();
    let mut driver = Storage::open(runtime, source, StoreDir::open(dir.path()).unwrap()).unwrap();
    driver.init().unwrap();
    let data = dataset(events);
    let started = std::time::Instant::now();
    driver.import_events(&data).unwrap();
    let tip = driver.watch_tip(&[Pair { team: "t".into(), agent: agent(0) }]).unwrap();
    for a in 0..AGENTS {
        driver.read_cursor_consume("t", &agent(a), &tip, &[]).unwrap();
    }
    eprintln!("  filled {events} events in {:.1} s", started.elapsed().as_secs_f64());
    let unread = driver.list_unread("t", &agent(7), None).unwrap();
    assert_eq!(unread.len(), UNREAD_PER_AGENT, "the frontier stops at the unread tail");

    let list_unread = ms(time(RUNS, |i| driver.list_unread("t", &agent(i), None).unwrap().len()));
    let list_unread_fresh = ms(time(FRESH_RUNS, |i| {
        let mut fresh = Storage::open(runtime, source, StoreDir::open(dir.path()).unwrap()).unwrap();
        fresh.list_unread("t", &agent(i), None).unwrap().len()
    }));
    // Last: sends change the store (to other team, so the read figures above are unaffected).
    let send = ms(time(RUNS, |i| driver.send("u", &agent(i), &agent(i + 1), "a new message").unwrap()));
    let watch_after_tip = ms(time(RUNS, |i| {
        let pair = Pair { team: "t".into(), agent: agent(i) };
        driver.watch_after(&tip, &[pair]).unwrap().messages.len()
    }));
    let history_team = ms(time(RUNS, |_| driver.history("t", None, Some(20)).unwrap().len()));
    let history_agent = ms(time(RUNS, |i| driver.history("t", Some(&agent(i)), Some(20)).unwrap().len()));
    Figures { send, list_unread, watch_after_tip, history_team, history_agent, list_unread_fresh }
}

fn main() {
    if common::listing_only() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    unsafe { std::env::set_var("AGMSG_CACHE_DIR", cache.path()) };
    let runtime = Runtime::new(CompileCache::from_env(), Limits::from_env().unwrap()).unwrap();
    let drivers: Vec<String> = match std::env::var("AGMSG_BENCH_DRIVERS") {
        // Empty: only the whole-process figures.
        Ok(list) => list.split(',').filter(|d| !d.is_empty()).map(str::to_owned).collect(),
        Err(_) => vec!["sqlite".into(), "jsonl".into()],
    };
    println!("storage components at scale: {AGENTS} agents, {UNREAD_PER_AGENT} unread each, median of {RUNS} calls in one warm process");
    for name in drivers {
        let source = agmsg_host::storage::source::resolve(&name).unwrap();
        println!("\n{name}:");
        let small = measure(&runtime, &source, 10_000);
        let large = measure(&runtime, &source, 100_000);
        println!("{:<32} {:>12} {:>12} {:>10}", "op", "10k events", "100k events", "100k/10k");
        for (op, a, b) in [
            ("send", small.send, large.send),
            ("list-unread (10 unread)", small.list_unread, large.list_unread),
            ("watch-after from the tip", small.watch_after_tip, large.watch_after_tip),
            ("history --limit 20 (team)", small.history_team, large.history_team),
            ("history <agent> --limit 20", small.history_agent, large.history_agent),
            ("list-unread, new instance", small.list_unread_fresh, large.list_unread_fresh),
        ] {
            println!("{op:<32} {a:>9.3} ms {b:>9.3} ms {:>9.2}x", b / a);
        }
    }
    let messages: usize = std::env::var("AGMSG_BENCH_MESSAGES").ok().and_then(|v| v.parse().ok()).unwrap_or(1_000_000);
    if messages > 0 {
        whole_process(messages, cache.path());
    }
}

/// A log in agmsg's jsonl format: `messages` messages among AGENTS agents in team `t`, and a read by the
/// recipient after every tenth.
fn write_log(path: &Path, messages: usize) -> u64 {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..messages {
        let id = format!("0192{i:08x}-0000-7000-8000-{i:012x}");
        let body = format!("message {i}: a body of ordinary length, about one sentence of text for a peer agent");
        writeln!(out, "{}", agmsg_contract::records::message_sent(&id, "t", &agent(i + 1), &agent(i), &body, &at(i))).unwrap();
        if i % 10 == 0 {
            let read = format!("0193{i:08x}-0000-7000-8000-{i:012x}");
            writeln!(out, "{}", agmsg_contract::records::message_read(&read, &id, "t", &agent(i), &at(i + 5))).unwrap();
        }
    }
    out.flush().unwrap();
    std::fs::metadata(path).unwrap().len()
}

/// One `agmsg-host` process: its wall time and peak RSS in MiB (NaN without `/usr/bin/time`); it must
/// succeed. The RSS comes from GNU time's report on its own child: wait4's rusage of a child spawned from
/// this process would include this process's RSS (Linux carries the peak across the spawn's exec).
fn run(store: &Path, cache: &Path, driver: &str, args: &[&str]) -> (Duration, f64) {
    let time = Path::new("/usr/bin/time");
    let mut cmd = if time.exists() {
        let mut cmd = Command::new(time);
        cmd.args(["-f", "maxrss=%M"]).arg(common::host_binary()).env(common::SERVER_SWITCH, "off");
        cmd
    } else {
        common::host_command()
    };
    cmd.arg("--store").arg(store).args(["--driver", driver]).args(args).env("AGMSG_CACHE_DIR", cache);
    let started = Instant::now();
    let out = cmd.stdout(Stdio::null()).stderr(Stdio::piped()).output().unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{driver} {args:?} failed: {stderr}");
    let rss = stderr.lines().rev().find_map(|l| l.strip_prefix("maxrss=")).and_then(|kib| kib.trim().parse::<f64>().ok());
    (took, rss.map_or(f64::NAN, |kib| kib / 1024.0))
}

fn whole_process(messages: usize, cache: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("events.jsonl");
    let size = write_log(&log, messages);
    let events = messages + messages.div_ceil(10);
    println!(
        "\nwhole processes on {events} events ({messages} messages, {} reads, {} MB of jsonl), each op its own process:",
        messages.div_ceil(10),
        size / 1_000_000
    );
    println!("{:<40} {:>12} {:>12}", "", "time", "peak RSS");
    let show = |what: &str, (took, rss): (Duration, f64)| println!("{what:<40} {:>9.1} ms {rss:>8.1} MiB", ms(took));
    for driver in ["sqlite", "jsonl"] {
        let store = dir.path().join(driver);
        std::fs::create_dir_all(&store).unwrap();
        if driver == "jsonl" {
            // Placed as agmsg's jsonl driver left it (its one-time cursor migration long done).
            std::fs::rename(&log, store.join("events.jsonl")).unwrap();
            std::fs::write(store.join(".read-cursor-v1"), "").unwrap();
        } else {
            run(&store, cache, driver, &["storage", "init"]);
            show(&format!("{driver}: storage import"), run(&store, cache, driver, &["storage", "import", log.to_str().unwrap()]));
        }
        // Every recipient has consumed all but its newest 10 messages.
        let mut cursors = String::new();
        for a in 0..AGENTS {
            cursors.push_str(&format!("t\t{}\t{}\n", agent(a), messages.saturating_sub(AGENTS * UNREAD_PER_AGENT)));
        }
        if driver == "jsonl" {
            std::fs::write(store.join("read-cursors.tsv"), cursors).unwrap();
        } else {
            let tip = messages.saturating_sub(AGENTS * UNREAD_PER_AGENT).to_string();
            for a in 0..AGENTS {
                run(&store, cache, driver, &["storage", "read-cursor-consume", "t", &agent(a), &tip]);
            }
        }
        show(
            &format!("{driver}: first op (history --limit 20)"),
            run(&store, cache, driver, &["storage", "history", "t", "--limit", "20"]),
        );
        let median = |f: &dyn Fn(usize) -> (Duration, f64)| {
            let mut runs: Vec<(Duration, f64)> = (0..9).map(f).collect();
            runs.sort_by_key(|r| r.0);
            (runs[runs.len() / 2].0, runs.iter().map(|r| r.1).fold(0.0, f64::max))
        };
        show(
            &format!("{driver}: send"),
            median(&|i| run(&store, cache, driver, &["storage", "send", "t", &agent(i), &agent(i + 1), "a new message"])),
        );
        show(
            &format!("{driver}: history --limit 20"),
            median(&|_| run(&store, cache, driver, &["storage", "history", "t", "--limit", "20"])),
        );
        show(&format!("{driver}: list-unread"), median(&|i| run(&store, cache, driver, &["storage", "list-unread", "t", &agent(i)])));
        if driver == "sqlite" && std::env::var_os("AGMSG_BENCH_SQLITE_EXPORT").is_none() {
            // Its page query (`seq > ? AND type IN (..) ORDER BY seq LIMIT n`) is planned on the index
            // events_history with a temp b-tree for the ORDER BY: every page sorts every event, minutes
            // at 1M. AGMSG_BENCH_SQLITE_EXPORT=1 measures it anyway.
            println!("{driver}: storage export                     (skipped: every page sorts the whole log)");
            continue;
        }
        let export = dir.path().join("export.jsonl");
        show(&format!("{driver}: storage export"), run(&store, cache, driver, &["storage", "export", export.to_str().unwrap()]));
        std::fs::remove_file(&export).unwrap();
    }
    // The same log imported into an empty jsonl store (what `storage convert jsonl` does, page by page).
    let store = dir.path().join("jsonl-imported");
    std::fs::create_dir_all(&store).unwrap();
    run(&store, cache, "jsonl", &["storage", "init"]);
    let log = dir.path().join("jsonl").join("events.jsonl");
    show("jsonl: storage import (empty store)", run(&store, cache, "jsonl", &["storage", "import", log.to_str().unwrap()]));
    show("jsonl: first op after the import", run(&store, cache, "jsonl", &["storage", "history", "t", "--limit", "20"]));
    println!("(peak RSS of the later ops: the largest of 9 runs; time: their median)");
}
