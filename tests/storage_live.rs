//! Live delivery. The optional `agmsg:storage/live` interface (1.1.0): `watch` on postgres wakes on the
//! NOTIFY of a send from another home instead of waiting out its interval; a message whose notification
//! never came (sent before anyone listened, or written without one) is still delivered from the cursor;
//! drivers without the interface (sqlite, a component built against 1.0.0) say so; a driver whose wait
//! never returns is stopped by the call deadline. The host's own wake-up on a local store (inotify on the
//! store directory, `storage::wake`): `watch` on sqlite and jsonl, a per-team partition included, prints
//! a send from another process well before its interval ends, delivers a burst exactly once in order,
//! and polls where inotify is refused or `AGMSG_WATCH_POLL=1`.
//!
//! Nothing here races the clock. A watcher that must be woken runs with an interval of an hour
//! ([`NO_POLL`]) and is primed: a message sent before it starts is printed by its first round, so every
//! later message can only be printed by a round that a wake-up started. A missing wake-up then fails
//! the test at [`LIVENESS`], which is only there so that a broken build fails instead of hanging.

mod common;

use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::lines::timestamped_lines;
use common::postgres::Cluster;
use common::{Env, fixture};

/// An isolated home whose runs use `database` of `cluster`.
fn env_on(cluster: &Cluster, database: &str) -> Env {
    cluster.env(database).iter().fold(Env::new(), |env, (k, v)| env.env(k, v))
}

/// An interval no test waits out: a message printed before it ends was printed by a woken round.
const NO_POLL: &str = "3600";

/// How long a message may take to be printed, at most: liveness only (minutes; a healthy run takes
/// milliseconds, a loaded 2-core machine seconds).
const LIVENESS: Duration = Duration::from_secs(120);

/// The body of the message [`Watcher::primed`] sends before the watcher starts.
const PRIMER: &str = "primer: printed by the first round";

/// `agmsg-host watch` in the background, its stdout read line by line as it comes.
struct Watcher {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
}

impl Watcher {
    /// Start it and wait until it has loaded its driver and begun (its `watching` line). Its first
    /// round may still be going on: see [`Watcher::primed`].
    fn start(env: &Env, global_args: &[&str], team: &str, agent: &str, interval: &str) -> Watcher {
        let mut cmd = env.cmd();
        cmd.args(global_args).args(["watch", team, agent, "--interval", interval]);
        Watcher::spawn(cmd)
    }

    /// Start `cmd`, an `agmsg-host watch`, as [`Watcher::start`] does.
    fn spawn(mut cmd: Command) -> Watcher {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let lines = timestamped_lines(child.stdout.take().unwrap());
        let mut watcher = Watcher { child, lines };
        let (_, first) = watcher.next_line(LIVENESS).expect("watch starts");
        assert!(first.starts_with("watching "), "{first:?}");
        watcher
    }

