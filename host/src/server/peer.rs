//! Who a server may serve. Same user only (the socket's peer credentials, checked as each connection is
//! accepted), and only a caller that no sandbox confines differently from the server: an op run by the
//! server's child has the server's view of the files and the network, so serving a caller a sandbox
//! confines (another tool's seccomp filter or Landlock domain, which needs no-new-privileges, or other
//! namespaces or root) would do for it what its sandbox forbids. Such a caller is declined and runs
//! in-process, confined as it is; a server that is itself confined never starts, as it would hand its
//! confinement to every caller.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Namespaces a caller must share with the server (those the kernel has; a missing one on both
/// sides is equal).
const NAMESPACES: [&str; 8] = ["mnt", "net", "user", "pid", "ipc", "uts", "cgroup", "time"];

/// Why process `pid` (`"self"` for this one) is confined, if it is: a seccomp filter or
/// no-new-privileges (`/proc/<pid>/status`).
pub fn confinement(pid: &str) -> Result<Option<String>, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|e| format!("cannot read /proc/{pid}/status: {e}"))?;
    Ok(confinement_in(&status))
}

/// [`confinement`] as a process's `status` says.
fn confinement_in(status: &str) -> Option<String> {
    for (field, what) in [("NoNewPrivs:", "no-new-privileges"), ("Seccomp:", "a seccomp filter")] {
        let value = status.lines().find_map(|l| l.strip_prefix(field)).map(str::trim);
        match value {
            Some("0") | None => {}
            Some(_) => return Some(format!("it runs under {what}")),
        }
    }
    None
}

/// Whether the caller `pid` may be served by this process (the server's child): `Err` says why not.
/// Everything is read through one descriptor of `/proc/<pid>` (the kernel looks the process up once per
/// path: a third of this check's cost when each was looked up anew).
pub fn admit(pid: u32) -> Result<(), String> {
    use rustix::fs::{AtFlags, Mode, OFlags};
    let path = format!("/proc/{pid}");
    let proc = rustix::fs::open(&path, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| format!("cannot open {path}: {e}"))?;
    // Read into room for all of it: the file reports no size, and from an empty buffer the standard
    // library reads 32 bytes first, then doubles (seven reads, each formatting the whole file anew).
    let mut status = Vec::with_capacity(8 << 10);
    rustix::fs::openat(&proc, "status", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
        .map_err(std::io::Error::from)
        .and_then(|fd| std::io::Read::read_to_end(&mut std::fs::File::from(fd), &mut status))
        .map_err(|e| format!("cannot read {path}/status: {e}"))?;
    if let Some(why) = confinement_in(&String::from_utf8_lossy(&status)) {
        return Err(format!("the caller is confined ({why})"));
    }
    let namespaces = rustix::fs::openat(&proc, "ns", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| format!("cannot open {path}/ns: {e}"))?;
    for (ns, ours) in NAMESPACES.iter().zip(own_namespaces()) {
        let theirs =
            rustix::fs::readlinkat(&namespaces, *ns, Vec::new()).ok().map(|link| PathBuf::from(OsString::from_vec(link.into_bytes())));
        if theirs != *ours {
            return Err(format!("the caller is in another {ns} namespace"));
        }
    }
    let theirs = rustix::fs::statat(&proc, "root", AtFlags::empty()).map_err(|e| format!("cannot stat {path}/root: {e}"))?;
    let ours = std::fs::metadata("/").map_err(|e| format!("cannot stat /: {e}"))?;
    if (theirs.st_dev as u64, theirs.st_ino as u64) != (ours.dev(), ours.ino()) {
        return Err("the caller has another root directory".into());
    }
    Ok(())
}

/// This process's namespaces ([`NAMESPACES`], in order), read once: a server and its children never
/// change theirs.
fn own_namespaces() -> &'static [Option<PathBuf>] {
    static OURS: OnceLock<Vec<Option<PathBuf>>> = OnceLock::new();
    OURS.get_or_init(|| NAMESPACES.iter().map(|ns| std::fs::read_link(format!("/proc/self/ns/{ns}")).ok()).collect())
}

/// The resource limits a caller's are compared with and taken over, by name.
/// How the C library names a resource to `getrlimit` (glibc: an enum type of its own; musl, which the
/// release build's `agmsg-host` links: an int).
#[cfg(target_env = "gnu")]
type ResourceId = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type ResourceId = libc::c_int;

