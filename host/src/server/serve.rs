//! The server: made ready once (the engine, the linkers, the bundled drivers' machine code), then one
//! loop that accepts a connection, forks, and reports how each child ended. The loop is one thread and
//! never reads from a client (the child does), so no client can hold it; it polls its listener, a
//! signalfd (SIGTERM, SIGINT, SIGHUP: stop accepting, let the running ops finish, leave) and a pidfd
//! per running child. The child takes the caller's descriptors, limits, environment, working directory
//! and umask, and returns the caller's argv to the command line, which runs it as any invocation.

use std::ffi::OsString;
use std::io::{IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};

use super::protocol::{FDS, HEADER, Kind, Reply, Request};
use super::rendezvous::Rendezvous;
use super::{IDLE, peer};
use crate::error::HostError;

/// How long an idle server lives on by default.
const IDLE_DEFAULT: Duration = Duration::from_secs(300);
/// How long a child waits for its request's bytes.
const REQUEST_WAIT: Duration = Duration::from_secs(5);

/// What `serve` returned to this process.
pub enum Served {
    /// This process is a child forked for a request: run these arguments as the command line.
    Child(Vec<OsString>),
    /// The server (or a child that answered a status or stop request) is done.
    Ended(Result<(), HostError>),
}

/// What the server knows of itself, handed to each child (which answers `server status`).
#[derive(Clone, Copy)]
struct Snapshot {
    started: std::time::SystemTime,
    running: usize,
    idle: Duration,
    counters: &'static Counters,
}

/// Counts the children keep, in memory shared by the server and every child it forks.
struct Counters {
    /// Ops taken (run by a child).
    ops: AtomicU64,
    /// Ops declined (the caller ran them in-process).
    declined: AtomicU64,
}

impl Counters {
    /// Zeroed counters in a shared anonymous mapping, for the process's life.
    fn shared() -> std::io::Result<&'static Counters> {
        // SAFETY: a fresh anonymous mapping, never unmapped; all-zero bytes are two valid AtomicU64s,
        // and the page is aligned for them.
        unsafe {
            let page = rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                std::mem::size_of::<Counters>(),
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::SHARED,
            )?;
            Ok(&*page.cast::<Counters>())
        }
    }
}

/// Run this user's server of this build until it has been idle for `AGMSG_HOST_SERVER_IDLE` seconds
/// (300 by default) or is told to stop; `detach` first leaves the caller (a new session, no terminal,
/// `/` as working directory). Another server already serving ends this one at once, successfully.
pub fn serve(detach: bool) -> Served {
    let refused = |why: String| Served::Ended(Err(HostError::refused(why)));
    let rendezvous = match Rendezvous::locate(|name| std::env::var_os(name)) {
        Ok(r) => r,
        Err(why) => return refused(format!("no private directory for the server: {why}")),
    };
    match peer::confinement("self") {
        Ok(None) => {}
        Ok(Some(why)) => return refused(format!("not started: {why}, which every op it ran would inherit")),
        Err(why) => return refused(why),
    }
    let idle = match std::env::var(IDLE) {
        Err(_) => IDLE_DEFAULT,
        Ok(s) => match s.parse::<u64>() {
            Ok(secs) if secs > 0 => Duration::from_secs(secs),
            _ => return Served::Ended(Err(HostError::usage(format!("{IDLE}={s:?}: expected a positive number of seconds")))),
        },
    };
    if detach && let Some(ended) = detach_from_caller() {
        return ended;
    }
    let lock = match std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(&rendezvous.lock) {
        Ok(f) => f,
        Err(e) => return refused(format!("cannot open {}: {e}", rendezvous.lock.display())),
    };
    if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        // Another server of this build serves: nothing to do.
        return Served::Ended(Ok(()));
    }
    if let Err(e) = prewarm() {
        return refused(format!("cannot make the engine ready: {e:#}"));
    }
    let _ = std::fs::remove_file(&rendezvous.socket);
    let listener = match UnixListener::bind(&rendezvous.socket).and_then(|l| l.set_nonblocking(true).map(|()| l)) {
        Ok(l) => l,
        Err(e) => return refused(format!("cannot listen on {}: {e}", rendezvous.socket.display())),
    };
    let bound = std::fs::symlink_metadata(&rendezvous.socket).map(|m| (m.dev(), m.ino())).ok();
    let signals = match StopSignals::block() {
        Ok(s) => s,
        Err(e) => return refused(format!("cannot watch for signals: {e}")),
    };
    let counters = match Counters::shared() {
        Ok(c) => c,
        Err(e) => return refused(format!("cannot map the server's counters: {e}")),
    };
    match serve_loop(listener, &signals, lock, Snapshot { started: std::time::SystemTime::now(), running: 0, idle, counters }) {
        Loop::Child(served) => served,
        Loop::Ended(result) => {
            // Still ours (no later server replaced it): gone, so that no client connects to nothing.
            if bound.is_some() && std::fs::symlink_metadata(&rendezvous.socket).map(|m| (m.dev(), m.ino())).ok() == bound {
                let _ = std::fs::remove_file(&rendezvous.socket);
            }
            Served::Ended(result)
        }
    }
}

