//! Separate "machines" for one test: Linux network namespaces (`ip netns`, root only), joined by veth
//! pairs. Namespace 0 is the hub (a database server, say): it holds one service address on its
//! loopback, and a veth link to every other namespace; each of those routes the service address over
//! its link. The other namespaces cannot reach each other or anything else, and the host's own network
//! is not involved. Every name holds this process's id and a counter, so concurrent runs never clash;
//! the namespaces (and with them the links) are deleted on drop, and ones a killed run left behind are
//! deleted by the next run.
//!
//! Where namespaces cannot be made (not root, no `ip`, `ip netns add` refused), [`Lan::create`] says
//! why and the caller skips, unless `AGMSG_REQUIRE_NETNS=1` ([`skip_or_fail`]); scripts/test sets it
//! when it runs as root, as CI does.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

const PREFIX: &str = "agmsg-test-";

/// The hub's service address, on its loopback.
pub const SERVICE_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);

pub struct Lan {
    ip: PathBuf,
    names: Vec<String>,
}

/// `ip`: on `PATH`, else where Debian installs it (`/usr/sbin` is not on a user's `PATH`), found as the
/// host finds a program.
fn ip_program() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path).chain(["/usr/sbin".into(), "/sbin".into()]);
    agmsg_host::runtime::caps::process::find_on_path("ip", &std::env::join_paths(dirs).ok()?)
}

fn run(ip: &PathBuf, args: &[&str]) -> Result<(), String> {
    let out = Command::new(ip).args(args).output().map_err(|e| format!("ip {}: cannot run: {e}", args.join(" ")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {} failed ({}): {}", args.join(" "), out.status, String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Lan {
    /// Namespaces for `roles` (the first is the hub), linked as described above. `Err` says why this
    /// machine cannot make them; a failure once they could be made is a panic (cleaned up).
    pub fn create(roles: &[&str]) -> Result<Lan, String> {
        assert!(roles.len() >= 2 && roles.len() <= 250, "a hub and up to 249 machines");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("network namespaces need root".into());
        }
        let ip = ip_program().ok_or("the `ip` program (iproute2) is not installed")?;
        remove_leftovers(&ip);
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let run_id = format!("{PREFIX}{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let mut lan = Lan { ip, names: Vec::new() };
        for role in roles {
            let name = format!("{run_id}-{role}");
            // The one step whose failure means "not permitted here" (a container without CAP_SYS_ADMIN).
            run(&lan.ip, &["netns", "add", &name])?;
            lan.names.push(name);
        }
        lan.link().unwrap_or_else(|e| panic!("linking the namespaces: {e}"));
        Ok(lan)
    }

    fn link(&self) -> Result<(), String> {
        let ip = |args: &[&str]| run(&self.ip, args);
        let hub = self.names[0].as_str();
        for name in &self.names {
            ip(&["-n", name, "link", "set", "lo", "up"])?;
        }
        ip(&["-n", hub, "addr", "add", &format!("{SERVICE_ADDR}/32"), "dev", "lo"])?;
        for (k, name) in self.names.iter().enumerate().skip(1) {
            let (hub_end, hub_addr, machine_addr) = (format!("veth{k}"), format!("10.77.{k}.1"), format!("10.77.{k}.2"));
            ip(&["-n", hub, "link", "add", &hub_end, "type", "veth", "peer", "name", "eth0", "netns", name])?;
            ip(&["-n", hub, "addr", "add", &format!("{hub_addr}/24"), "dev", &hub_end])?;
            ip(&["-n", hub, "link", "set", &hub_end, "up"])?;
            ip(&["-n", name, "addr", "add", &format!("{machine_addr}/24"), "dev", "eth0"])?;
            ip(&["-n", name, "link", "set", "eth0", "up"])?;
            ip(&["-n", name, "route", "add", &format!("{SERVICE_ADDR}/32"), "via", &hub_addr])?;
        }
        Ok(())
    }

    /// The namespace of role number `k` (as given to [`Lan::create`]).
    pub fn name(&self, k: usize) -> &str {
        &self.names[k]
    }

    /// The address machine `k` (not the hub) reaches the hub from.
    pub fn machine_addr(&self, k: usize) -> Ipv4Addr {
        assert!(k >= 1 && k < self.names.len());
        Ipv4Addr::new(10, 77, k as u8, 2)
    }

    /// `command` run inside namespace `k` instead (`ip netns exec`), keeping its environment and
    /// working directory.
    pub fn inside(&self, k: usize, command: &Command) -> Command {
        let mut wrapped = Command::new(&self.ip);
        wrapped.args(["netns", "exec", &self.names[k]]).arg(command.get_program()).args(command.get_args());
        if let Some(dir) = command.get_current_dir() {
            wrapped.current_dir(dir);
        }
        wrapped.stdin(std::process::Stdio::null());
        // Env::program clears the environment: so must the wrapper, or the parent's would leak in.
        wrapped.env_clear();
        for (key, value) in command.get_envs() {
            if let Some(value) = value {
                wrapped.env(key, value);
            }
        }
        wrapped
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        // Deleting a namespace deletes its veth ends, and with them their peers.
        for name in &self.names {
            let _ = run(&self.ip, &["netns", "delete", name]);
        }
    }
}

/// Delete the namespaces of earlier runs whose process is gone (killed before its drop ran).
fn remove_leftovers(ip: &PathBuf) {
    let Ok(out) = Command::new(ip).args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or_default();
        let Some(pid) = name.strip_prefix(PREFIX).and_then(|rest| rest.split('-').next()) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !std::path::Path::new("/proc").join(pid).exists() {
            let _ = run(ip, &["netns", "delete", name]);
        }
    }
}

/// A test that could not make its namespaces: skipped with the reason, or failed when
/// `AGMSG_REQUIRE_NETNS=1` says this machine must be able to.
pub fn skip_or_fail(test: &str, why: &str) {
    if std::env::var("AGMSG_REQUIRE_NETNS").as_deref() == Ok("1") {
        panic!("{test}: AGMSG_REQUIRE_NETNS=1, but network namespaces cannot be made here: {why}");
    }
    eprintln!("{test}: SKIPPED: {why} (set AGMSG_REQUIRE_NETNS=1 to make this a failure)");
}
