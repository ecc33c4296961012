//! agmsg's remote sync end to end (issue 25): agmsg 1.2.1's own engine (`remote.sh`, `remote-sync.sh`,
//! Node) and its test server (`tests/helpers/mock_remote_server.py`), one team in two stores. Store A
//! is agmsg with `agmsg-host shim install` applied (its sqlite, or jsonl, runs in agmsg-host's
//! component), store B is agmsg as shipped (its own bash sqlite driver). A message sent in A is pushed
//! by A's engine and pulled into B; one sent in B comes back into A the same way.
//!
//! Needs agmsg 1.2.1 (`tests/common/reference.rs`: its release tree, else a clone), bash, node, python3,
//! curl, jq and sqlite3; skipped, saying why, without them (`AGMSG_REQUIRE_REFERENCE=1` makes that a
//! failure).
//!
//! Between the engines and the server sits a small relay of ours, because agmsg's mock answers two
//! requests in a shape agmsg's engine refuses, which no driver can change: its push answer (`POST
//! /v1/messages`) carries only `acks`, while the engine checks every answer for the binding
//! (`protocol_version`, `server_instance_id`, `team_id`) and stops the cycle with "server/team binding
//! mismatch"; and its read-state answer names its fixed `member-1` instead of the team's members,
//! which the engine refuses ("read-state stream omitted a member frontier") once a real roster has
//! synced. The relay adds the binding to the push answer and answers read state with a frontier at 0
//! for each member the server registered for the team. The mock also lists members in the order
//! `/v1/connect` sent them, where the engine requires member-id order (as a real server sends): two
//! member ids made in the same millisecond fail that half the time, so the relay sorts them.
//! Everything else passes through unchanged.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The server instance agmsg's mock answers as (its `CONNECT_SERVER_ID`).
const MOCK_SERVER_ID: &str = "018f3f7e-3333-7000-8000-000000000001";

/// One agmsg install (its skill directory) with its own home.
struct Install {
    skill: PathBuf,
    home: PathBuf,
    /// `TMPDIR` for its scripts. agmsg 1.2.1's connect leaves its request-body temp file behind
    /// (its EXIT trap names function locals that are out of scope by the time it fires), so that
    /// file lands in the test's directory, removed with it, not in the machine's /tmp.
    tmp: PathBuf,
    path: String,
    /// `AGMSG_STORAGE_DRIVER` for this install's scripts, when not agmsg's default (sqlite).
    driver: Option<&'static str>,
}

impl Install {
    /// `bash scripts/<script> <args>` in this install, in a clean environment.
    fn run(&self, script: &str, args: &[&str]) -> Output {
        let mut cmd = Command::new("bash");
        cmd.arg(self.skill.join("scripts").join(script))
            .args(args)
            .env_clear()
            .env("PATH", &self.path)
            .env("HOME", &self.home)
            .env("TMPDIR", &self.tmp)
            .env("AGMSG_CACHE_DIR", common::shared_cache())
            .current_dir(&self.home)
            .stdin(Stdio::null());
        if let Some(driver) = self.driver {
            cmd.env("AGMSG_STORAGE_DRIVER", driver);
        }
        cmd.output().unwrap()
    }

    fn ok(&self, script: &str, args: &[&str]) -> String {
        let out = self.run(script, args);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{script} {args:?} in {}: {text}", self.skill.display());
        text
    }

    /// One cycle of the team's sync engine (push, pull, read state), which must succeed.
    fn sync_once(&self, team: &str) -> String {
        self.ok("remote-sync.sh", &["once", "--team", team])
    }

    /// `remote.sh <args>` (connect or pull) without the background engine it would start: a
    /// directory where the engine's pidfile goes makes agmsg refuse the start (it says so, and the
    /// binding stands), so the test's own cycles are the only ones and no engine start is waited for.
    fn remote_without_engine(&self, team: &str, args: &[&str]) -> String {
        let pidfile = self.skill.join(format!("run/remote-sync.{team}.pid"));
        std::fs::create_dir_all(&pidfile).unwrap();
        let out = self.ok("remote.sh", args);
        std::fs::remove_dir(&pidfile).unwrap();
        assert!(out.contains("The sync engine did not start"), "{out}");
        out
    }
}