/// How the loop ended: in the server, or in a child forked for a request (whose `Served` it is).
enum Loop {
    Ended(Result<(), HostError>),
    Child(Served),
}

/// The engine, every axis's linker and every bundled driver's machine code, in memory before the first
/// fork: what a fresh process would otherwise make for each op. Starts no thread.
fn prewarm() -> wasmtime::Result<()> {
    crate::runtime::engine::prewarm()?;
    use crate::runtime::Limits;
    // Limits apply to calls, and this runtime makes none.
    let limits = Limits {
        call_timeout: Limits::DEFAULT_CALL_TIMEOUT,
        memory_bytes: Limits::DEFAULT_MEMORY_BYTES,
        process_timeout: Limits::DEFAULT_PROCESS_TIMEOUT,
        op_timeout: Limits::DEFAULT_OP_TIMEOUT,
        max_export_bytes: Limits::DEFAULT_MAX_EXPORT_BYTES,
    };
    let runtime = crate::runtime::Runtime::new(crate::runtime::cache::CompileCache::disabled(), limits)?;
    for axis in crate::axis::Axis::ALL {
        for driver in crate::bundled::of(axis) {
            runtime.load(driver.wasm, driver.sha256)?;
        }
    }
    Ok(())
}

/// A running op: its child, the pidfd the loop polls, and the client's connection its end is reported on.
struct Running {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    conn: UnixStream,
}

