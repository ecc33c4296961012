//! Do the storage components stay flat as the store grows? 10k vs 100k stored events across 50 agents,
//! side by side: send, list-unread, watch-after from the tip, and history --limit 20, each in one warm
//! process; and list-unread from a new instance each call, which is what every `agmsg-host` process
//! does (no state but what the driver keeps in the store). The store is filled through the component's
//! own import.
//!
//! Run: `cargo bench -p agmsg-host --bench scale`.

mod common;

use agmsg_host::runtime::cache::CompileCache;
use agmsg_host::storage::world::wit::{Event, Message, ReadMark};
use agmsg_host::runtime::sandbox::StoreDir;
use agmsg_host::runtime::{Limits, Runtime};
use agmsg_host::storage::driver::Pair;
use agmsg_host::storage::{DriverSource, Storage};
use common::{ms, time};

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
        Ok(list) => list.split(',').map(str::to_owned).collect(),
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
}