    /// [`Watcher::start`] with a message to `agent` sent from `sender` before it starts, returned once
    /// that message is printed: its first round has read, so whatever is sent from now on is printed
    /// by a later round only (with [`NO_POLL`], a woken one).
    fn primed(env: &Env, sender: &Env, global_args: &[&str], team: &str, agent: &str, interval: &str) -> Watcher {
        let primer = [global_args, &["storage", "send", team, "alice", agent, PRIMER]].concat();
        sender.run(&primer).ok();
        let mut watcher = Watcher::start(env, global_args, team, agent, interval);
        let (_, line) = watcher.next_line(LIVENESS).expect("the primer, printed by the first round");
        assert!(line.ends_with(PRIMER), "{line:?}");
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

impl Watcher {
    /// Stop it and return what it wrote on stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut stderr = String::new();
        let _ = std::io::Read::read_to_string(self.child.stderr.as_mut().unwrap(), &mut stderr);
        stderr
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Send from `env` to bob and see the watcher print it (within [`LIVENESS`]); how long that took is
/// returned for the log only (never asserted on).
fn send_and_see(watcher: &mut Watcher, env: &Env, team: &str, body: &str) -> Duration {
    send_and_see_to(watcher, env, team, "bob", body)
}

/// [`send_and_see`] to `to`; the time is counted from when the send returned (the message is committed
/// by then).
fn send_and_see_to(watcher: &mut Watcher, env: &Env, team: &str, to: &str, body: &str) -> Duration {
    env.send(team, "alice", to, body);
    let sent = Instant::now();
    let (at, line) = watcher.next_line(LIVENESS).unwrap_or_else(|| panic!("{body:?} was not printed within {LIVENESS:?}"));
    assert!(line.contains(&format!("alice → {to}")) && line.ends_with(body), "{line:?}");
    at.saturating_duration_since(sent)
}

#[test]
fn postgres_watch_wakes_on_a_send_from_another_home_well_under_the_interval() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let (watching_home, sending_home) = (env_on(&cluster, &database), env_on(&cluster, &database));
    sending_home.storage(&["init"]).ok();
    assert_eq!(sending_home.storage(&["wait-after", "0", "t:bob", "--timeout-ms", "1"]).ok().stdout, "timed-out\n", "postgres offers live");
    let mut watcher = Watcher::primed(&watching_home, &sending_home, &[], "t", "bob", NO_POLL);
    // Each send after the last was printed: only its NOTIFY can start the round that prints it.
    let latencies: Vec<Duration> = (0..5).map(|i| send_and_see(&mut watcher, &sending_home, "t", &format!("live {i}"))).collect();
    eprintln!("send-to-watch latency with LISTEN/NOTIFY (not asserted): {latencies:?}");
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
    let mut watcher = Watcher::start(&watching_home, &[], "t", "bob", NO_POLL);
    let (_, line) = watcher.next_line(LIVENESS).expect("the earlier message, printed by the first round");
    assert!(line.ends_with("before anyone listened"), "{line:?}");
    // Written with no notification at all (as by a writer that never NOTIFYs): nothing wakes the
    // watcher for it, and the next round, which the next announced send starts, prints it first.
    let unannounced = |id: &str, to: &str, body: &str| {
        cluster.psql(
            &database,
            &format!(
                "WITH s AS (UPDATE agmsg_counter SET last = last + 1 WHERE part = '' RETURNING last) \
                 INSERT INTO agmsg_events (part, seq, type, id, team, from_agent, to_agent, body, at) \
                 SELECT '', s.last, 'message_sent', '{id}', 't', 'alice', '{to}', '{body}', '2026-12-03T00:00:00Z' FROM s"
            ),
        )
    };
    unannounced("no-notify-1", "bob", "never announced");
    sending_home.send("t", "alice", "bob", "sent with a notification");
    let printed: Vec<String> = (0..2).map(|_| watcher.next_line(LIVENESS).expect("printed by the woken round").1).collect();
    assert!(printed[0].ends_with("never announced") && printed[1].ends_with("sent with a notification"), "{printed:?}");
    // And wake-ups still work after that.
    send_and_see(&mut watcher, &sending_home, "t", "announced again");

    // Without any wake-up, the round at the end of the interval delivers it.
    let mut polled = Watcher::primed(&watching_home, &sending_home, &[], "t", "carol", "1");
    unannounced("no-notify-2", "carol", "found by the interval round");
    let (_, line) = polled.next_line(LIVENESS).expect("delivered by the interval's round");
    assert!(line.ends_with("found by the interval round"), "{line:?}");
}

#[test]
fn postgres_channels_are_per_team_and_team_names_are_only_hashed() {
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let (watching_home, sending_home) = (env_on(&cluster, &database), env_on(&cluster, &database));
    // A team name that would break a quoted identifier, and one longer than a channel may be.
    let team = format!("we\"ird team; LISTEN x{}", "y".repeat(80));
    let mut watcher = Watcher::primed(&watching_home, &sending_home, &[], &team, "bob", NO_POLL);
    // Traffic for another team does not print here (it may at most wake the watcher): the next line is
    // the weird team's message, which its own channel's NOTIFY delivers.
    sending_home.send("other", "alice", "bob", "not for this team");
    send_and_see(&mut watcher, &sending_home, &team, "for the weird team");
    assert!(watcher.next_line(Duration::from_millis(500)).is_none());
}

#[test]
fn sqlite_offers_no_live_interface_and_its_watch_delivers() {
    let env = Env::new();
    env.storage(&["init"]).ok();
    assert_eq!(env.storage(&["wait-after", "0", "t:bob", "--timeout-ms", "5000"]).ok().stdout, "unsupported\n");
    let mut watcher = Watcher::start(&env, &[], "t", "bob", "0.5");
    send_and_see(&mut watcher, &env, "t", "polled");
}

/// The sqlite component with its `agmsg:storage` names rewritten to 1.0.0: what a build against the
/// 1.0.0 WIT is (the two versions' `driver` and `types` are the same; names are length-prefixed strings
/// of equal length, so the binary stays valid).
fn as_built_against_1_0_0(wasm: &[u8]) -> Vec<u8> {
    let mut out = wasm.to_vec();
    for name in ["agmsg:storage/driver@", "agmsg:storage/types@", "agmsg:storage/storage-driver@"] {
        let (new, old) = (format!("{name}1.2.0"), format!("{name}1.0.0"));
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
    assert!(!wasm.windows(b"driver@1.2.0".len()).any(|w| w == b"driver@1.2.0"), "every agmsg:storage name rewritten");
    let path = env.dir.path().join("sqlite-1.0.0.wasm");
    std::fs::write(&path, wasm).unwrap();
    let driver = path.to_str().unwrap();
    let with = |args: &[&str]| env.run(&[&["--driver", driver, "storage"], args].concat());
    with(&["init"]).ok();
    assert_eq!(with(&["wait-after", "0", "t:bob"]).ok().stdout, "unsupported\n");
    let mut watcher = Watcher::start(&env, &["--driver", driver], "t", "bob", "0.5");
    with(&["send", "t", "alice", "bob", "to an old driver"]).ok();
    let (_, line) = watcher.next_line(LIVENESS).expect("printed");
    assert!(line.ends_with("to an old driver"), "{line:?}");
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

/// An isolated home whose store is `driver`'s (sqlite, jsonl).
fn env_with(driver: &str) -> Env {
    Env::new().env("AGMSG_STORAGE_DRIVER", driver)
}

#[test]
fn sqlite_and_jsonl_watches_wake_on_a_send_from_another_process_well_under_the_interval() {
    for driver in ["sqlite", "jsonl"] {
        let env = env_with(driver);
        env.storage(&["init"]).ok();
        // No `live` from either driver: what wakes the watcher is the host's watch of the store file.
        assert_eq!(env.storage(&["wait-after", "0", "t:bob", "--timeout-ms", "1"]).ok().stdout, "unsupported\n", "{driver}");
        let mut watcher = Watcher::primed(&env, &env, &[], "t", "bob", NO_POLL);
        let latencies: Vec<Duration> = (0..3).map(|i| send_and_see(&mut watcher, &env, "t", &format!("{driver} woken {i}"))).collect();
        eprintln!("{driver}: send-to-watch latency woken by the store watch (not asserted): {latencies:?}");
        assert!(watcher.next_line(Duration::from_millis(500)).is_none(), "{driver}: each message printed once");
        assert_eq!(env.storage(&["list-unread", "t", "bob"]).ok().stdout, "", "{driver}: what was printed was consumed");
    }
}

/// A database replaced under its name while a watch runs (a restore from a backup, a copy from another
/// machine) is what the watch reads from then on: the sqlite driver's connection kept between rounds is
/// not kept past it (seen failing before: the watch went on reading the replaced file's old inode, and
/// the replacement's message was never printed). The jsonl driver keeps no file open between ops, and
/// its cursors are a file of their own, so a log replaced alone is not a store restored.
#[test]
fn a_database_replaced_under_its_name_is_watched_from_then_on() {
    let env = env_with("sqlite");
    env.storage(&["init"]).ok();
    let mut watcher = Watcher::primed(&env, &env, &[], "t", "bob", NO_POLL);
    let backup = env_with("sqlite");
    backup.send("t", "alice", "bob", "in the replacement");
    let staged = env.store.join("messages.db.restoring");
    std::fs::copy(backup.store.join("messages.db"), &staged).unwrap();
    std::fs::rename(&staged, env.store.join("messages.db")).unwrap();
    let (_, line) = watcher.next_line(LIVENESS).expect("the replacement's message was not printed");
    assert!(line.ends_with("in the replacement"), "{line:?}");
    // It is read, and consumed, in the replacement.
    assert_eq!(env.storage(&["list-unread", "t", "bob"]).ok().stdout, "");
}

#[test]
fn a_per_team_partition_is_watched_where_it_is() {
    let env = Env::new();
    // agmsg's team config puts this team's store in <store>/teams/<team>/.
    let config = env.dir.path().join(".agents/skills/agmsg/teams/split");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), r#"{"drivers":{"partition":"per-team"}}"#).unwrap();
    env.send("split", "alice", "bob", "first");
    assert!(env.store.join("teams/split/messages.db").is_file(), "the team's store is its partition");
    let mut watcher = Watcher::start(&env, &[], "split", "bob", NO_POLL);
    let (_, line) = watcher.next_line(LIVENESS).expect("the earlier message, printed by the first round");
    assert!(line.ends_with("first"), "{line:?}");
    // Traffic in the shared store does not concern this team's watcher; a send into the partition
    // wakes it.
    env.send("other", "alice", "bob", "shared store");
    send_and_see(&mut watcher, &env, "split", "into the partition");
}

#[test]
fn a_burst_of_sends_is_delivered_exactly_once_each_in_order() {
    const BURST: usize = 200;
    for driver in ["sqlite", "jsonl"] {
        let env = env_with(driver);
        env.storage(&["init"]).ok();
        let mut watcher = Watcher::start(&env, &[], "t", "bob", "30");
        // One process per send, back to back, as agmsg's scripts send.
        let script =
            format!(r#"i=1; while [ $i -le {BURST} ]; do "$0" storage send t alice bob "burst $i" >/dev/null || exit 1; i=$((i+1)); done"#);
        let mut sender = env.program("sh").args(["-c", &script, common::BIN]).spawn().unwrap();
        let mut bodies = Vec::new();
        while bodies.len() < BURST {
            let Some((_, line)) = watcher.next_line(LIVENESS) else {
                panic!("{driver}: only {} of {BURST} printed: {:?}", bodies.len(), bodies.last());
            };
            bodies.push(line.rsplit("  ").next().unwrap().to_owned());
        }
        assert!(sender.wait().unwrap().success(), "{driver}: the sends succeed");
        let expected: Vec<String> = (1..=BURST).map(|i| format!("burst {i}")).collect();
        assert_eq!(bodies, expected, "{driver}: every message once, in order");
        assert!(watcher.next_line(Duration::from_secs(1)).is_none(), "{driver}: nothing printed twice");
        assert_eq!(env.storage(&["list-unread", "t", "bob"]).ok().stdout, "", "{driver}: all consumed");
    }
}

/// `unshare` as a new user namespace whose inotify instance limit is 0 (a per-namespace limit), so that
/// `inotify_init1` fails with EMFILE inside it; `Err` (why) where user namespaces are not available.
fn without_inotify(env: &Env) -> Result<Command, String> {
    let script = r#"echo 0 > /proc/sys/user/max_inotify_instances && exec "$@""#;
    let unshare = |cmd: &mut Command| {
        cmd.args(["--user", "--map-root-user", "sh", "-c", script, "sh"]);
    };
    let mut probe = env.program("unshare");
    unshare(&mut probe);
    match probe.arg("true").output() {
        Ok(out) if out.status.success() => {
            let mut cmd = env.program("unshare");
            unshare(&mut cmd);
            cmd.arg(common::BIN);
            Ok(cmd)
        }
        Ok(out) => Err(format!("unshare could not take inotify away ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim())),
        Err(e) => Err(format!("cannot run unshare: {e}")),
    }
}

#[test]
fn where_inotify_is_refused_the_watch_polls() {
    let env = Env::new().env("AGMSG_LOG", "debug");
    env.storage(&["init"]).ok();
    let mut cmd = match without_inotify(&env) {
        Ok(cmd) => cmd,
        Err(why) if std::env::var_os("AGMSG_REQUIRE_USERNS").is_none() => {
            eprintln!("skipped (set AGMSG_REQUIRE_USERNS=1 to fail instead): {why}");
            return;
        }
        Err(why) => panic!("{why}"),
    };
    cmd.args(["watch", "t", "bob", "--interval", "1"]);
    let mut watcher = Watcher::spawn(cmd);
    send_and_see(&mut watcher, &env, "t", "by polling");
    let stderr = watcher.stop();
    assert!(stderr.contains("watch: polling every interval: inotify is not available"), "{stderr}");
}

#[test]
fn agmsg_watch_poll_forces_polling() {
    let env = env_with("sqlite").env("AGMSG_WATCH_POLL", "1").env("AGMSG_LOG", "debug");
    env.storage(&["init"]).ok();
    let mut slow = Watcher::primed(&env, &env, &[], "t", "bob", NO_POLL);
    let mut fast = Watcher::start(&env, &[], "t", "carol", "0.5");
    env.send("t", "alice", "bob", "not woken");
    send_and_see_to(&mut fast, &env, "t", "carol", "polled");
    // Past its first round and polled every hour: the message to bob waits for the next round, long
    // after carol's was printed (a wake-up would print it within milliseconds).
    assert!(slow.next_line(Duration::from_secs(2)).is_none(), "woken although AGMSG_WATCH_POLL=1");
    let stderr = slow.stop();
    assert!(stderr.contains("watch: polling every interval: AGMSG_WATCH_POLL is set"), "{stderr}");
}

/// Voluntary context switches of every thread of `pid` so far: how often the process went to sleep,
/// which is how often something woke it.
fn wakeups(pid: u32) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap_or_default();
        let count = status.lines().find_map(|l| l.strip_prefix("voluntary_ctxt_switches:")).map(|n| n.trim().parse::<u64>().unwrap());
        total += count.unwrap_or(0);
    }
    total
}

#[test]
fn an_idle_woken_watch_sleeps() {
    let env = Env::new();
    env.storage(&["init"]).ok();
    let watcher = Watcher::primed(&env, &env, &[], "t", "bob", "30");
    let pid = watcher.child.id();
    // Waiting on the store watch in slices of 1 s (for Ctrl-C): a few wake-ups. Before, the epoch ticker
    // alone woke every 10 ms, 300 times in 3 s, whether or not a driver call was running. On a loaded
    // machine the first round (its calls tick) may still be going on in the first window, so up to three
    // windows are measured: an idle watch passes in one, one that ticks while idle fails in all.
    let mut windows = Vec::new();
    for _ in 0..3 {
        let before = wakeups(pid);
        std::thread::sleep(Duration::from_secs(3));
        windows.push(wakeups(pid) - before);
        if windows.last() < Some(&60) {
            break;
        }
    }
    assert!(windows.last() < Some(&60), "an idle watcher woke this often in each 3 s: {windows:?}");
    drop(watcher);
}