fn serve_loop(listener: UnixListener, signals: &StopSignals, lock: std::fs::File, mut snapshot: Snapshot) -> Loop {
    let mut listener = Some(listener);
    let mut running: Vec<Running> = Vec::new();
    let mut idle_since = Instant::now();
    loop {
        if listener.is_none() && running.is_empty() {
            return Loop::Ended(Ok(()));
        }
        let timeout = if running.is_empty() {
            match snapshot.idle.checked_sub(idle_since.elapsed()) {
                Some(left) if !left.is_zero() => left.as_millis().min(i32::MAX as u128) as i32,
                _ => return Loop::Ended(Ok(())),
            }
        } else {
            -1
        };
        let mut polled: Vec<libc::pollfd> = Vec::with_capacity(2 + running.len());
        polled.push(libc::pollfd { fd: signals.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        polled.push(libc::pollfd { fd: listener.as_ref().map_or(-1, |l| l.as_raw_fd()), events: libc::POLLIN, revents: 0 });
        polled.extend(running.iter().map(|r| libc::pollfd { fd: r.pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        // SAFETY: `polled` is a valid array of pollfd for its length.
        let n = unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, timeout) };
        if n < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Loop::Ended(Err(HostError::refused(format!("poll: {}", std::io::Error::last_os_error()))));
        }
        if polled[0].revents != 0 {
            signals.drain();
            // Stop accepting; the running ops finish and are reported.
            listener = None;
        }
        // Ended children first, so that a pidfd's index still matches `running`.
        for (i, p) in polled[2..].iter().enumerate().rev() {
            if p.revents != 0 {
                let ended = running.swap_remove(i);
                report_end(ended);
                if running.is_empty() {
                    idle_since = Instant::now();
                }
            }
        }
        if polled[1].revents != 0
            && let Some(l) = listener.as_ref()
        {
            while let Ok((conn, _)) = l.accept() {
                if !same_user(&conn) {
                    continue;
                }
                snapshot.running = running.len();
                // SAFETY: this process has one thread (the loop's: no engine thread runs until a driver
                // call, and the server makes none), so the child may go on as a normal process.
                match unsafe { libc::fork() } {
                    0 => {
                        drop(listener);
                        drop(running);
                        drop(lock);
                        return Loop::Child(child(conn, snapshot));
                    }
                    -1 => {} // the client sees its connection close before "accepted": it runs the op itself
                    pid => {
                        // SAFETY: the pidfd_open syscall; a non-negative result is a new descriptor we own.
                        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
                        if fd < 0 {
                            // Not watchable (a kernel before 5.3): wait for it here rather than lose it.
                            report_end(Running { pid, pidfd: OwnedFd::from(std::fs::File::open("/dev/null").expect("/dev/null")), conn });
                            continue;
                        }
                        // SAFETY: as above.
                        let pidfd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
                        running.push(Running { pid, pidfd, conn });
                    }
                }
            }
        }
    }
}

/// Whether the peer on `conn` is this user (its socket credentials).
fn same_user(conn: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(conn).is_ok_and(|cred| cred.uid == rustix::process::geteuid())
}

/// Wait for a child that ended and tell its client how.
fn report_end(mut ended: Running) {
    let mut status = 0;
    // SAFETY: waitpid on our own child, writing its status into `status`.
    let reaped = unsafe { libc::waitpid(ended.pid, &mut status, 0) };
    let reply = if reaped != ended.pid {
        return; // already reaped or not ours: the client sees the connection close without an end
    } else if libc::WIFEXITED(status) {
        Reply::Exited(libc::WEXITSTATUS(status) as u8)
    } else {
        Reply::Signalled(libc::WTERMSIG(status))
    };
    let _ = ended.conn.set_nonblocking(false);
    let _ = ended.conn.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = reply.write_to(&mut ended.conn);
    drop(ended.pidfd);
}

/// In a child forked for `conn`: read the request, and either answer it (status, stop, declined) or
/// take on the caller's state and hand back its argv.
fn child(conn: UnixStream, snapshot: Snapshot) -> Served {
    StopSignals::unblock();
    let ended = |r: Result<(), String>| Served::Ended(r.map_err(HostError::refused));
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(REQUEST_WAIT));
    let (request, fds) = match read_request(&conn) {
        Ok(r) => r,
        Err(why) => return ended(Err(format!("a request: {why}"))),
    };
    let mut reply_conn = &conn;
    match request.kind {
        Kind::Status => return ended(Reply::Status(status_text(snapshot)).write_to(&mut reply_conn).map_err(|e| e.to_string())),
        Kind::Stop => {
            // SAFETY: a signal to our parent, the server.
            unsafe { libc::kill(libc::getppid(), libc::SIGTERM) };
            return ended(Reply::Status("stopping".into()).write_to(&mut reply_conn).map_err(|e| e.to_string()));
        }
        Kind::Run => {}
    }
    let caller = match rustix::net::sockopt::socket_peercred(&conn) {
        Ok(cred) => cred.pid.as_raw_nonzero().get() as u32,
        Err(e) => return ended(Err(format!("peer credentials: {e}"))),
    };
    let admitted = if fds.len() != FDS {
        Err("the caller's descriptors did not arrive".to_owned())
    } else {
        peer::admit(caller).and_then(|()| peer::take_limits(caller))
    };
    if let Err(why) = admitted {
        snapshot.counters.declined.fetch_add(1, Ordering::Relaxed);
        crate::log::host_log::debug(&format!("server: declined: {why}"));
        return ended(Reply::Declined(why).write_to(&mut reply_conn).map_err(|e| e.to_string()));
    }
    if let Err(e) = take_on(&request, &fds) {
        return ended(Reply::Declined(e).write_to(&mut reply_conn).map_err(|e| e.to_string()));
    }
    drop(fds);
    // What the process read of its own environment before the fork is the server's: read it again.
    crate::log::reread_level();
    super::CALLER_PARENT.store(request.caller_parent, std::sync::atomic::Ordering::Relaxed);
    if let Some(arg0) = request.args.first() {
        let _ = super::CALLER_ARG0.set(arg0.clone());
    }
    if Reply::Accepted.write_to(&mut reply_conn).is_err() {
        return ended(Ok(()));
    }
    snapshot.counters.ops.fetch_add(1, Ordering::Relaxed);
    match conn.try_clone() {
        Ok(reporter) => {
            let _ = OP_CONN.set(reporter);
        }
        Err(e) => return ended(Err(format!("the connection: {e}"))),
    }
    watch_client(conn);
    Served::Child(request.args)
}

/// A child's connection to its client, for [`op_ended`].
static OP_CONN: std::sync::OnceLock<UnixStream> = std::sync::OnceLock::new();

/// In a server's child, once the op has returned `code`: say so to the client directly, stdout and
/// stderr flushed first. The client still waits for the server's word that this process has exited
/// (locks released, files closed), and takes this one only if the server is gone.
pub fn op_ended(code: u8) {
    use std::io::Write;
    if let Some(conn) = OP_CONN.get() {
        let _ = std::io::stdout().flush();
        let _ = std::io::stderr().flush();
        let _ = Reply::OpEnded(code).write_to(&mut &*conn);
    }
}

/// Read one request and the descriptors that came with it.
fn read_request(conn: &UnixStream) -> Result<(Request, Vec<OwnedFd>), String> {
    let mut header = [0u8; HEADER];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(conn, &mut [IoSliceMut::new(&mut header)], &mut control, RecvFlags::CMSG_CLOEXEC)
        .map_err(|e| format!("cannot read it: {e}"))?;
    let mut fds = Vec::new();
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    let mut read = got.bytes;
    if read == 0 {
        return Err("the caller left".into());
    }
    while read < HEADER {
        let n = (&*conn).read(&mut header[read..]).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("cut short".into());
        }
        read += n;
    }
    let (kind, len) = Request::header(&header)?;
    let mut body = vec![0u8; len];
    (&*conn).read_exact(&mut body).map_err(|e| format!("cut short: {e}"))?;
    Ok((Request::decode(kind, &body)?, fds))
}

