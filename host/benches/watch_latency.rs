//! Send-to-watch latency on the postgres driver: `agmsg-host watch` woken by LISTEN/NOTIFY (the optional
//! `agmsg:storage/live` interface) vs the same driver polled (`AGMSG_WATCH_POLL=1`, the host's switch
//! that ignores `live`) at agmsg's default interval of 1 s, and at 0.1 s.
//!
//! Each configuration runs one `watch` process in one home and sends N messages from another home (its
//! own process each, as agmsg's scripts do), at irregular spacing so that sends fall anywhere in a poll
//! interval. A latency is from the start of the `send` process to the line arriving on the watcher's
//! stdout: the send's own process start, connection and commit included (the watcher may print before
//! the send process has exited, so its exit is no usable start), reported beside the send process's own
//! wall time. Reported: median, 90th percentile and maximum over the N sends, side by side.
//!
//! The cluster is a throwaway one, started with the tests' helper (`tests/common/postgres.rs`;
//! PostgreSQL's server binaries from `scripts/setup`).
//!
//! Run: `cargo bench -p agmsg-host --bench watch_latency` (release build).

mod common;
#[allow(dead_code)]
#[path = "../../tests/common/postgres.rs"]
mod postgres_cluster;
#[path = "../../tests/common/lines.rs"]
mod lines;

use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::ms;
use lines::timestamped_lines;
use postgres_cluster::Cluster;

const BIN: &str = env!("CARGO_BIN_EXE_agmsg-host");

/// Sends per configuration.
const N: usize = 40;

/// One isolated home: its own HOME, store path and compile cache, pointed at the database.
struct Home {
    dir: tempfile::TempDir,
    env: Vec<(String, String)>,
}

impl Home {
    fn new(cluster: &Cluster, database: &str) -> Home {
        let dir = tempfile::tempdir().unwrap();
        let mut env = cluster.env(database);
        env.push(("HOME".into(), dir.path().display().to_string()));
        env.push(("AGMSG_STORAGE_PATH".into(), dir.path().join("store").display().to_string()));
        env.push(("AGMSG_CACHE_DIR".into(), dir.path().join("cache").display().to_string()));
        Home { dir, env }
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).current_dir(self.dir.path()).stdin(Stdio::null());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }
}

struct Watcher {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
}

impl Watcher {
    fn start(home: &Home, interval: &str, poll: bool) -> Watcher {
        let mut cmd = home.cmd();
        cmd.args(["watch", "t", "bob", "--interval", interval]).stdout(Stdio::piped()).stderr(Stdio::inherit());
        if poll {
            cmd.env("AGMSG_WATCH_POLL", "1");
        }
        let mut child = cmd.spawn().unwrap();
        let lines = timestamped_lines(child.stdout.take().unwrap());
        let (_, first) = lines.recv_timeout(Duration::from_secs(60)).expect("watch starts");
        assert!(first.starts_with("watching "), "{first:?}");
        std::thread::sleep(Duration::from_millis(500));
        Watcher { child, lines }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// N sends from `sender` to a watcher in `watching`: each one's latency (send start to printed line) and
/// the send process's wall time.
fn run(watching: &Home, sender: &Home, interval: &str, poll: bool, tag: &str) -> (Vec<Duration>, Vec<Duration>) {
    let watcher = Watcher::start(watching, interval, poll);
    // A fixed pseudo-random spacing (an LCG), the same for every configuration.
    let mut seed: u64 = 0x5eed;
    let (mut latencies, mut sends) = (Vec::with_capacity(N), Vec::with_capacity(N));
    for i in 0..N {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(100 + (seed >> 33) % 700));
        let body = format!("{tag}-{i}");
        let started = Instant::now();
        let out = sender.cmd().args(["storage", "send", "t", "alice", "bob", &body]).output().unwrap();
        sends.push(started.elapsed());
        assert!(out.status.success(), "send: {}", String::from_utf8_lossy(&out.stderr));
        let (at, line) = watcher.lines.recv_timeout(Duration::from_secs(30)).expect("the watcher prints the message");
        assert!(line.ends_with(&body), "{line:?} for {body:?}");
        latencies.push(at.duration_since(started));
    }
    (latencies, sends)
}

fn summary(mut samples: Vec<Duration>) -> (Duration, Duration, Duration) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.9), samples[samples.len() - 1])
}

fn main() {
    if common::listing_only() {
        return;
    }
    let cluster = Cluster::start();
    let database = cluster.create_database();
    let (watching, sender) = (Home::new(&cluster, &database), Home::new(&cluster, &database));
    let init = sender.cmd().args(["storage", "init"]).output().unwrap();
    assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
    // Warm both homes' compile caches.
    let warm = watching.cmd().args(["storage", "watch-tip", "t:bob"]).output().unwrap();
    assert!(warm.status.success());

    println!("send-to-watch latency, postgres driver, {N} sends each (from the send process's start to the printed line)");
    println!("{:<46} {:>10} {:>10} {:>10}", "", "median", "p90", "max");
    let configurations = [
        ("LISTEN/NOTIFY (live), --interval 10", "10", false),
        ("polling (AGMSG_WATCH_POLL=1), --interval 1", "1", true),
        ("polling (AGMSG_WATCH_POLL=1), --interval 0.1", "0.1", true),
    ];
    let mut medians = Vec::new();
    let mut send_walls = Vec::new();
    for (i, (name, interval, poll)) in configurations.iter().enumerate() {
        let (latencies, sends) = run(&watching, &sender, interval, *poll, &format!("c{i}"));
        let (median, p90, max) = summary(latencies);
        println!("{name:<46} {:>7.1} ms {:>7.1} ms {:>7.1} ms", ms(median), ms(p90), ms(max));
        medians.push(median);
        send_walls.extend(sends);
    }
    let (median, p90, max) = summary(send_walls);
    println!("{:<46} {:>7.1} ms {:>7.1} ms {:>7.1} ms", "(the send process alone, start to exit)", ms(median), ms(p90), ms(max));
    println!(
        "median ratio polling(1 s) / live: {:.1}x; polling(0.1 s) / live: {:.1}x",
        medians[1].as_secs_f64() / medians[0].as_secs_f64(),
        medians[2].as_secs_f64() / medians[0].as_secs_f64()
    );
}
