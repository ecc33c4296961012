//! OCI registries for the tests: Debian's `docker-registry` (the CNCF distribution registry) on
//! 127.0.0.1, its storage in a temporary directory; and a hostile one, a small HTTP server that answers
//! what the test says (a wrong blob, a redirect elsewhere, an endless body).
//!
//! Without `docker-registry` or `ssh-keygen` a test is skipped, saying why on stderr (and in the file
//! `AGMSG_SKIP_LOG` names, for scripts/test's summary); `AGMSG_REQUIRE_REGISTRY=1` (scripts/test sets it
//! as root, where scripts/setup installed both) makes that a failure.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub const DOCKER_REGISTRY: &str = "/usr/bin/docker-registry";

/// Skip the running test, saying why, or fail it when `AGMSG_REQUIRE_REGISTRY=1`.
pub fn skip(why: &str) {
    assert!(
        std::env::var("AGMSG_REQUIRE_REGISTRY").as_deref() != Ok("1"),
        "{why} (AGMSG_REQUIRE_REGISTRY=1: this test must run; scripts/setup installs docker-registry and openssh-client)"
    );
    eprintln!("skipped: {why} (scripts/setup installs it; AGMSG_REQUIRE_REGISTRY=1 makes this a failure)");
    if let Some(log) = std::env::var_os("AGMSG_SKIP_LOG").filter(|v| !v.is_empty()) {
        let thread = std::thread::current();
        let line = format!("{}::{}: {why}\n", env!("CARGO_CRATE_NAME"), thread.name().unwrap_or("?"));
        if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(log) {
            let _ = file.write_all(line.as_bytes());
        }
    }
}

/// Whether the tools these tests need are here (else skipped, saying which).
pub fn tools_present() -> bool {
    if !Path::new(DOCKER_REGISTRY).is_file() {
        skip(&format!("{DOCKER_REGISTRY} (Debian's docker-registry package) is not installed"));
        return false;
    }
    if Command::new("ssh-keygen").arg("-?").output().is_err() {
        skip("ssh-keygen (the openssh-client package) is not installed");
        return false;
    }
    true
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A real registry on 127.0.0.1, stopped when dropped.
pub struct Registry {
    pub addr: String,
    /// Its storage (`docker/registry/v2/...`).
    pub storage: PathBuf,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Registry {
    /// `None`: skipped (the tools are missing).
    pub fn start() -> Option<Registry> {
        if !tools_present() {
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let storage = dir.path().join("storage");
        std::fs::create_dir_all(&storage).unwrap();
        for _ in 0..5 {
            let addr = format!("127.0.0.1:{}", free_port());
            let config = dir.path().join("config.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\nlog:\n  level: error\n  accesslog:\n    disabled: true\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
                    storage.display()
                ),
            )
            .unwrap();
            let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
            let child = Command::new(DOCKER_REGISTRY)
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(log.try_clone().unwrap())
                .stderr(log)
                .spawn()
                .unwrap();
            let mut child = child;
            let deadline = Instant::now() + Duration::from_secs(15);
            while Instant::now() < deadline {
                if let Ok((200, _, _)) = http(&addr, "GET", "/v2/", &[], b"") {
                    return Some(Registry { addr, storage, child, _dir: dir });
                }
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            let log = std::fs::read_to_string(dir.path().join("registry.log")).unwrap_or_default();
            eprintln!("docker-registry did not answer on {addr}: {log}");
        }
        panic!("docker-registry never answered on 127.0.0.1");
    }

    /// The stored file of blob `digest` (`sha256:...`).
    pub fn blob_file(&self, digest: &str) -> PathBuf {
        let hex = digest.strip_prefix("sha256:").unwrap();
        self.storage.join("docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer: status, headers (lowercase names), body.
pub type Reply = (u16, Vec<(String, String)>, Vec<u8>);

/// One HTTP/1.1 exchange with `addr` (`Connection: close`).
pub fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> std::io::Result<Reply> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer)?;
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").ok_or(std::io::ErrorKind::InvalidData)?;
    let head = String::from_utf8_lossy(&answer[..split]).into_owned();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let headers = lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned())).collect();
    Ok((status, headers, answer[split + 4..].to_vec()))
}

/// What a hostile server answers a request with.
pub enum Answer {
    /// Status, headers, body.
    Bytes(u16, Vec<(String, String)>, Vec<u8>),
    /// A 200 whose body is `n` bytes of zeros, sent with no length (until the connection closes).
    Endless(u64),
    /// A 200 announcing a body of 1 KiB, then nothing for this long.
    Stall(Duration),
}

/// A hostile registry on 127.0.0.1: each request's path goes to `answer`. Stopped when dropped.
pub struct Hostile {
    pub addr: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hostile {
    pub fn start(answer: impl Fn(&str, &str) -> Answer + Send + 'static) -> Hostile {
        Hostile::start_on("127.0.0.1", answer)
    }

    pub fn start_on(ip: &str, answer: impl Fn(&str, &str) -> Answer + Send + 'static) -> Hostile {
        Hostile::start_seeing_headers(ip, move |method, path, _| answer(method, path))
    }

    /// Each request's method, path and whole head (its request line and headers) go to `answer`.
    pub fn start_seeing_headers(ip: &str, answer: impl Fn(&str, &str, &str) -> Answer + Send + 'static) -> Hostile {
        let listener = TcpListener::bind((ip, 0)).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 65536 {
                    match stream.read(&mut byte) {
                        Ok(1) => head.push(byte[0]),
                        _ => break,
                    }
                }
                let head = String::from_utf8_lossy(&head).into_owned();
                let mut words = head.split_whitespace();
                let (method, path) = (words.next().unwrap_or("").to_owned(), words.next().unwrap_or("").to_owned());
                match answer(&method, &path, &head) {
                    Answer::Bytes(status, headers, body) => {
                        let mut out = format!("HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n", body.len());
                        for (k, v) in headers {
                            out.push_str(&format!("{k}: {v}\r\n"));
                        }
                        out.push_str("\r\n");
                        let _ = stream.write_all(out.as_bytes());
                        if method != "HEAD" {
                            let _ = stream.write_all(&body);
                        }
                    }
                    Answer::Stall(time) => {
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 1024\r\nConnection: close\r\n\r\n");
                        std::thread::sleep(time);
                    }
                    Answer::Endless(n) => {
                        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
                        let chunk = vec![0u8; 64 << 10];
                        let mut sent = 0u64;
                        while sent < n {
                            if stream.write_all(&chunk).is_err() {
                                break;
                            }
                            sent += chunk.len() as u64;
                        }
                    }
                }
            }
        });
        Hostile { addr, stop, thread: Some(thread) }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