const RESOURCES: [(ResourceId, &str); 16] = [
    (libc::RLIMIT_AS, "AS"),
    (libc::RLIMIT_CORE, "CORE"),
    (libc::RLIMIT_CPU, "CPU"),
    (libc::RLIMIT_DATA, "DATA"),
    (libc::RLIMIT_FSIZE, "FSIZE"),
    (libc::RLIMIT_LOCKS, "LOCKS"),
    (libc::RLIMIT_MEMLOCK, "MEMLOCK"),
    (libc::RLIMIT_MSGQUEUE, "MSGQUEUE"),
    (libc::RLIMIT_NICE, "NICE"),
    (libc::RLIMIT_NOFILE, "NOFILE"),
    (libc::RLIMIT_NPROC, "NPROC"),
    (libc::RLIMIT_RSS, "RSS"),
    (libc::RLIMIT_RTPRIO, "RTPRIO"),
    (libc::RLIMIT_RTTIME, "RTTIME"),
    (libc::RLIMIT_SIGPENDING, "SIGPENDING"),
    (libc::RLIMIT_STACK, "STACK"),
];

/// A process's resource limits (soft and hard, in [`RESOURCES`]' order) and scheduling priority.
pub type ProcessLimits = (Vec<(u64, u64)>, i32);

/// This process's resource limits and scheduling priority, as [`take_limits`] sets them: a process that
/// served a caller serves another only with the limits it had before (`None`: one could not be read).
pub fn own_limits() -> Option<ProcessLimits> {
    let mut limits = Vec::with_capacity(RESOURCES.len());
    for (resource, _) in RESOURCES {
        let mut ours = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: a plain syscall writing into the struct above.
        if unsafe { libc::getrlimit(resource, &mut ours) } != 0 {
            return None;
        }
        limits.push((ours.rlim_cur, ours.rlim_max));
    }
    Some((limits, priority(0)?))
}

/// This process's limits and priority as it was forked with them (the server's): read at its first op,
/// before any caller's were taken. A process serves another op only with these (`serve_again` checks),
/// so they hold at the start of every op it serves.
pub fn limits_as_forked() -> Option<&'static ProcessLimits> {
    static FORKED_WITH: OnceLock<Option<ProcessLimits>> = OnceLock::new();
    FORKED_WITH.get_or_init(own_limits).as_ref()
}

/// Process `pid`'s scheduling priority (0: this process's).
fn priority(pid: libc::id_t) -> Option<i32> {
    // SAFETY: plain syscalls; errno is cleared first because -1 is a valid priority.
    unsafe {
        *libc::__errno_location() = 0;
        let priority = libc::getpriority(libc::PRIO_PROCESS, pid);
        (priority != -1 || *libc::__errno_location() == 0).then_some(priority)
    }
}

/// Give this process the caller's resource limits and scheduling priority, as an in-process op would
/// run with them, from `ours` (this process's: [`limits_as_forked`]). `Err` where one cannot be had (a limit above the
/// server's hard limit).
pub fn take_limits(pid: u32, ours: Option<&ProcessLimits>) -> Result<(), String> {
    let (ours, our_priority) = ours.ok_or("cannot read this process's limits")?;
    for (&(resource, name), &ours) in RESOURCES.iter().zip(ours) {
        let mut theirs = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: plain syscalls, the first writing into the struct above.
        unsafe {
            if libc::prlimit(pid as libc::pid_t, resource, std::ptr::null(), &mut theirs) != 0 {
                return Err(format!("cannot read the caller's RLIMIT_{name}: {}", std::io::Error::last_os_error()));
            }
            if (theirs.rlim_cur, theirs.rlim_max) != ours && libc::setrlimit(resource, &theirs) != 0 {
                return Err(format!("the caller's RLIMIT_{name} is above the server's"));
            }
        }
    }
    let theirs = priority(pid as libc::id_t).ok_or("cannot read the caller's priority")?;
    // SAFETY: a plain syscall on this process.
    if theirs != *our_priority && unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, theirs) } != 0 {
        return Err("the caller's priority is above the server's".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_admits_itself_and_reads_its_own_confinement() {
        assert!(confinement("self").is_ok());
        let me = std::process::id();
        admit(me).unwrap();
        take_limits(me, own_limits().as_ref()).unwrap();
        assert!(admit(u32::MAX).is_err(), "a process that is not there");
    }
}
