//! Terminal benchmarks: peek and poke through the tmux component vs the same raw `tmux` commands, side
//! by side against one private tmux server.
//!
//! 1. In one warm process: `Terminal::peek` / `poke` (component, host-brokered process) vs
//!    spawning the same `tmux -S <socket> capture-pane` / `send-keys` commands directly.
//! 2. The whole process: `agmsg-host terminal peek <id>` vs `tmux -S <socket> capture-pane -p -t %N`.
//!
//! Run: `cargo bench -p agmsg-host --bench terminal` (needs tmux). Prints a table with ratios.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{ms, time};

use agmsg_host::runtime::cache::CompileCache;
use agmsg_host::runtime::{Limits, Runtime};
use agmsg_host::terminal::Terminal;

const RUNS: usize = 100;
/// poke sleeps 300 ms between its two bursts (agmsg's #619 fix), in both columns.
const POKE_RUNS: usize = 10;

fn tmux(socket: &Path) -> Command {
    let mut cmd = Command::new("tmux");
    cmd.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).env("SHELL", "/bin/sh").arg("-S").arg(socket);
    cmd
}

fn run_ok(mut cmd: Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn row(what: &str, ours: Duration, baseline: Duration) {
    println!(
        "{what:<44} {:>9.3} ms   raw tmux {:>9.3} ms   ratio {:>5.2}x",
        ms(ours),
        ms(baseline),
        ours.as_secs_f64() / baseline.as_secs_f64()
    );
}

fn main() {
    if common::listing_only() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("sock");
    let mut start = tmux(&socket);
    start.args(["-f", "/dev/null", "new-session", "-d", "-s", "bench", "-x", "160", "-y", "48", "cat"]);
    run_ok(start);
    let mut query = tmux(&socket);
    query.args(["display-message", "-p", "-t", "bench", "#{pane_id}"]);
    let pane = run_ok(query).trim().to_owned();
    let id = format!("{}:{pane}", socket.display());
    // Some text to read back.
    let mut fill = tmux(&socket);
    fill.args(["send-keys", "-l", "-t", &pane, "--", &"agmsg bench line\n".repeat(40)]);
    run_ok(fill);

    let cache = tempfile::tempdir().unwrap();
    unsafe { std::env::set_var("AGMSG_CACHE_DIR", cache.path()) };
    let runtime = Runtime::new(CompileCache::from_env(), Limits::from_env().unwrap()).unwrap();
    let source = agmsg_host::terminal::source::Candidates::new().resolve("tmux").unwrap();
    let mut driver = Terminal::open(&runtime, &source).unwrap();
    assert!(driver.peek(&id, None).unwrap().contains("agmsg bench line"));

    println!(
        "terminal: tmux {} on a private socket; medians",
        run_ok({
            let mut v = Command::new("tmux");
            v.arg("-V");
            v
        })
        .trim()
    );
    let ours = time(RUNS, |_| driver.peek(&id, None).unwrap().len());
    let raw = time(RUNS, |_| {
        let mut cmd = tmux(&socket);
        cmd.args(["capture-pane", "-p", "-t", &pane]);
        run_ok(cmd).len()
    });
    row("peek, warm process", ours, raw);

    let ours = time(POKE_RUNS, |_| driver.poke(&id, "agmsg bench poke").unwrap());
    let raw = time(POKE_RUNS, |_| {
        let mut first = tmux(&socket);
        first.args(["send-keys", "-l", "-t", &pane, "--", "agmsg bench poke"]);
        run_ok(first);
        std::thread::sleep(Duration::from_millis(300));
        let mut second = tmux(&socket);
        second.args(["send-keys", "-t", &pane, "Right", "Enter"]);
        run_ok(second);
    });
    row("poke (two bursts, 300 ms apart), warm", ours, raw);

    let ours = time(RUNS / 2, |_| {
        let mut cmd = common::host_command();
        cmd.env_clear().env("PATH", std::env::var("PATH").unwrap_or_default()).env("AGMSG_CACHE_DIR", cache.path());
        cmd.args(["terminal", "peek", &format!("tmux:{id}")]);
        run_ok(cmd).len()
    });
    let raw = time(RUNS / 2, |_| {
        let mut cmd = tmux(&socket);
        cmd.args(["capture-pane", "-p", "-t", &pane]);
        run_ok(cmd).len()
    });
    row("peek, whole agmsg-host process", ours, raw);

    let mut kill = tmux(&socket);
    kill.arg("kill-server");
    let _ = kill.output();
}