/// Become the caller's process: a session and process group of its own (the caller's signals go to it
/// and the programs it starts; no controlling terminal, so a `server run` in a terminal never stops an
/// op with SIGTTIN or SIGTTOU for using the caller's terminal from a background group), the caller's
/// environment, working directory, umask and stdio.
fn take_on(request: &Request, fds: &[OwnedFd]) -> Result<(), String> {
    // SAFETY: plain syscalls on this process; the child is single-threaded here, so replacing the
    // environment races with no reader.
    unsafe {
        libc::setsid();
        for (name, _) in std::env::vars_os() {
            std::env::remove_var(name);
        }
        for entry in &request.env {
            let bytes = entry.as_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=').filter(|&eq| eq > 0) {
                std::env::set_var(std::ffi::OsStr::from_bytes(&bytes[..eq]), std::ffi::OsStr::from_bytes(&bytes[eq + 1..]));
            }
        }
        if libc::fchdir(fds[3].as_raw_fd()) != 0 {
            return Err(format!("cannot enter the caller's working directory: {}", std::io::Error::last_os_error()));
        }
        libc::umask(request.umask as libc::mode_t);
        for (target, fd) in fds[..3].iter().enumerate() {
            if libc::dup2(fd.as_raw_fd(), target as RawFd) < 0 {
                return Err(format!("cannot take the caller's descriptor {target}: {}", std::io::Error::last_os_error()));
            }
        }
    }
    Ok(())
}