impl Drop for Install {
    fn drop(&mut self) {
        if let Ok(entries) = std::fs::read_dir(self.skill.join("run")) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("remote-sync.")
                    && name.ends_with(".pid")
                    && let Some(pid) = std::fs::read_to_string(entry.path()).ok().and_then(|p| p.trim().parse().ok())
                {
                    terminate(pid);
                }
            }
        }
    }
}

/// SIGTERM, then wait (up to 5 s) until the process is gone.
fn terminate(pid: i32) {
    if pid <= 1 {
        return;
    }
    let _ = Command::new("kill").arg(pid.to_string()).output();
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let alive =
            Command::new("kill").args(["-0", &pid.to_string()]).stderr(Stdio::null()).status().map(|s| s.success()).unwrap_or(false);
        if !alive {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// agmsg's `scripts/` and its mock server copied into `dir`, as a fresh install (`init-db.sh`).
fn install(source: &common::reference::Source, dir: &Path, path: &str, driver: Option<&'static str>) -> Install {
    let skill = dir.join("skill");
    let home = dir.join("home");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    source.extract(&skill, &["scripts", "tests/helpers/mock_remote_server.py"]);
    let install = Install { skill, home, tmp, path: path.to_owned(), driver };
    install.ok("internal/init-db.sh", &[]);
    install
}

/// PATH for agmsg's scripts. agmsg 1.2.1's sqlite prepare insists on `jq -b` (for Windows jq's CRLF)
/// and exits 10 without it; jq 1.6 lacks the flag and writes LF on Linux either way, so such a jq
/// gets a wrapper in `dir` that drops it.
fn script_path(dir: &Path) -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let probe = Command::new("jq").args(["-b", "-n", "1"]).output().unwrap();
    if probe.status.success() {
        return path;
    }
    let real = String::from_utf8(Command::new("bash").args(["-c", "command -v jq"]).output().unwrap().stdout).unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(
        bin.join("jq"),
        format!(
            "#!/usr/bin/env bash\nargs=()\nfor a in \"$@\"; do [ \"$a\" = -b ] || args+=(\"$a\"); done\nexec '{}' \"${{args[@]}}\"\n",
            real.trim()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("jq"), std::fs::Permissions::from_mode(0o755)).unwrap();
    format!("{}:{path}", bin.display())
}

/// agmsg's mock server, killed when dropped.
struct Mock {
    child: Child,
    port: u16,
}

impl Mock {
    fn start(script: &Path, team_id: &str) -> Mock {
        let mut child = Command::new("python3")
            .arg(script)
            .arg("0")
            .env("MOCK_PULL_TEAM_ID", team_id)
            // A team declared plain, so the pulling side may sync it without a key.
            .env("MOCK_TEAM_CIPHER_PROFILE", "none")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| panic!("the mock server printed {line:?}, not its port"));
        Mock { child, port }
    }
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP message: its first line, headers and body.
struct Message {
    start: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Message {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// A request from `reader`: head, then `Content-Length` bytes of body (after a `100 Continue` on
    /// `out` when the client waits for one, as curl does for a larger POST).
    fn read_request(reader: &mut impl BufRead, out: &mut impl Write) -> std::io::Result<Message> {
        let mut start = String::new();
        reader.read_line(&mut start)?;
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                break;
            }
            if let Some((k, v)) = line.trim_end().split_once(':') {
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let mut message = Message { start: start.trim_end().to_owned(), headers, body: Vec::new() };
        if message.header("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")) {
            out.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            message.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("expect"));
        }
        let length: usize = message.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        message.body = vec![0; length];
        reader.read_exact(&mut message.body)?;
        Ok(message)
    }

    /// A whole response read to the end (the mock speaks HTTP/1.0 and closes after each one).
    fn parse_response(raw: &[u8]) -> Message {
        let split = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a response head");
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let mut lines = head.split("\r\n");
        let start = lines.next().unwrap_or_default().to_owned();
        let headers = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())).collect();
        Message { start, headers, body: raw[split + 4..].to_vec() }
    }

    fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        let mut head = format!("{}\r\n", self.start);
        for (k, v) in &self.headers {
            if !k.eq_ignore_ascii_case("content-length") && !k.eq_ignore_ascii_case("connection") {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
        }
        head.push_str(&format!("Content-Length: {}\r\nConnection: close\r\n\r\n", self.body.len()));
        out.write_all(head.as_bytes())?;
        out.write_all(&self.body)?;
        out.flush()
    }
}

