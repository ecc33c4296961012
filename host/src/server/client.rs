//! The client side: every invocation first offers its op to this user's server of this build, and runs
//! it in-process when there is none to take it. Cheap when there is none: one environment lookup, a
//! `stat` of the executable, a failed `connect`. A missing server is started for the next op (at most
//! once every few seconds), never waited for.

use std::ffi::OsString;
use std::io::{IoSlice, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, SystemTime};

use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use super::SWITCH;
use super::protocol::{FDS, Kind, Reply, Request};
use super::rendezvous::Rendezvous;
use crate::error::{ExitClass, HostError};

/// How long after one client started a server no other starts one (a server that cannot start is not
/// tried again by every op).
const START_BACKOFF: Duration = Duration::from_secs(10);

/// Signals a client passes on to its op, which decides what they do (a `watch` stops cleanly on
/// SIGINT, as in-process); the op's end is then reported as usual.
pub(super) const FORWARDED: [libc::c_int; 6] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT, libc::SIGUSR1, libc::SIGUSR2];

/// What became of an invocation offered to the server.
pub enum Forward {
    /// No server took it: run it in this process.
    InProcess,
    /// The server ran it; exit with this code (its stdout and stderr were written already).
    Answered(u8),
    /// The server took it and ended without saying how it went.
    Lost(HostError),
}

/// Offer `args` (this process's whole argv) to the server of the build whose engine is the file
/// `engine` (which starts one when there is none).
pub fn forward(args: &[OsString], engine: &Path) -> Forward {
    if !super::switched_on(std::env::var_os(SWITCH).as_deref()) || is_server_command(args) {
        return Forward::InProcess;
    }
    let Ok(rendezvous) = Rendezvous::locate(|name| std::env::var_os(name), engine) else {
        return Forward::InProcess;
    };
    let conn = match UnixStream::connect(&rendezvous.socket) {
        Ok(conn) => conn,
        Err(e) => {
            if matches!(e.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused) {
                start_server(&rendezvous, engine);
            }
            return Forward::InProcess;
        }
    };
    let request = Request {
        kind: Kind::Run,
        caller_parent: std::os::unix::process::parent_id(),
        umask: current_umask(),
        args: args.to_vec(),
        env: std::env::vars_os()
            .map(|(k, v)| {
                let mut entry = k.into_vec();
                entry.push(b'=');
                entry.extend(v.into_vec());
                OsString::from_vec(entry)
            })
            .collect(),
    };
    let Ok(cwd) = rustix::fs::open(
        ".",
        rustix::fs::OFlags::PATH | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) else {
        return Forward::InProcess;
    };
    CONN.store(conn.as_raw_fd(), Ordering::Relaxed);
    let previous = pass_on_signals();
    let outcome = exchange(&conn, &request, &cwd);
    restore_signals(&previous);
    CONN.store(-1, Ordering::Relaxed);
    match outcome {
        Exchange::NotTaken => Forward::InProcess,
        Exchange::Ended(Reply::Exited(code)) => Forward::Answered(code),
        Exchange::Ended(Reply::Signalled(sig)) => {
            // Ended as the op ended: by the same signal, else as a shell reports one.
            // SAFETY: default disposition, then the signal to this process.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
                libc::raise(sig);
            }
            Forward::Answered(128u8.wrapping_add(sig as u8))
        }
        Exchange::Ended(other) => Forward::Lost(lost(&format!("an unexpected reply ({other:?})"))),
        Exchange::Broken(why) => Forward::Lost(lost(&why)),
    }
}

fn lost(why: &str) -> HostError {
    HostError::new(
        ExitClass::RUNTIME,
        format!(
            "the resident server took this op and ended without saying how it went ({why}); it may or may not have taken \
             effect. The next op starts a new server (AGMSG_HOST_SERVER=off runs every op in-process)"
        ),
    )
}

enum Exchange {
    /// The server did not take the op (gone before accepting it, or declined it): nothing ran.
    NotTaken,
    Ended(Reply),
    Broken(String),
}

