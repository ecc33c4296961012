//! Live delivery, the optional `agmsg:storage/live` interface (1.1.0): `watch` on postgres wakes on the
//! NOTIFY of a send from another home instead of waiting out its interval; a message whose notification
//! never came (sent before anyone listened, or written without one) is still delivered from the cursor;
//! drivers without the interface (sqlite, a component built against 1.0.0) are polled; a driver whose
//! wait never returns is stopped by the call deadline.

mod common;

use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::postgres::Cluster;
use common::lines::timestamped_lines;
use common::{Env, fixture};

/// An isolated home whose runs use `database` of `cluster`.
fn env_on(cluster: &Cluster, database: &str) -> Env {
    cluster.env(database).iter().fold(Env::new(), |env, (k, v)| env.env(k, v))
}

/// `agmsg-host watch` in the background, its stdout read line by line as it comes.
struct Watcher {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
}

impl Watcher {
    /// Start it and wait until it has loaded its driver and begun (its `watching` line), then a moment
    /// more, so that it is past its first round and waiting.
    fn start(env: &Env, global_args: &[&str], team: &str, agent: &str, interval: &str) -> Watcher {
        let mut child = env
            .cmd()
            .args(global_args)
            .args(["watch", team, agent, "--interval", interval])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = timestamped_lines(child.stdout.take().unwrap());
        let mut watcher = Watcher { child, lines };
        let (_, first) = watcher.next_line(Duration::from_secs(60)).expect("watch starts");
        assert!(first.starts_with("watching "), "{first:?}");
        std::thread::sleep(Duration::from_millis(1000));
        watcher
    }

    /// The next line printed within `within`, with when it arrived.
    fn next_line(&mut self, within: Duration) -> Option<(Instant, String)> {
        match self.lines.recv_timeout(within) {
            Ok(line) => Some(line),
            Err(_) => {
                if let Ok(Some(status)) = self.child.try_wait() {
                    let mut stderr = String::new();
                    let _ = std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut stderr);
                    panic!("watch exited ({status}): {stderr}");
                }
                None
            }
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Send from `env` and return how long the watcher took to print it.
fn send_and_time(watcher: &mut Watcher, env: &Env, team: &str, body: &str, give_up: Duration) -> Duration {
    let sent = Instant::now();
    env.send(team, "alice", "bob", body);
    let (at, line) = watcher.next_line(give_up).unwrap_or_else(|| panic!("{body:?} was not printed within {give_up:?}"));
    assert!(line.contains("alice → bob") && line.ends_with(body), "{line:?}");
    at.saturating_duration_since(sent)
}

#[test]
fn postgres_watch_wakes_on_a_send_from_another_home_well_under_the_interval() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let (watching_home, sending_home) = (env_on(&cluster, &database), env_on(&cluster, &database));
    sending_home.storage(&["init"]).ok();
    assert_eq!(sending_home.storage(&["wait-after", "0", "t:bob", "--timeout-ms", "1"]).ok().stdout, "timed-out\n", "postgres offers live");
    let mut watcher = Watcher::start(&watching_home, &[], "t", "bob", "10");
    let mut latencies = Vec::new();
    for i in 0..5 {
        latencies.push(send_and_time(&mut watcher, &sending_home, "t", &format!("live {i}"), Duration::from_secs(15)));
        // Between sends the watcher is back in its wait.
        std::thread::sleep(Duration::from_millis(300));
    }
    eprintln!("send-to-watch latency with LISTEN/NOTIFY, --interval 10: {latencies:?}");
    for latency in &latencies {
        assert!(*latency < Duration::from_secs(3), "printed {latency:?} after the send, with a poll interval of 10 s: {latencies:?}");
    }
    // Exactly what was printed was consumed: nothing left unread.
    assert_eq!(sending_home.storage(&["list-unread", "t", "bob"]).ok().stdout, "");
}

#[test]
fn postgres_lost_notifications_only_delay() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let (watching_home, sending_home) = (env_on(&cluster, &database), env_on(&cluster, &database));
    // Sent while nobody listens: its notification goes nowhere; the watcher's first round reads it from
    // the cursor.
    sending_home.send("t", "alice", "bob", "before anyone listened");
    let mut watcher = Watcher::start(&watching_home, &[], "t", "bob", "2");
    let (_, line) = watcher.next_line(Duration::from_secs(1)).expect("the earlier message, already printed");
    assert!(line.ends_with("before anyone listened"), "{line:?}");
    // Written with no notification at all (as by a writer that never NOTIFYs): the round at the end of
    // the interval delivers it.
    cluster.psql(
        &database,
        "WITH s AS (UPDATE agmsg_counter SET last = last + 1 WHERE part = '' RETURNING last) \
         INSERT INTO agmsg_events (part, seq, type, id, team, from_agent, to_agent, body, at) \
         SELECT '', s.last, 'message_sent', 'no-notify-1', 't', 'alice', 'bob', 'never announced', '2026-12-03T00:00:00Z' FROM s",
    );
    let written = Instant::now();
    let (at, line) = watcher.next_line(Duration::from_secs(8)).expect("delivered by the interval's round");
    assert!(line.ends_with("never announced"), "{line:?}");
    assert!(at.duration_since(written) < Duration::from_secs(5), "{:?} after it was written, with --interval 2", at.duration_since(written));
    // And live wake-ups still work after that.
    let latency = send_and_time(&mut watcher, &sending_home, "t", "announced", Duration::from_secs(8));
    assert!(latency < Duration::from_secs(2), "{latency:?}");
}