/// One request to the mock, its whole response.
fn upstream(port: u16, request: &Message) -> std::io::Result<Message> {
    let mut conn = TcpStream::connect(("127.0.0.1", port))?;
    let method_path = request.start.rsplit_once(' ').map(|(m, _)| m).unwrap_or(&request.start);
    let forwarded = Message { start: format!("{method_path} HTTP/1.0"), headers: request.headers.clone(), body: request.body.clone() };
    forwarded.write_to(&mut conn)?;
    let mut raw = Vec::new();
    conn.read_to_end(&mut raw)?;
    Ok(Message::parse_response(&raw))
}

/// The relay described at the top: listens on a port of its own, forwards to the mock.
fn relay(mock: u16, team_id: String) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let team_id = team_id.clone();
            std::thread::spawn(move || {
                let _ = relay_one(conn, mock, &team_id);
            });
        }
    });
    port
}

fn relay_one(conn: TcpStream, mock: u16, team_id: &str) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut out = conn;
    let request = Message::read_request(&mut reader, &mut out)?;
    let mut response = upstream(mock, &request)?;
    let ok = response.start.split(' ').nth(1) == Some("200");
    let post = |route: &str| request.start.starts_with("POST ") && request.start.split(' ').nth(1).is_some_and(|p| p.ends_with(route));
    if ok && post("/v1/messages") {
        let mut body: Value = serde_json::from_slice(&response.body).unwrap();
        body["protocol_version"] = 1.into();
        body["server_instance_id"] = MOCK_SERVER_ID.into();
        body["team_id"] = team_id.into();
        response.body = serde_json::to_vec(&body).unwrap();
    } else if ok
        && request.start.starts_with("GET ")
        && request.start.split(' ').nth(1).is_some_and(|p| p.split('?').next() == Some("/v1/members"))
    {
        // The mock answers members in the order /v1/connect sent them; the engine requires them sorted
        // by member id (as a real server sends them), and ids made in the same millisecond (UUIDv7)
        // need not be in roster order: sort, or the engine stops "members response is not canonical".
        let mut body: Value = serde_json::from_slice(&response.body).unwrap();
        if let Some(members) = body["members"].as_array_mut() {
            members.sort_by(|x, y| x["member_id"].as_str().cmp(&y["member_id"].as_str()));
        }
        response.body = serde_json::to_vec(&body).unwrap();
    } else if ok && post("/v1/read-state/sync") {
        let members = Message {
            start: "GET /v1/members HTTP/1.0".into(),
            headers: vec![("Agmsg-Team-ID".into(), team_id.into()), ("Host".into(), "127.0.0.1".into())],
            body: Vec::new(),
        };
        let members: Value = serde_json::from_slice(&upstream(mock, &members)?.body).unwrap();
        let mut body: Value = serde_json::from_slice(&response.body).unwrap();
        let mut ids: Vec<&str> = members["members"].as_array().unwrap().iter().filter_map(|m| m["member_id"].as_str()).collect();
        ids.sort_unstable(); // in member-id order, as a server pages them (the engine checks it)
        body["items"] = ids.iter().map(|id| serde_json::json!({"kind": "frontier", "member_id": id, "server_seq": "0"})).collect();
        response.body = serde_json::to_vec(&body).unwrap();
    }
    response.write_to(&mut out)
}

#[test]
fn a_team_syncs_between_agmsg_hosts_sqlite_and_agmsgs_bash_sqlite() {
    end_to_end("sqlite");
}

#[test]
fn a_team_syncs_between_agmsg_hosts_jsonl_and_agmsgs_bash_sqlite() {
    end_to_end("jsonl");
}