fn exchange(conn: &UnixStream, request: &Request, cwd: &OwnedFd) -> Exchange {
    let bytes = request.encode();
    // SAFETY: descriptors 0, 1 and 2 are borrowed for the call only; a closed one fails the send (EBADF)
    // and the op runs in-process, where it finds them closed as before.
    let stdio: [BorrowedFd<'_>; 3] = unsafe { [BorrowedFd::borrow_raw(0), BorrowedFd::borrow_raw(1), BorrowedFd::borrow_raw(2)] };
    let fds: [BorrowedFd<'_>; FDS] = [stdio[0], stdio[1], stdio[2], cwd.as_fd()];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !control.push(SendAncillaryMessage::ScmRights(&fds)) {
        return Exchange::NotTaken;
    }
    let sent = match rustix::net::sendmsg(conn, &[IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL) {
        Ok(n) => n,
        Err(_) => return Exchange::NotTaken,
    };
    if (&*conn).write_all(&bytes[sent..]).is_err() {
        return Exchange::NotTaken;
    }
    let mut reader = Replies(conn);
    match Reply::read_from(&mut reader) {
        Ok(Some(Reply::Accepted)) => {}
        Ok(Some(Reply::Declined(why))) => {
            crate::log::host_log::debug(&format!("server: declined: {why}"));
            return Exchange::NotTaken;
        }
        // Gone before it took the op (idle exit, a refused peer): nothing ran.
        Ok(None) | Err(_) => return Exchange::NotTaken,
        Ok(Some(other)) => return Exchange::Broken(format!("{other:?} before the op was taken")),
    }
    // The op's own word on its code (its process has let go of everything of the caller's by then), or
    // the server's on how the process ended without one (a signal).
    loop {
        match Reply::read_from(&mut reader) {
            Ok(Some(end @ (Reply::Exited(_) | Reply::Signalled(_)))) => return Exchange::Ended(end),
            Ok(Some(Reply::OpEnded(code))) => return Exchange::Ended(Reply::Exited(code)),
            Ok(Some(other)) => return Exchange::Broken(format!("{other:?} while the op ran")),
            Ok(None) => return Exchange::Broken("its connection closed".into()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Exchange::Broken(e.to_string()),
        }
    }
}

/// The server's replies as this client waits for them: each read waits in `poll` for the connection
/// to be readable first. A read blocked on the socket itself is woken by every event on it, the
/// server taking in the request among them (room to write again), which cost the op a context switch
/// of this process as its server began it; `poll` wakes for data only.
struct Replies<'a>(&'a UnixStream);

impl std::io::Read for Replies<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use rustix::event::{PollFd, PollFlags, poll};
        let mut readable = [PollFd::new(self.0, PollFlags::IN)];
        // A signal the client passes on interrupts the wait, which goes on (as a read restarts).
        loop {
            match poll(&mut readable, None) {
                Ok(_) => break,
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
        std::io::Read::read(&mut &*self.0, buf)
    }
}

/// The connection a signal handler writes to (-1: none).
static CONN: AtomicI32 = AtomicI32::new(-1);

extern "C" fn pass_on(sig: libc::c_int) {
    let fd = CONN.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = sig as u8;
        // SAFETY: write(2) is async-signal-safe; a failure leaves the op to end on the client's exit.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
    }
}

fn pass_on_signals() -> Vec<(libc::c_int, libc::sighandler_t)> {
    FORWARDED
        .iter()
        // SAFETY: installing a handler that only writes one byte; the previous one is restored after.
        .map(|&sig| (sig, unsafe { libc::signal(sig, pass_on as *const () as libc::sighandler_t) }))
        .collect()
}

fn restore_signals(previous: &[(libc::c_int, libc::sighandler_t)]) {
    for &(sig, handler) in previous {
        // SAFETY: puts back what was there.
        unsafe { libc::signal(sig, handler) };
    }
}

fn current_umask() -> u32 {
    // SAFETY: umask cannot fail; the second call puts the mask back.
    unsafe {
        let mask = libc::umask(0o077);
        libc::umask(mask);
        mask as u32
    }
}

/// `agmsg-host server …` itself is never forwarded (nor anything before a subcommand that is not
/// the global options).
fn is_server_command(args: &[OsString]) -> bool {
    let mut rest = args.iter().skip(1);
    while let Some(arg) = rest.next() {
        match arg.to_str() {
            Some("--store" | "--driver") => {
                rest.next();
            }
            Some(a) if a.starts_with("--store=") || a.starts_with("--driver=") => {}
            Some(a) => return a == "server",
            None => return false,
        }
    }
    false
}

/// Start a server for the next op, unless one was started moments ago: `agmsg-host-engine server run
/// --detach`, which leaves at once (a thread reaps it).
fn start_server(rendezvous: &Rendezvous, engine: &Path) {
    let recent = std::fs::metadata(&rendezvous.started)
        .and_then(|m| m.modified())
        .is_ok_and(|at| SystemTime::now().duration_since(at).is_ok_and(|ago| ago < START_BACKOFF));
    if recent {
        return;
    }
    let touched = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(&rendezvous.started);
    if touched.is_err() {
        return;
    }
    let mut command = std::process::Command::new(engine);
    command
        .args(["server", "run", "--detach"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // The server must not take this process's group: a terminal's Ctrl-C is for the caller.
    command.process_group(0);
    if let Ok(mut started) = command.spawn() {
        std::thread::spawn(move || started.wait());
    }
}

/// What a server says of itself.
pub struct Status {
    pub socket: std::path::PathBuf,
    /// Its JSON status, `None` when none runs.
    pub json: Option<String>,
}

/// Ask this user's server of this build how it is.
pub fn status() -> Result<Status, HostError> {
    ask(Kind::Status)
}

/// Tell this user's server of this build to stop (it finishes the ops running).
pub fn stop() -> Result<Status, HostError> {
    ask(Kind::Stop)
}

fn ask(kind: Kind) -> Result<Status, HostError> {
    let rendezvous = Rendezvous::locate(|name| std::env::var_os(name), Path::new(super::OWN_FILE))
        .map_err(|why| HostError::refused(format!("no server directory: {why}")))?;
    let socket = rendezvous.socket.clone();
    let Ok(mut conn) = UnixStream::connect(&rendezvous.socket) else { return Ok(Status { socket, json: None }) };
    let request = Request { kind, caller_parent: 0, umask: 0, args: Vec::new(), env: Vec::new() };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    conn.write_all(&request.encode()).map_err(|e| HostError::refused(format!("{}: {e}", socket.display())))?;
    match Reply::read_from(&mut conn) {
        Ok(Some(Reply::Status(json))) => Ok(Status { socket, json: Some(json) }),
        Ok(None) => Ok(Status { socket, json: None }),
        Ok(Some(other)) => Err(HostError::refused(format!("the server answered {other:?}"))),
        Err(e) => Err(HostError::refused(format!("{}: {e}", socket.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_server_command_stays_in_process() {
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        assert!(is_server_command(&args(&["agmsg-host", "server", "status"])));
        assert!(is_server_command(&args(&["agmsg-host", "--store", "/s", "server", "stop"])));
        assert!(is_server_command(&args(&["agmsg-host", "--driver=x", "server"])));
        assert!(!is_server_command(&args(&["agmsg-host", "send", "server", "a", "b"])));
        assert!(!is_server_command(&args(&["agmsg-host", "--store", "server", "inbox"])));
        assert!(!is_server_command(&args(&["agmsg-host"])));
    }
}