#[test]
fn postgres_channels_are_per_team_and_team_names_are_only_hashed() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let (watching_home, sending_home) = (env_on(&cluster, &database), env_on(&cluster, &database));
    // A team name that would break a quoted identifier, and one longer than a channel may be.
    let team = format!("we\"ird team; LISTEN x{}", "y".repeat(80));
    let mut watcher = Watcher::start(&watching_home, &[], &team, "bob", "10");
    // Traffic for another team does not print here (it may at most wake the watcher).
    sending_home.send("other", "alice", "bob", "not for this team");
    let latency = send_and_time(&mut watcher, &sending_home, &team, "for the weird team", Duration::from_secs(15));
    assert!(latency < Duration::from_secs(3), "{latency:?}");
    assert!(watcher.next_line(Duration::from_millis(500)).is_none());
}

#[test]
fn sqlite_watch_is_polled() {
    let env = Env::new();
    env.storage(&["init"]).ok();
    assert_eq!(env.storage(&["wait-after", "0", "t:bob", "--timeout-ms", "5000"]).ok().stdout, "unsupported\n");
    let mut watcher = Watcher::start(&env, &[], "t", "bob", "0.5");
    let latency = send_and_time(&mut watcher, &env, "t", "polled", Duration::from_secs(10));
    assert!(latency < Duration::from_secs(3), "{latency:?}");
}

/// The sqlite component with its `agmsg:storage` names rewritten to 1.0.0: what a build against the
/// 1.0.0 WIT is (the two versions' `driver` and `types` are the same; names are length-prefixed strings
/// of equal length, so the binary stays valid).
fn as_built_against_1_0_0(wasm: &[u8]) -> Vec<u8> {
    let mut out = wasm.to_vec();
    for name in ["agmsg:storage/driver@", "agmsg:storage/types@", "agmsg:storage/storage-driver@"] {
        let (new, old) = (format!("{name}1.1.0"), format!("{name}1.0.0"));
        let mut i = 0;
        while let Some(at) = out[i..].windows(new.len()).position(|w| w == new.as_bytes()) {
            out[i + at..i + at + new.len()].copy_from_slice(old.as_bytes());
            i += at + new.len();
        }
    }
    out
}

#[test]
fn a_driver_built_against_1_0_0_loads_and_is_polled() {
    let env = Env::new();
    let wasm = as_built_against_1_0_0(&std::fs::read(fixture("agmsg-storage-sqlite")).unwrap());
    assert!(!wasm.windows(b"@1.1.0".len()).any(|w| w == b"@1.1.0"), "every agmsg:storage name rewritten");
    let path = env.dir.path().join("sqlite-1.0.0.wasm");
    std::fs::write(&path, wasm).unwrap();
    let driver = path.to_str().unwrap();
    let with = |args: &[&str]| env.run(&[&["--driver", driver, "storage"], args].concat());
    with(&["init"]).ok();
    assert_eq!(with(&["wait-after", "0", "t:bob"]).ok().stdout, "unsupported\n");
    let mut watcher = Watcher::start(&env, &["--driver", driver], "t", "bob", "0.5");
    let sent = Instant::now();
    with(&["send", "t", "alice", "bob", "to an old driver"]).ok();
    let (at, line) = watcher.next_line(Duration::from_secs(10)).expect("printed");
    assert!(line.ends_with("to an old driver"), "{line:?}");
    assert!(at.duration_since(sent) < Duration::from_secs(3));
}

#[test]
fn a_wait_that_never_returns_is_stopped_by_the_deadline() {
    let env = Env::new().env("AGMSG_DRIVER_TIMEOUT_MS", "1500");
    let hostile = fixture("hostile-storage");
    let hostile = hostile.to_str().unwrap();
    for team in ["wait-forever", "wait-spin"] {
        let started = Instant::now();
        // It asks for 100 ms; the driver ignores that.
        let run = env.run(&["--driver", hostile, "storage", "wait-after", "0", &format!("{team}:bob"), "--timeout-ms", "100"]);
        let took = started.elapsed();
        assert_eq!(run.code, 13, "{team}: {run:?}");
        assert!(run.stderr.contains("exceeded its time limit of 1500 ms"), "{team}: {run:?}");
        assert!(run.stderr.contains("wait-after"), "names the op: {run:?}");
        assert!(took < Duration::from_secs(20), "{team}: stopped only after {took:?}");
    }
    // A refused wait is the driver's error, as any op's.
    let run = env.run(&["--driver", hostile, "storage", "wait-after", "0", "t:bob"]);
    assert_eq!(run.code, 13, "{run:?}");
    assert!(run.stderr.contains("unknown misbehaviour"), "{run:?}");
    // The timeout asked of a driver is capped at half the deadline, whatever the command line says.
    let run = env.run(&["--driver", hostile, "storage", "wait-after", "0", "wait-echo:bob", "--timeout-ms", "99999999"]);
    assert!(run.code == 13 && run.stderr.contains("asked to wait 750 ms"), "{run:?}");
    let run = env.run(&["--driver", hostile, "storage", "wait-after", "0", "wait-echo:bob", "--timeout-ms", "200"]);
    assert!(run.code == 13 && run.stderr.contains("asked to wait 200 ms"), "{run:?}");
}