/// The team in A on agmsg-host's `driver` (through agmsg's own shim loading), in B on agmsg's bash
/// sqlite.
fn end_to_end(driver: &'static str) {
    let Some(source) = common::reference::source(&["bash", "node", "python3", "curl", "jq", "sqlite3"]) else { return };
    let started = Instant::now();
    // Where the time goes (agmsg's scripts dominate), on stderr.
    let lap = |what: &str| eprintln!("{driver}: {what} at {:.1} s", started.elapsed().as_secs_f64());
    let dir = tempfile::tempdir().unwrap();
    let path = script_path(dir.path());
    let a = install(&source, &dir.path().join("a"), &path, Some(driver));
    let b = install(&source, &dir.path().join("b"), &path, None);
    // A: agmsg with agmsg-host's shims (its sqlite runs in the component).
    let shim = Command::new(common::BIN)
        .args(["shim", "install"])
        .arg(&a.skill)
        .env("HOME", &a.home)
        .env("AGMSG_CACHE_DIR", common::shared_cache())
        .output()
        .unwrap();
    assert!(shim.status.success(), "shim install: {shim:?}");
    let loaded = std::fs::read_to_string(a.skill.join(format!("scripts/drivers/storage/{driver}.sh"))).unwrap();
    assert!(loaded.contains("agmsg-host"), "A's {driver} driver is agmsg-host's shim");
    lap("installed");

    a.ok("join.sh", &["teamx", "alice", "claude-code", "/tmp/project-a"]);
    a.ok("join.sh", &["teamx", "bob", "claude-code", "/tmp/project-b"]);
    let config: Value = serde_json::from_slice(&std::fs::read(a.skill.join("teams/teamx/config.json")).unwrap()).unwrap();
    let team_id = config["team_id"].as_str().expect("join.sh mints the team's id").to_owned();
    lap("joined");

    let mock = Mock::start(&a.skill.join("tests/helpers/mock_remote_server.py"), &team_id);
    let endpoint = format!("http://127.0.0.1:{}", relay(mock.port, team_id.clone()));

    // A connects (registers the team), sends, and pushes through agmsg's engine.
    let connected = a.remote_without_engine("teamx", &["connect", "--endpoint", &endpoint, "teamx"]);
    assert!(connected.contains("Connected: team 'teamx' (plain)"), "{connected}");
    lap("connected");
    a.ok("send.sh", &["teamx", "alice", "bob", "from A, under agmsg-host"]);
    let cycle = a.sync_once("teamx");
    assert!(cycle.contains("\"event\":\"push.reconciled\""), "A pushed and reconciled: {cycle}");
    lap("A pushed");
    // A's team store is the component's: sqlite's schema mark, jsonl's sync records in the log.
    let team_a = a.skill.join("db/teams/teamx");
    if driver == "sqlite" {
        let schema = Command::new("sqlite3")
            .arg(team_a.join("messages.db"))
            .arg("SELECT value FROM storage_metadata WHERE key = 'agmsg_host_schema'")
            .output()
            .unwrap();
        assert!(!String::from_utf8_lossy(&schema.stdout).trim().is_empty(), "{}: {schema:?}", team_a.display());
    } else {
        let log = std::fs::read_to_string(team_a.join("events.jsonl")).unwrap();
        assert!(log.contains("\"type\":\"sync_prepare_commit\"") && log.contains("\"type\":\"sync_reconcile_commit\""), "{log}");
    }

    // B pulls the team by id, then its engine's cycle brings A's roster and message.
    b.remote_without_engine("teamx", &["pull", "--endpoint", &endpoint, "--team-id", &team_id, "teamx"]);
    lap("B pulled the team");
    let cycle = b.sync_once("teamx");
    assert!(cycle.contains("from A, under agmsg-host"), "B imported A's message: {cycle}");
    lap("B synced");
    let history = b.ok("history.sh", &["teamx", "bob"]);
    assert!(history.contains("alice → bob: from A, under agmsg-host"), "B's history: {history}");
    let unread = b.ok("inbox.sh", &["teamx", "bob"]);
    assert!(unread.contains("from A, under agmsg-host"), "B's unread for bob: {unread}");

    // And back: B sends and pushes, A pulls.
    b.ok("send.sh", &["teamx", "bob", "alice", "from B, under agmsg's bash driver"]);
    b.sync_once("teamx");
    lap("B pushed");
    let cycle = a.sync_once("teamx");
    assert!(
        cycle.contains("\"event\":\"pull.import\"") && cycle.contains("from B, under agmsg's bash driver"),
        "A imported B's message: {cycle}"
    );
    let history = a.ok("history.sh", &["teamx", "alice"]);
    assert!(history.contains("bob → alice: from B, under agmsg's bash driver"), "A's history: {history}");
    let unread = a.ok("inbox.sh", &["teamx", "alice"]);
    assert!(unread.contains("from B, under agmsg's bash driver"), "A's unread for alice: {unread}");
    // Each message once on each side: pushing echoes back, and the echo is reconciled, not imported.
    assert_eq!(history.matches("from A, under agmsg-host").count(), 1, "{history}");
    assert_eq!(b.ok("history.sh", &["teamx", "bob"]).matches("from B, under agmsg's bash driver").count(), 1);
    eprintln!("{driver}: end to end in {:.1} s", started.elapsed().as_secs_f64());
}
