//! A throwaway PostgreSQL cluster for one test binary (or one test): `initdb` into a temporary
//! directory (as the `postgres` user when the tests run as root, since the server refuses root), a free
//! 127.0.0.1 port (or an address inside a network namespace, [`Cluster::start_in_netns`]), its socket in
//! that directory, `fsync=off`, SCRAM-SHA-256 with a password, and on request TLS with a private CA and a
//! leaf certificate for `localhost` and the listen address. Stopped and removed on drop.
//!
//! Also included by the benchmarks (`host/benches/postgres_vs_psql.rs`), so it needs nothing of the
//! tests' other helpers.
//!
//! A machine without PostgreSQL's server binaries fails the test, naming `scripts/setup` (which
//! installs Debian's `postgresql`): the tests never skip silently.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

pub const USER: &str = "agmsg";
pub const PASSWORD: &str = "agmsg-test-password";

pub struct Cluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    /// The CA's certificate (PEM), when started with TLS.
    pub ca: Option<PathBuf>,
    as_postgres: bool,
    /// The address the server listens on (TCP), and the network namespace it runs in (`ip netns`), if any.
    pub addr: Ipv4Addr,
    netns: Option<String>,
}

/// PostgreSQL's server binaries: the newest `/usr/lib/postgresql/<N>/bin` (Debian's layout), else the
/// directory of an `initdb` on `PATH`.
fn bin_dir() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path().join("bin"))))
        .filter(|(_, bin): &(u32, PathBuf)| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return bin;
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file());
    on_path.unwrap_or_else(|| {
        panic!(
            "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: run scripts/setup (it installs Debian's \
             postgresql package); the postgres driver's tests need a throwaway cluster"
        )
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn check(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("{what}: cannot run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A P-256 key, unencrypted, for `openssl req`.
const EC_KEY: [&str; 5] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];

/// `openssl <args>` in `dir`, which must succeed.
fn openssl(dir: &Path, args: &[&str]) -> Output {
    check(&format!("openssl {}", args[0]), Command::new("openssl").current_dir(dir).args(args).output())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Cluster {
    /// A cluster without TLS.
    pub fn start() -> Cluster {
        Cluster::new(false, Ipv4Addr::LOCALHOST, None)
    }

    /// A cluster that also speaks TLS, with a certificate for `localhost` and `127.0.0.1` signed by a
    /// private CA ([`Cluster::ca`]).
    pub fn start_tls() -> Cluster {
        Cluster::new(true, Ipv4Addr::LOCALHOST, None)
    }

    /// A cluster whose server runs inside network namespace `netns` (`ip netns exec`), listening on
    /// `addr` there, with TLS when asked (the certificate also names `addr`). Its Unix socket, which
    /// [`Cluster::psql`] uses, is a file and so reachable from any namespace.
    pub fn start_in_netns(netns: &str, addr: Ipv4Addr, tls: bool) -> Cluster {
        Cluster::new(tls, addr, Some(netns.to_owned()))
    }

    fn new(tls: bool, addr: Ipv4Addr, netns: Option<String>) -> Cluster {
        let bin = bin_dir();
        let dir = tempfile::Builder::new().prefix("agmsg-pg-").tempdir().unwrap();
        let as_postgres = is_root();
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, PASSWORD).unwrap();
        if as_postgres {
            check("chown", Command::new("chown").args(["-R", "postgres:"]).arg(dir.path()).output());
        }
        let mut cluster = Cluster { dir, bin, port: 0, ca: None, as_postgres, addr, netns };
        check(
            "initdb",
            cluster
                .server_cmd("initdb")
                .args(["-D"])
                .arg(cluster.data())
                .args(["-U", USER, "-A", "scram-sha-256", "--auth-local=trust", "-E", "UTF8", "--no-sync", "--pwfile"])
                .arg(&pwfile)
                .output(),
        );
        if tls {
            cluster.make_certificates();
        }
        if cluster.netns.is_some() {
            cluster.admit_remote_clients(tls);
        }
        cluster.port = free_port();
        cluster.start_server();
        cluster
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// A command running a server binary, as `postgres` when we are root.
    fn server_cmd(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        if self.as_postgres {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", "postgres", "--"]).arg(path);
            cmd
        } else {
            Command::new(path)
        }
    }

    /// The server's own command (`pg_ctl start`): in the cluster's network namespace, if it has one.
    /// Every other command reaches the server through its files and signals, from any namespace.
    fn server_start_cmd(&self) -> Command {
        let Some(netns) = &self.netns else {
            return self.server_cmd("pg_ctl");
        };
        let plain = self.server_cmd("pg_ctl");
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns]).arg(plain.get_program()).args(plain.get_args());
        cmd
    }

    fn make_certificates(&mut self) {
        let d = self.dir.path();
        openssl(
            d,
            &[&["req", "-x509"][..], &EC_KEY, &["-keyout", "ca.key", "-out", "ca.crt", "-days", "3", "-subj", "/CN=agmsg test CA"]]
                .concat(),
        );
        let mut names = "DNS:localhost,IP:127.0.0.1".to_owned();
        if self.addr != Ipv4Addr::LOCALHOST {
            names += &format!(",IP:{}", self.addr);
        }
        self.issue_server_cert("server", "localhost", &names);
        let mut conf = std::fs::OpenOptions::new().append(true).open(self.data().join("postgresql.conf")).unwrap();
        use std::io::Write;
        writeln!(conf, "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'").unwrap();
        self.ca = Some(d.join("ca.crt"));
    }

    /// A server certificate signed by the cluster's CA (`ca.crt`, `ca.key`) for the `subjectAltName`
    /// list `names` (common name `cn`), made as `<stem>.key` / `<stem>.crt` in the cluster's directory
    /// and installed as the server's `server.crt` / `server.key`, private to the server.
    fn issue_server_cert(&self, stem: &str, cn: &str, names: &str) {
        let d = self.dir.path();
        let [key, csr, ext, crt] = ["key", "csr", "ext", "crt"].map(|suffix| format!("{stem}.{suffix}"));
        openssl(d, &[&["req"][..], &EC_KEY, &["-keyout", &key, "-out", &csr, "-subj", &format!("/CN={cn}")]].concat());
        std::fs::write(d.join(&ext), format!("subjectAltName={names}\n")).unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &crt,
                "-days",
                "3",
                "-extfile",
                &ext,
            ],
        );
        let data = self.data();
        for (from, to) in [(&crt, "server.crt"), (&key, "server.key")] {
            std::fs::copy(d.join(from), data.join(to)).unwrap();
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(data.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
        if self.as_postgres {
            check("chown", Command::new("chown").args(["postgres:", "server.crt", "server.key"]).current_dir(&data).output());
        }
    }

    /// Clients from other namespaces (any IPv4 address: the namespaces are private), over TLS only
    /// when the cluster has it, so that a client that did not encrypt is refused; every connection
    /// logged, so a test can see who came from where ([`Cluster::server_log`]).
    fn admit_remote_clients(&self, tls: bool) {
        use std::io::Write;
        let data = self.data();
        let mut hba = std::fs::OpenOptions::new().append(true).open(data.join("pg_hba.conf")).unwrap();
        writeln!(hba, "{} all all 0.0.0.0/0 scram-sha-256", if tls { "hostssl" } else { "host" }).unwrap();
        let mut conf = std::fs::OpenOptions::new().append(true).open(data.join("postgresql.conf")).unwrap();
        writeln!(conf, "log_connections = on").unwrap();
    }

    /// What the server has logged so far.
    pub fn server_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    fn start_server(&mut self) {
        for attempt in 0..3 {
            let options = format!(
                "-p {} -k {} -c listen_addresses={} -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
                 -c max_connections=60",
                self.port,
                self.dir.path().display(),
                self.addr
            );
            let out = self
                .server_start_cmd()
                .arg("-D")
                .arg(self.data())
                .arg("-l")
                .arg(self.dir.path().join("server.log"))
                .args(["-w", "-t", "60", "-o", &options, "start"])
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            if attempt == 2 {
                let log = self.server_log();
                panic!("pg_ctl start failed: {}{}\n{log}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            }
            // Someone took the port between our probe and the server's bind.
            self.port = free_port();
        }
    }

    /// Stop the server (fast shutdown: sessions are cut).
    pub fn stop(&self) {
        check("pg_ctl stop", self.server_cmd("pg_ctl").arg("-D").arg(self.data()).args(["-m", "fast", "-w", "stop"]).output());
    }

    /// Start it again, on the same port.
    pub fn restart_stopped(&mut self) {
        self.start_server();
    }

    /// The `psql` beside the server binaries (else the one on `PATH`).
    pub fn psql_program(&self) -> PathBuf {
        if self.bin.join("psql").is_file() { self.bin.join("psql") } else { PathBuf::from("psql") }
    }

    /// `psql` as the cluster's superuser, through the socket; its output.
    pub fn psql(&self, database: &str, sql: &str) -> String {
        let out = check(
            "psql",
            Command::new(self.psql_program())
                .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h"])
                .arg(self.dir.path())
                .args(["-p", &self.port.to_string(), "-U", USER, "-d", database, "-c", sql])
                .output(),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A new, empty database; its name.
    pub fn create_database(&self) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let name = format!("agmsg_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        self.psql("postgres", &format!("CREATE DATABASE {name}"));
        name
    }

    /// The URL of `database` over TCP (`sslmode` as given).
    pub fn url(&self, database: &str, sslmode: &str) -> String {
        format!("postgres://{USER}@{}:{}/{database}?sslmode={sslmode}", self.addr, self.port)
    }

    /// The variables that point an `agmsg-host` run at `database` (password included).
    pub fn env(&self, database: &str) -> Vec<(String, String)> {
        vec![
            ("AGMSG_STORAGE_DRIVER".into(), "postgres".into()),
            ("AGMSG_POSTGRES_URL".into(), self.url(database, "disable")),
            ("PGPASSWORD".into(), PASSWORD.into()),
        ]
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A TLS cluster's server certificate issued again by its CA, for `names` only (a
    /// `subjectAltName` list such as `DNS:elsewhere.example`), and the server told to load it: a
    /// client checking the host name it connected to (verify-full) must then refuse it.
    pub fn reissue_server_cert(&self, names: &str) {
        assert!(self.ca.is_some(), "not a TLS cluster");
        self.issue_server_cert("other", "elsewhere", names);
        // The TLS files are read again on a configuration reload (new connections use them).
        self.psql("postgres", "SELECT pg_reload_conf()");
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.server_cmd("pg_ctl").arg("-D").arg(self.data()).args(["-m", "immediate", "-w", "stop"]).output();
    }
}