/// A thread that delivers the signals the client forwards to the op's process group, and ends the op
/// (SIGKILL, as a killed process would end) when the client is gone.
fn watch_client(conn: UnixStream) {
    std::thread::spawn(move || {
        let _ = conn.set_read_timeout(None);
        let mut byte = [0u8];
        loop {
            match (&conn).read(&mut byte) {
                Ok(1) => {
                    // SAFETY: a signal to this process's own group.
                    unsafe { libc::kill(-libc::getpid(), byte[0] as libc::c_int) };
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                _ => {
                    // SAFETY: as above, this process only.
                    unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                }
            }
        }
    });
}

fn status_text(s: Snapshot) -> String {
    // SAFETY: getppid cannot fail.
    let pid = unsafe { libc::getppid() };
    let rss_kib = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("VmRSS:").map(|v| v.trim().trim_end_matches(" kB").trim().to_owned())))
        .and_then(|v| v.parse::<u64>().ok());
    let up = s.started.elapsed().unwrap_or_default().as_secs();
    serde_json::json!({
        "running": true,
        "pid": pid,
        "uptime_secs": up,
        "ops": s.counters.ops.load(Ordering::Relaxed),
        "declined": s.counters.declined.load(Ordering::Relaxed),
        "ops_running": s.running,
        "idle_exit_secs": s.idle.as_secs(),
        "rss_kib": rss_kib,
    })
    .to_string()
}

/// Leave the caller: fork (the parent returns, ending the caller's wait), a new session, `/` as the
/// working directory, stdio on /dev/null. `None` in the process that goes on.
fn detach_from_caller() -> Option<Served> {
    // SAFETY: `server run --detach` is a fresh process with one thread.
    match unsafe { libc::fork() } {
        -1 => Some(Served::Ended(Err(HostError::refused(format!("fork: {}", std::io::Error::last_os_error()))))),
        0 => {
            // SAFETY: plain syscalls on this process.
            unsafe { libc::setsid() };
            let _ = std::env::set_current_dir("/");
            if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
                for target in 0..3 {
                    // SAFETY: dup2 onto this process's stdio.
                    unsafe { libc::dup2(null.as_fd().as_raw_fd(), target) };
                }
            }
            None
        }
        _ => Some(Served::Ended(Ok(()))),
    }
}

/// SIGTERM, SIGINT and SIGHUP, blocked in the server and read from a signalfd by its loop.
struct StopSignals {
    fd: OwnedFd,
}

impl StopSignals {
    fn set() -> libc::sigset_t {
        // SAFETY: sigset manipulation on a local.
        unsafe {
            let mut set = MaybeUninit::<libc::sigset_t>::zeroed().assume_init();
            libc::sigemptyset(&mut set);
            for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
                libc::sigaddset(&mut set, sig);
            }
            set
        }
    }

    fn block() -> std::io::Result<StopSignals> {
        let set = Self::set();
        // SAFETY: blocks the signals in this (single-threaded) process and opens a signalfd for them.
        unsafe {
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(StopSignals { fd: OwnedFd::from_raw_fd(fd) })
        }
    }

    fn drain(&self) {
        let mut info = [0u8; 128];
        while rustix::io::read(&self.fd, &mut info).is_ok_and(|n| n > 0) {}
    }

    /// In a child: the signals as a fresh process has them.
    fn unblock() {
        let set = Self::set();
        // SAFETY: unblocks them in this process.
        unsafe { libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
}
