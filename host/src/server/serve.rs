//! The server: made ready once (the engine, the linkers, the bundled drivers' machine code), then one
//! loop that accepts a connection and hands it to the spare waiting for it (or, with none ready, forks
//! a child for it), and reports how each op's process ended. The loop is one thread and never reads
//! from a client (the child does), so no client can hold it; it polls its listener, a signalfd
//! (SIGTERM, SIGINT, SIGHUP: stop accepting, let the running ops finish, leave), the spare's pidfd and
//! a pidfd per running op. The child takes the caller's descriptors, limits, environment, working
//! directory and umask, and returns the caller's argv to the command line, which runs it as any
//! invocation.
//!
//! A spare ([`Spare`]) is such a child forked before its request: while it waits it makes ready the
//! driver instances of the last ops that ended well, one on a store and one on a terminal (each child
//! reports its request on a pipe once its op has, with the axes whose drivers it ran), so the op it is
//! handed may start warm. It is forked from the single-threaded server like any child, once no op is
//! at work; its warm-up starts its own threads, in its own process. It is handed an op (never a status
//! or stop request: the server peeks at the header) only once it has said it is ready, so no warm-up
//! holds an op. A ready spare with no op waiting for it is lent the listener ([`accept_op`]): it
//! accepts the next op itself, so that the op's client wakes it and not the server first, hands a
//! status or stop request back, and gives the listener back as it takes an op.

use std::ffi::OsString;
use std::io::{IoSliceMut, Read};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};

use super::protocol::{FDS, HEADER, Kind, REQUEST_MAX, Reply, Request};
use super::rendezvous::Rendezvous;
use super::{IDLE, peer};
use crate::error::HostError;

/// How long an idle server lives on by default.
const IDLE_DEFAULT: Duration = Duration::from_secs(300);
/// How long the server waits for the request of a connection whose request has not arrived, before it
/// takes it for an op's (the client sends it right after connecting; a status request must not take the
/// spare).
const PEEK_WAIT: Duration = Duration::from_millis(50);
/// How long an op that arrives while the spare still warms waits for it before a child is forked for
/// it: a warm-up done by then serves the op warm (a child forked instead would do the same work cold,
/// from its start), and one that is not (a slow driver, or one that makes its warm-up sleep) holds the
/// op no longer than this. One op waits at a time; the next are forked for.
const SPARE_WAIT: Duration = Duration::from_millis(10);
/// How long a child waits for its request's bytes.
const REQUEST_WAIT: Duration = Duration::from_secs(5);
/// How many ops one process serves before it leaves for a fresh one (what it keeps between ops is
/// bounded anyway: one instance per axis; this bounds what the allocator keeps of them).
const OPS_PER_PROCESS: u32 = 1000;

/// What `serve` returned to this process.
pub enum Served {
    /// This process is a child forked for a request: run these arguments as the command line.
    Child(Vec<OsString>),
    /// This process is a spare, forked ahead of the next request: make ready for the server's last ops
    /// ([`Spare::next_warm_up`]), then [`Spare::wait`] for the request.
    Spare(Spare),
    /// The server (or a child that answered a status or stop request) is done.
    Ended(Result<(), HostError>),
}

/// What the server knows of itself, handed to each child (which answers `server status`).
#[derive(Clone, Copy)]
struct Snapshot {
    started: std::time::SystemTime,
    running: usize,
    /// The spare's state when this child was forked: `ready`, `warming` or `none`.
    spare: &'static str,
    idle: Duration,
    counters: &'static Counters,
}

/// Counts the children keep, in memory shared by the server and every child it forks.
struct Counters {
    /// Ops taken (run by a child).
    ops: AtomicU64,
    /// Ops declined (the caller ran them in-process).
    declined: AtomicU64,
    /// Ops that ran on a driver instance a spare had made ready.
    warm: AtomicU64,
}

impl Counters {
    /// Zeroed counters in a shared anonymous mapping, for the process's life.
    fn shared() -> std::io::Result<&'static Counters> {
        // SAFETY: a fresh anonymous mapping, never unmapped; all-zero bytes are valid AtomicU64s,
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
    let rendezvous = match Rendezvous::locate(|name| std::env::var_os(name), std::path::Path::new(super::OWN_FILE)) {
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
    match serve_loop(
        listener,
        &signals,
        lock,
        Snapshot { started: std::time::SystemTime::now(), running: 0, spare: "none", idle, counters },
    ) {
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

/// A running op: its child, the pidfd the loop polls, the client's connection its end is reported on,
/// and the pipe on which the child reports its request once the op has ended well.
struct Running {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    conn: UnixStream,
    report: OwnedFd,
    /// Whether the child has said, before exiting, that its op is done (see [`Running::take_report`]).
    reported: bool,
    /// The channel of a child that was a spare: once its op is done it may say it is ready again, to be
    /// the next spare with its instances still warm ([`serve_again`]).
    chan: Option<UnixStream>,
    /// It said so.
    ready_again: bool,
}

impl Running {
    /// What the child reported on its pipe, once it has (its op is done): the request of an op that
    /// ended well on a store or a terminal, else nothing to warm for.
    fn take_report(&mut self) -> Option<Report> {
        let mut bytes = Vec::new();
        let _ = (&std::fs::File::from(self.report.try_clone().ok()?)).take((1 + HEADER + REQUEST_MAX) as u64).read_to_end(&mut bytes);
        self.reported = true;
        Report::parse(&bytes)
    }
}

/// What a child reports once its op ended well: the axes ([`crate::runtime::warm::WARMED`]) whose
/// drivers it ran, as bits of one leading byte, and its request as it arrived. A lone zero byte says
/// there is nothing to warm for.
struct Report {
    axes: u8,
    request: Vec<u8>,
}

impl Report {
    fn parse(bytes: &[u8]) -> Option<Report> {
        let (&axes, request) = bytes.split_first()?;
        if axes == 0 || axes & !crate::runtime::warm::WARMED_BITS != 0 || request.len() <= HEADER {
            return None;
        }
        Some(Report { axes, request: request.to_vec() })
    }
}

/// The request of the last op that ended well, per warmed axis: what the next spare warms for.
#[derive(Default)]
struct LastOps([Option<Vec<u8>>; crate::runtime::warm::WARMED.len()]);

impl LastOps {
    fn remember(&mut self, report: Report) {
        for (i, slot) in self.0.iter_mut().enumerate() {
            if report.axes & 1 << i != 0 {
                *slot = Some(report.request.clone());
            }
        }
    }

    fn any(&self) -> bool {
        self.0.iter().any(Option::is_some)
    }

    /// The distinct requests to warm for (an op that ran drivers of two axes is warmed for once).
    fn requests(&self) -> Vec<Vec<u8>> {
        let mut requests: Vec<Vec<u8>> = Vec::new();
        for request in self.0.iter().flatten() {
            if !requests.contains(request) {
                requests.push(request.clone());
            }
        }
        requests
    }
}

/// The server's side of a spare: its process, and the channel a request's connection is handed on.
struct SpareHandle {
    pid: libc::pid_t,
    pidfd: OwnedFd,
    chan: UnixStream,
    report: OwnedFd,
    /// Whether it was given an op to warm for.
    warms: bool,
    /// Whether it has said it is ready (its warm-up done): only then is it handed a request, so that
    /// a warm-up that takes its driver's whole deadline holds no op.
    ready: bool,
    /// Whether it holds the listener ([`SpareHandle::lend_listener`]): it accepts the next op itself,
    /// and the server neither accepts nor hands it anything until it says it took one.
    owns_listener: bool,
}

impl SpareHandle {
    /// Lend the ready spare the listener: the next op's client then wakes the spare directly, not the
    /// server first (one process and one wake-up fewer on every op's path). `false`: it is gone.
    fn lend_listener(&mut self, listener: &UnixListener) -> bool {
        self.owns_listener = send_with_fd(&self.chan, &LISTENER_LENT.to_le_bytes(), listener.as_fd());
        self.owns_listener
    }

    /// The spare that took the op on `conn` from the listener, as a running op.
    fn took(self, conn: UnixStream) -> Running {
        Running { pid: self.pid, pidfd: self.pidfd, conn, report: self.report, reported: false, chan: Some(self.chan), ready_again: false }
    }

    /// Hand `conn` to the spare (with how many ops are running, for `server status`); the connection
    /// back when the spare cannot take it (it is gone).
    fn hand(self, conn: UnixStream, running: usize) -> Result<Running, (UnixStream, SpareHandle)> {
        let count = (running as u32).min(LISTENER_LENT - 1).to_le_bytes();
        if !send_with_fd(&self.chan, &count, conn.as_fd()) {
            return Err((conn, self));
        }
        Ok(self.took(conn))
    }
}

/// What the server writes on a spare's channel with the listener (with a connection it writes the
/// count of running ops, always less).
const LISTENER_LENT: u32 = u32::MAX;
/// What a spare that holds the listener writes on its channel with a connection it accepted: it took
/// it (an op), or hands it to the server (a status or stop request).
const TOOK: u8 = b'T';
const FOR_SERVER: u8 = b'S';

/// Send `bytes` with descriptor `fd` on `chan`, all of them; whether it was sent.
fn send_with_fd(chan: &UnixStream, bytes: &[u8], fd: BorrowedFd<'_>) -> bool {
    let fds = [fd];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = rustix::net::SendAncillaryBuffer::new(&mut space);
    control.push(rustix::net::SendAncillaryMessage::ScmRights(&fds))
        && rustix::net::sendmsg(chan, &[std::io::IoSlice::new(bytes)], &mut control, rustix::net::SendFlags::NOSIGNAL)
            .is_ok_and(|n| n == bytes.len())
}

/// Receive `N` bytes and the descriptor sent with them on `chan` (blocking); `None` at its end, on an
/// error, or when no descriptor came.
fn receive_with_fd<const N: usize>(chan: &UnixStream) -> Option<([u8; N], OwnedFd)> {
    let mut bytes = [0u8; N];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(chan, &mut [IoSliceMut::new(&mut bytes)], &mut control, RecvFlags::CMSG_CLOEXEC).ok()?;
    let fd = control.drain().find_map(|message| match message {
        RecvAncillaryMessage::ScmRights(mut fds) => fds.next(),
        _ => None,
    })?;
    (got.bytes == N).then_some((bytes, fd))
}

/// A new process, forked from this single-threaded one: `None` in the child; in the parent, its pid and
/// a pidfd to poll (none on a kernel before 5.3).
fn fork_process() -> std::io::Result<Option<(libc::pid_t, Option<OwnedFd>)>> {
    // A child forked beside another thread may inherit a lock that thread held: the server should have
    // none (no engine thread runs until a driver call, and the server makes none); if it has, it forks
    // no more (its clients run their ops in-process).
    if threads() != Some(1) {
        return Err(std::io::Error::other("the server has more than one thread"));
    }
    // SAFETY: this process has one thread (checked above), so the child may go on as a normal process.
    match unsafe { libc::fork() } {
        -1 => Err(std::io::Error::last_os_error()),
        0 => Ok(None),
        pid => {
            // SAFETY: the pidfd_open syscall; a non-negative result is a new descriptor we own.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
            // SAFETY: as above.
            Ok(Some((pid, (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))))
        }
    }
}

/// A pipe for a child's report: (read end, write end), both close-on-exec, the read end non-blocking.
fn report_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = std::io::pipe()?;
    let (read, write) = (OwnedFd::from(read), OwnedFd::from(write));
    rustix::fs::fcntl_setfl(&read, rustix::fs::OFlags::NONBLOCK)?;
    Ok((read, write))
}

fn serve_loop(listener: UnixListener, signals: &StopSignals, lock: std::fs::File, mut snapshot: Snapshot) -> Loop {
    let mut listener = Some(listener);
    let mut running: Vec<Running> = Vec::new();
    let mut spare: Option<SpareHandle> = None;
    // Accepted connections whose request has not arrived yet, each with when to stop waiting for it.
    let mut pending: Vec<(UnixStream, Instant)> = Vec::new();
    // An op waiting for the spare to be ready, until when (`SPARE_WAIT`).
    let mut for_spare: Option<(UnixStream, Instant)> = None;
    // The requests of the last ops that ended well, per axis: what the next spare warms for.
    let mut last = LastOps::default();
    // Off for good once a spare cannot be watched (no pidfd): requests are then forked for as they come.
    let mut spares = true;
    let mut idle_since = Instant::now();
    loop {
        if listener.is_none() && running.is_empty() && for_spare.is_none() {
            return Loop::Ended(Ok(()));
        }
        let mut timeout = if running.is_empty() && pending.is_empty() && for_spare.is_none() {
            match snapshot.idle.checked_sub(idle_since.elapsed()) {
                Some(left) if !left.is_zero() => left.as_millis().min(i32::MAX as u128) as i32,
                _ => return Loop::Ended(Ok(())),
            }
        } else {
            -1
        };
        if let Some(first) = pending.iter().chain(&for_spare).map(|(_, until)| *until).min() {
            let left = first.saturating_duration_since(Instant::now()).as_millis().min(i32::MAX as u128) as i32;
            timeout = if timeout < 0 { left } else { timeout.min(left) };
        }
        let mut polled: Vec<libc::pollfd> = Vec::with_capacity(4 + pending.len() + 2 * running.len());
        polled.push(libc::pollfd { fd: signals.fd.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        // A spare that holds the listener accepts; the server listens only otherwise.
        let accepting = listener.as_ref().filter(|_| !spare.as_ref().is_some_and(|s| s.owns_listener));
        polled.push(libc::pollfd { fd: accepting.map_or(-1, |l| l.as_raw_fd()), events: libc::POLLIN, revents: 0 });
        polled.push(libc::pollfd { fd: spare.as_ref().map_or(-1, |s| s.pidfd.as_raw_fd()), events: libc::POLLIN, revents: 0 });
        // The spare's channel: for its "ready", then (holding the listener) for a connection it accepted.
        let waiting = spare.as_ref().filter(|s| !s.ready || s.owns_listener).map_or(-1, |s| s.chan.as_raw_fd());
        polled.push(libc::pollfd { fd: waiting, events: libc::POLLIN, revents: 0 });
        let pending_at = polled.len();
        polled.extend(pending.iter().map(|(c, _)| libc::pollfd { fd: c.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        let ends_at = polled.len();
        polled.extend(running.iter().map(|r| libc::pollfd { fd: r.pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 }));
        let reports = polled.len();
        polled.extend(running.iter().map(|r| libc::pollfd {
            fd: if r.reported { -1 } else { r.report.as_raw_fd() },
            events: libc::POLLIN,
            revents: 0,
        }));
        let agains = polled.len();
        polled.extend(running.iter().map(|r| libc::pollfd {
            fd: r.chan.as_ref().filter(|_| r.reported).map_or(-1, |c| c.as_raw_fd()),
            events: libc::POLLIN,
            revents: 0,
        }));
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
            // Stop accepting; the running ops finish and are reported; the spare is told none will come.
            listener = None;
            spare = None;
        }
        // Connections the spare holding the listener accepted and hands back (status and stop
        // requests), looked at below with those the server accepted. Read before its end: a spare that
        // took an op it ended at once (help, a usage error) has said so on the channel first.
        let mut handed_back: Vec<UnixStream> = Vec::new();
        if polled[3].revents != 0
            && let Some(waiting) = spare.take()
        {
            if !waiting.owns_listener {
                // One byte: ready (an end instead: the spare is gone, which its pidfd reports).
                let mut byte = [0u8];
                let ready = rustix::io::read(&waiting.chan, &mut byte).is_ok_and(|n| n == 1);
                spare = Some(SpareHandle { ready, ..waiting });
            } else {
                match receive_with_fd::<1>(&waiting.chan) {
                    // It took an op: it runs it, reported as any child's.
                    Some(([TOOK], conn)) => running.push(waiting.took(UnixStream::from(conn))),
                    Some(([FOR_SERVER], conn)) => {
                        handed_back.push(UnixStream::from(conn));
                        spare = Some(waiting);
                    }
                    // Its end (gone, which its pidfd reports) or a word it has no reason to say: no
                    // longer lent the listener, and handed nothing.
                    _ => spare = Some(SpareHandle { owns_listener: false, ready: false, ..waiting }),
                }
            }
        }
        if polled[2].revents != 0
            && let Some(gone) = spare.take()
        {
            // A spare that ended before any request (its warm-up failed hard): reaped, and the next one
            // warms for nothing rather than for what may have ended this one.
            reap(gone.pid);
            last = LastOps::default();
        }
        // Ops that reported (before their process exits): what the next spare warms for.
        for (i, p) in polled[reports..agains].iter().enumerate() {
            if p.revents & libc::POLLIN != 0
                && let Some(report) = running[i].take_report()
            {
                last.remember(report);
            }
        }
        // Children whose op is done and that say they are ready again (one byte; an end instead: it
        // leaves, which its pidfd reports).
        for (i, p) in polled[agains..].iter().enumerate() {
            if p.revents != 0
                && let Some(chan) = running[i].chan.take()
            {
                let mut byte = [0u8];
                if rustix::io::read(&chan, &mut byte).is_ok_and(|n| n == 1) {
                    running[i].chan = Some(chan);
                    running[i].ready_again = true;
                }
            }
        }
        // Ended children next, so that a pidfd's index still matches `running`.
        for (i, p) in polled[ends_at..reports].iter().enumerate().rev() {
            if p.revents != 0 {
                let ended = running.swap_remove(i);
                if let Some(report) = report_end(ended) {
                    last.remember(report);
                }
                if running.is_empty() {
                    idle_since = Instant::now();
                }
            }
        }
        // A child ready again is the next spare, already warm, if there is none; else its channel is
        // closed and it leaves. Its op's client had its answer from it.
        while let Some(i) = running.iter().position(|r| r.ready_again) {
            let again = running.swap_remove(i);
            match again.chan {
                Some(chan) if spare.is_none() && listener.is_some() => {
                    spare = Some(SpareHandle {
                        pid: again.pid,
                        pidfd: again.pidfd,
                        chan,
                        report: again.report,
                        warms: true,
                        ready: true,
                        owns_listener: false,
                    });
                }
                _ => running.push(Running { chan: None, ready_again: false, ..again }),
            }
            if running.is_empty() {
                idle_since = Instant::now();
            }
        }
        // A spare that warms for nothing (made before any op ended) makes way for one that warms for
        // the op that now has; it is idle, so it ends at once. Not one lent the listener, which may be
        // taking an op this moment: it serves that op, then is warm for it.
        if last.any()
            && let Some(cold) = spare.take_if(|s| !s.warms && !s.owns_listener)
        {
            drop(cold.chan);
            reap(cold.pid);
        }
        // A spare is forked while no op is still at work (its warm-up then takes no CPU from one, and it
        // warms for the latest op) and no child that was a spare may become it again; an op that
        // arrives with none ready gets a child of its own.
        if listener.is_some() && spares && spare.is_none() && running.iter().all(|r| r.reported && r.chan.is_none()) {
            snapshot.running = running.len();
            match fork_spare(&last, snapshot) {
                Err(_) | Ok(Forked::Server(None)) => spares = false,
                Ok(Forked::Server(Some(handle))) => spare = Some(handle),
                Ok(Forked::Spare(this)) => {
                    // The spare: nothing of the server's loop is its own.
                    drop((listener, running, lock, pending, for_spare));
                    return Loop::Child(Served::Spare(this));
                }
            }
        }
        // Connections whose request has arrived (or waited long enough for it), in order, each with
        // whether it has waited for the spare already: first the op that did, once the spare is ready
        // or gone or the wait is out.
        let mut arrived: Vec<(UnixStream, Option<Kind>, bool)> = Vec::new();
        if let Some((conn, _)) = for_spare.take_if(|(_, until)| spare.as_ref().is_none_or(|s| s.ready) || *until <= Instant::now()) {
            arrived.push((conn, Some(Kind::Run), true));
        }
        for (i, p) in polled[pending_at..ends_at].iter().enumerate().rev() {
            if p.revents != 0 || pending[i].1 <= Instant::now() {
                let (conn, _) = pending.swap_remove(i);
                let kind = peek_kind(&conn);
                arrived.push((conn, kind, false));
            }
        }
        for conn in handed_back {
            let kind = peek_kind(&conn);
            arrived.push((conn, kind, false));
        }
        if polled[1].revents != 0
            && let Some(l) = listener.as_ref().filter(|_| !spare.as_ref().is_some_and(|s| s.owns_listener))
        {
            while let Ok((conn, _)) = l.accept() {
                if !same_user(&conn) {
                    continue;
                }
                match peek_kind(&conn) {
                    Some(kind) => arrived.push((conn, Some(kind), false)),
                    // Its request not there yet (the client sends it right after connecting): looked
                    // at again when it is, or after a moment.
                    None => pending.push((conn, Instant::now() + PEEK_WAIT)),
                }
            }
        }
        for (conn, kind, waited) in arrived {
            // A status or stop request leaves the spare for an op.
            let op = kind.is_none_or(|kind| kind == Kind::Run);
            if op && !waited && for_spare.is_none() && spare.as_ref().is_some_and(|s| !s.ready && s.warms) {
                for_spare = Some((conn, Instant::now() + SPARE_WAIT));
                continue;
            }
            // A spare that holds the listener may be taking another op this moment: this one gets a
            // child of its own.
            let conn = match spare.take_if(|s| s.ready && !s.owns_listener && op) {
                None => conn,
                Some(ready) => match ready.hand(conn, running.len()) {
                    Ok(taken) => {
                        running.push(taken);
                        continue;
                    }
                    Err((conn, gone)) => {
                        drop(gone.chan);
                        reap(gone.pid);
                        conn
                    }
                },
            };
            // No spare ready (none, or still warming): a child of its own, forked now.
            let Ok((report, reporter)) = report_pipe() else { continue };
            snapshot.running = running.len();
            snapshot.spare = match &spare {
                Some(s) if s.ready => "ready",
                Some(_) => "warming",
                None => "none",
            };
            match fork_process() {
                Ok(None) => {
                    drop((listener, running, lock, spare, report, pending, for_spare));
                    return Loop::Child(child(conn, snapshot, reporter, None));
                }
                Err(_) => {} // the client sees its connection close before "accepted": it runs the op itself
                Ok(Some((pid, pidfd))) => match pidfd {
                    Some(pidfd) => running.push(Running { pid, pidfd, conn, report, reported: false, chan: None, ready_again: false }),
                    // Not watchable (a kernel before 5.3): wait for it here rather than lose it.
                    None => {
                        let null = OwnedFd::from(std::fs::File::open("/dev/null").expect("/dev/null"));
                        report_end(Running { pid, pidfd: null, conn, report, reported: false, chan: None, ready_again: false });
                    }
                },
            }
        }
        // A ready spare with no op waiting for it is lent the listener.
        if for_spare.is_none()
            && let Some(l) = listener.as_ref()
            && let Some(ready) = spare.as_mut().filter(|s| s.ready && !s.owns_listener)
            && !ready.lend_listener(l)
        {
            // Gone: its pidfd reports it.
            ready.ready = false;
        }
    }
}

/// The kind of the request on `conn`, if its header has arrived (peeked: nothing is read, and nothing
/// waited for).
fn peek_kind(conn: &UnixStream) -> Option<Kind> {
    let mut header = [0u8; HEADER];
    let got = rustix::net::recv(conn, &mut header, RecvFlags::PEEK | RecvFlags::DONTWAIT).ok()?;
    (got.0 == HEADER).then(|| Request::header(&header).ok().map(|(kind, _)| kind)).flatten()
}

/// Which side of [`fork_spare`] this process is on.
enum Forked {
    Spare(Spare),
    /// The server, with the spare's handle (none when it cannot be watched: it is left to end on its
    /// own, and no other is made).
    Server(Option<SpareHandle>),
}

/// Fork a spare that will warm for `last`.
fn fork_spare(last: &LastOps, snapshot: Snapshot) -> std::io::Result<Forked> {
    let (report, reporter) = report_pipe()?;
    let (chan, spare_end) = UnixStream::pair()?;
    Ok(match fork_process()? {
        None => {
            drop((report, chan));
            StopSignals::unblock();
            crate::runtime::warm::enable();
            Forked::Spare(Spare { chan: spare_end, report: reporter, last: last.requests(), snapshot, served: 0 })
        }
        Some((pid, Some(pidfd))) => {
            Forked::Server(Some(SpareHandle { pid, pidfd, chan, report, warms: last.any(), ready: false, owns_listener: false }))
        }
        Some((_, None)) => Forked::Server(None),
    })
}

/// Wait for a child that ended before it was handed anything (a spare).
fn reap(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: waitpid on our own child.
    unsafe { libc::waitpid(pid, &mut status, 0) };
}

/// Whether the peer on `conn` is this user (its socket credentials).
fn same_user(conn: &UnixStream) -> bool {
    rustix::net::sockopt::socket_peercred(conn).is_ok_and(|cred| cred.uid == rustix::process::geteuid())
}

/// Wait for a child that ended and tell its client how; what it reported, if it ended well after an op
/// worth warming for.
fn report_end(mut ended: Running) -> Option<Report> {
    let mut status = 0;
    // SAFETY: waitpid on our own child, writing its status into `status`.
    let reaped = unsafe { libc::waitpid(ended.pid, &mut status, 0) };
    let reply = if reaped != ended.pid {
        return None; // already reaped or not ours: the client sees the connection close without an end
    } else if libc::WIFEXITED(status) {
        Reply::Exited(libc::WEXITSTATUS(status) as u8)
    } else {
        Reply::Signalled(libc::WTERMSIG(status))
    };
    let _ = ended.conn.set_nonblocking(false);
    let _ = ended.conn.set_write_timeout(Some(Duration::from_secs(1)));
    let _ = reply.write_to(&mut ended.conn);
    // The child has exited: whatever it wrote (if it has not been read) is in the pipe.
    if ended.reported || reply != Reply::Exited(0) {
        return None;
    }
    ended.take_report()
}

/// In a child forked for `conn` (or a spare handed it, with its channel and how many ops it served
/// before): read the request, and either answer it (status, stop, declined) or take on the caller's
/// state and hand back its argv.
fn child(conn: UnixStream, snapshot: Snapshot, report: OwnedFd, spare: Option<(UnixStream, u32)>) -> Served {
    StopSignals::unblock();
    // Said before any answer to the client, so that the server knows it before the client's next op.
    let report_fd = report.as_raw_fd();
    // SAFETY: `report` is open for the life of this process (moved into OP_END at most).
    let done = || done_with_nothing_to_warm(unsafe { BorrowedFd::borrow_raw(report_fd) });
    let ended = |r: Result<(), String>| {
        done();
        Served::Ended(r.map_err(HostError::refused))
    };
    let answer = |reply: Reply| {
        done();
        Served::Ended(reply.write_to(&mut &conn).map_err(|e| HostError::refused(e.to_string())))
    };
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_read_timeout(Some(REQUEST_WAIT));
    let (request, fds) = match read_request(&conn) {
        Ok(r) => r,
        Err(why) => return ended(Err(format!("a request: {why}"))),
    };
    match request.kind {
        Kind::Status => return answer(Reply::Status(status_text(snapshot))),
        Kind::Stop => {
            // SAFETY: a signal to our parent, the server.
            unsafe { libc::kill(libc::getppid(), libc::SIGTERM) };
            return answer(Reply::Status("stopping".into()));
        }
        Kind::Run => {}
    }
    // This process's limits before the caller's: what they are changed from, and (a child that was a
    // spare) what it may serve another caller with once this one's op is done (see `serve_again`).
    let limits_before = peer::limits_as_forked();
    let own_limits = spare.as_ref().and(limits_before.cloned());
    let caller = match rustix::net::sockopt::socket_peercred(&conn) {
        Ok(cred) => cred.pid.as_raw_nonzero().get() as u32,
        Err(e) => return ended(Err(format!("peer credentials: {e}"))),
    };
    let admitted = if fds.len() != FDS {
        Err("the caller's descriptors did not arrive".to_owned())
    } else {
        peer::admit(caller).and_then(|()| peer::take_limits(caller, limits_before))
    };
    if let Err(why) = admitted {
        snapshot.counters.declined.fetch_add(1, Ordering::Relaxed);
        crate::log::host_log::debug(&format!("server: declined: {why}"));
        return answer(Reply::Declined(why));
    }
    if let Err(e) = take_on(&request, &fds) {
        return answer(Reply::Declined(e));
    }
    drop(fds);
    // What the process read of its own environment before the fork is the server's: read it again.
    crate::log::reread_level();
    super::CALLER_PARENT.store(request.caller_parent, std::sync::atomic::Ordering::Relaxed);
    if let Ok(mut arg0) = super::CALLER_ARG0.lock() {
        *arg0 = request.args.first().cloned();
    }
    if Reply::Accepted.write_to(&mut &conn).is_err() {
        return ended(Ok(()));
    }
    snapshot.counters.ops.fetch_add(1, Ordering::Relaxed);
    let reporter = match conn.try_clone() {
        Ok(reporter) => reporter,
        Err(e) => return ended(Err(format!("the connection: {e}"))),
    };
    let op = OPS_BEGUN.fetch_add(1, Ordering::SeqCst) + 1;
    let end = OpEnd {
        conn: reporter,
        report,
        request: request.encode(),
        snapshot,
        threads: spare.as_ref().and_then(|_| threads()),
        spare,
        own_limits,
    };
    if let Ok(mut slot) = OP_END.lock() {
        *slot = Some(end);
    }
    watch_client(conn, op);
    Served::Child(request.args)
}

/// How many threads this process has, if it can tell: the link count of `/proc/self/task` where it
/// counts them (one `stat`; listing the directory was 5% of a warm op's CPU, `/proc/self/status`
/// more), else the directory's entries.
fn threads() -> Option<usize> {
    if task_links_count_threads() { threads_linked() } else { threads_listed() }
}

fn threads_listed() -> Option<usize> {
    Some(std::fs::read_dir("/proc/self/task").ok()?.count())
}

/// Linux makes the link count of a process's task directory two more than its threads.
fn threads_linked() -> Option<usize> {
    Some(rustix::fs::stat("/proc/self/task").ok()?.st_nlink.checked_sub(2)? as usize)
}

/// Whether this system's `/proc` keeps that rule (another kernel, or a sandbox's `/proc`, may not):
/// seen to once, by the process's first look, which takes a few tries (a thread that starts or ends
/// between the two counts makes them differ once, a `/proc` without the rule every time).
fn task_links_count_threads() -> bool {
    static KEPT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KEPT.get_or_init(|| (0..3).any(|_| threads_linked().is_some_and(|n| n > 0 && Some(n) == threads_listed())))
}

/// What a child does when its op has ended ([`op_ended`]): its connection to its client, and its
/// report to the server (the request, for the next spare's warm-up); and what it needs to serve again
/// ([`serve_again`]): the channel and count of the spare it was, its limits before the caller's, and
/// its threads as the op started.
struct OpEnd {
    conn: UnixStream,
    report: OwnedFd,
    request: Vec<u8>,
    snapshot: Snapshot,
    spare: Option<(UnixStream, u32)>,
    own_limits: Option<peer::ProcessLimits>,
    threads: Option<usize>,
}

static OP_END: std::sync::Mutex<Option<OpEnd>> = std::sync::Mutex::new(None);

/// In a server's child, once the op has returned `code` (everything it held dropped: the store, its
/// locks, the driver): report an op that ended well on a store to the server (whose next spare makes
/// ready for one like it), give back the caller's stdin, stdout and stderr (flushed, then /dev/null in
/// their place, so that a reader of the caller's output sees its end when the client exits), and say
/// the code to the client, which exits with it at once: what is left of this process (its exit) holds
/// nothing of the caller's.
pub fn op_ended(code: u8) {
    use std::io::Write;
    let Ok(slot) = OP_END.lock() else { return };
    let Some(end) = slot.as_ref() else { return };
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    OPS_ENDED.store(OPS_BEGUN.load(Ordering::SeqCst), Ordering::SeqCst);
    if crate::runtime::warm::taken() {
        end.snapshot.counters.warm.fetch_add(1, Ordering::Relaxed);
    }
    let axes = crate::runtime::warm::opened();
    if code == 0 && axes != 0 {
        // Non-blocking: a request larger than the pipe holds is not remembered, and never waited on.
        // One write, so the server reads all of it or nothing.
        let _ = rustix::fs::fcntl_setfl(&end.report, rustix::fs::OFlags::NONBLOCK);
        let _ = rustix::io::write(&end.report, &[&[axes][..], &end.request].concat());
    } else {
        done_with_nothing_to_warm(end.report.as_fd());
    }
    // Opened once per process, which serves op after op.
    static NULL: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    if let Some(null) = NULL.get_or_init(|| std::fs::OpenOptions::new().read(true).write(true).open("/dev/null").ok()) {
        for target in 0..3 {
            // SAFETY: dup2 onto this process's own stdio, which nothing uses any more.
            unsafe { libc::dup2(null.as_raw_fd(), target) };
        }
    }
    let _ = Reply::OpEnded(code).write_to(&mut &end.conn);
    // Its watcher reads no more of this client (a read returns at once), free for the next op's.
    let _ = end.conn.shutdown(std::net::Shutdown::Read);
}

/// Tell the server, on the report pipe, that this child is done and leaves nothing to warm for (one
/// zero byte, which no request is).
fn done_with_nothing_to_warm(report: BorrowedFd<'_>) {
    let _ = rustix::io::write(report, &[0]);
}

/// The ops this process has begun and ended, counted: once an op has ended, its client leaving is no
/// reason to end the process, nor a signal it passes on one to give it (a later op's).
static OPS_BEGUN: AtomicU64 = AtomicU64::new(0);
static OPS_ENDED: AtomicU64 = AtomicU64::new(0);

/// In a server's child whose op has ended with `code` ([`op_ended`] done): the spare it becomes again,
/// its instances kept warm for the next op, if it may. It may when it was a spare (it has a channel to
/// the server), the op ended well, it served fewer than [`OPS_PER_PROCESS`] ops, and the op left
/// nothing of the caller's in it: the limits and priority it had before, and no thread the op started
/// (beyond the watcher of its clients, started with its first op: [`watch_client`]). Signals the op may
/// have set handlers for are put back to their defaults, what it left unread of its caller's stdin
/// or unwritten to its stdout is dropped, and the working directory is `/`; the next op takes on its own caller's environment,
/// umask and descriptors as any child does.
pub fn serve_again(code: u8) -> Option<Spare> {
    let end = OP_END.lock().ok()?.take()?;
    let (chan, served) = end.spare?;
    let threads_left = threads().zip(end.threads).is_some_and(|(now, before)| now <= before + 1);
    if code != 0 || served + 1 >= OPS_PER_PROCESS || end.own_limits.is_none() || peer::own_limits() != end.own_limits || !threads_left {
        return None;
    }
    for signal in super::client::FORWARDED {
        // SAFETY: the default disposition, as a fresh process has it.
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
    // What the op wrote and its caller's stdout did not take (a closed pipe) is still in the buffer:
    // written to /dev/null (descriptor 1 by now), not to the next caller.
    if std::io::Write::flush(&mut std::io::stdout()).is_err() {
        return None;
    }
    // What the op's reads buffered of its caller's stdin and did not use is the caller's, not the next
    // op's: dropped (descriptor 0 is /dev/null by now, so this ends at its end).
    let mut stdin = std::io::stdin().lock();
    while let Ok(buffered) = std::io::BufRead::fill_buf(&mut stdin).map(<[u8]>::len)
        && buffered > 0
    {
        std::io::BufRead::consume(&mut stdin, buffered);
    }
    drop(stdin);
    let _ = std::env::set_current_dir("/");
    Some(Spare { chan, report: end.report, last: Vec::new(), snapshot: end.snapshot, served: served + 1 })
}

/// A process forked ahead of the next request, in the server's place until then: while it waits it makes
/// ready the drivers the server's last storage op and last terminal op ran on (the same store, driver
/// and grants, as each op's argv and environment resolve them), so that its op, handed to it with the
/// request's connection, starts on a warm instance (`crate::runtime::warm`) rather than a new one. A
/// spare serves its op as a child forked for it would, then ends or, if it may ([`serve_again`]), is
/// the spare again; one waits at a time.
pub struct Spare {
    /// Its end of the server's channel: the connection of a request arrives on it; its end means none
    /// will.
    chan: UnixStream,
    report: OwnedFd,
    /// The server's last ops worth warming for, not yet warmed for: their requests as they arrived.
    last: Vec<Vec<u8>>,
    snapshot: Snapshot,
    /// How many ops this process served before (a spare again after an op: [`serve_again`]).
    served: u32,
}

impl Spare {
    /// The argv of the next of the last ops to warm for, its caller's environment taken on (what its
    /// store or terminal and its driver were resolved from); none when none is left.
    pub fn next_warm_up(&mut self) -> Option<Vec<OsString>> {
        let request = std::iter::from_fn(|| self.last.pop()).find_map(|bytes| Request::parse(&bytes).ok())?;
        // SAFETY: the spare has one thread here, or besides it (after a warm-up) the engine's I/O
        // thread, idle with no call running, which reads no environment (see `set_env`).
        unsafe { set_env(&request.env) };
        crate::log::reread_level();
        Some(request.args)
    }

    /// Wait for a request's connection (handed by the server, or accepted on the listener it lends),
    /// then take it as a child forked for it does; its end of the channel (the server stopped, or is
    /// gone) ends the spare.
    pub fn wait(self) -> Served {
        let Spare { chan, report, mut snapshot, served, .. } = self;
        // What the warm-ups opened must not count as the op's: its report would name their axes.
        crate::runtime::warm::warmed_up();
        // Ready: the server hands a request only to a spare that has said so.
        if rustix::io::write(&chan, b"R").is_err() {
            return Served::Ended(Ok(()));
        }
        let conn = match receive_with_fd::<4>(&chan) {
            Some((word, listener)) if u32::from_le_bytes(word) == LISTENER_LENT => accept_op(&chan, UnixListener::from(listener)),
            Some((count, conn)) => {
                snapshot.running = u32::from_le_bytes(count) as usize;
                Some(UnixStream::from(conn))
            }
            None => None,
        };
        match conn {
            Some(conn) => child(conn, snapshot, report, Some((chan, served))),
            None => {
                crate::runtime::warm::discard();
                Served::Ended(Ok(()))
            }
        }
    }
}

/// In a spare the server lent its listener: accept until an op's connection comes (each other request
/// is handed back to the server, with this user's connections only) and return it, the listener given
/// back (closed here: a process at work on an op never holds it, so that with the server gone a client
/// finds no one listening rather than no one answering); `None` once the channel says anything (its
/// end: the server stopped or is gone).
fn accept_op(chan: &UnixStream, listener: UnixListener) -> Option<UnixStream> {
    loop {
        let mut polled = [
            libc::pollfd { fd: chan.as_raw_fd(), events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: listener.as_raw_fd(), events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: `polled` is a valid array of pollfd for its length.
        if unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, -1) } < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return None;
        }
        if polled[0].revents != 0 {
            return None;
        }
        // Non-blocking (the server's listener): another process may not have it, but a connection
        // gone before it was accepted leaves nothing to take.
        let Ok((conn, _)) = listener.accept() else { continue };
        if !same_user(&conn) {
            continue;
        }
        // Its request follows the connection at once (see `PEEK_WAIT`); a status or stop request is
        // the server's, which answers it from its own state.
        let mut arrived = [libc::pollfd { fd: conn.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        // SAFETY: as above.
        unsafe { libc::poll(arrived.as_mut_ptr(), 1, PEEK_WAIT.as_millis() as libc::c_int) };
        if peek_kind(&conn).is_some_and(|kind| kind != Kind::Run) {
            if !send_with_fd(chan, &[FOR_SERVER], conn.as_fd()) {
                return None;
            }
            continue;
        }
        drop(listener);
        // The server learns of the op as its client waits for the op, not before it starts; were the
        // server gone, the op still runs for its client, who waits for it.
        let _ = send_with_fd(chan, &[TOOK], conn.as_fd());
        return Some(conn);
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
    // SAFETY: plain syscalls on this process; replacing the environment races with no reader (see
    // `set_env`: a child has one thread here; a spare, also the idle I/O thread of its warm-up and,
    // after an op, the watcher of its clients).
    unsafe {
        libc::setsid();
        set_env(&request.env);
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

/// Replace this process's environment with `entries` (`NAME=value`, as `environ` holds them).
///
/// # Safety
/// No other thread may read or write the environment meanwhile: the process has one thread, or (a
/// spare, after its warm-up) the engine's I/O thread, idle with no call running, and (after an op) the
/// watcher of its clients, neither of which reads it.
unsafe fn set_env(entries: &[OsString]) {
    let wanted: std::collections::BTreeMap<&std::ffi::OsStr, &std::ffi::OsStr> = entries
        .iter()
        .filter_map(|entry| {
            let bytes = entry.as_bytes();
            let eq = bytes.iter().position(|&b| b == b'=').filter(|&eq| eq > 0)?;
            Some((std::ffi::OsStr::from_bytes(&bytes[..eq]), std::ffi::OsStr::from_bytes(&bytes[eq + 1..])))
        })
        .collect();
    // Only what differs is changed: a spare serving the same caller again changes nothing.
    // SAFETY: as the caller promises.
    unsafe {
        for (name, _) in std::env::vars_os() {
            if !wanted.contains_key(name.as_os_str()) {
                std::env::remove_var(name);
            }
        }
        for (name, value) in &wanted {
            if std::env::var_os(name).as_deref() != Some(*value) {
                std::env::set_var(name, value);
            }
        }
    }
}

/// Hand op number `op`'s client connection to this process's watcher: the one thread (started with the
/// first op, as a spare serves op after op and a thread started per op was 7% of a warm op's CPU) that
/// delivers the signals the client forwards to the op's process group, and ends the op (SIGKILL, as a
/// killed process would end) when the client is gone before it ended. [`op_ended`] shuts the
/// connection for reading, which frees the watcher for the next op's at once.
fn watch_client(conn: UnixStream, op: u64) {
    type Watched = (UnixStream, u64);
    static WATCHER: std::sync::Mutex<Option<std::sync::mpsc::Sender<Watched>>> = std::sync::Mutex::new(None);
    let Ok(mut watcher) = WATCHER.lock() else { return };
    let watched = match watcher.as_ref() {
        Some(sender) => match sender.send((conn, op)) {
            Ok(()) => return,
            Err(std::sync::mpsc::SendError(watched)) => watched,
        },
        None => (conn, op),
    };
    let (sender, ops) = std::sync::mpsc::channel::<Watched>();
    let _ = sender.send(watched);
    std::thread::spawn(move || {
        for (conn, op) in ops {
            watch(&conn, op);
        }
    });
    *watcher = Some(sender);
}

/// Watch op number `op`'s client until the op has ended (see [`watch_client`]).
fn watch(conn: &UnixStream, op: u64) {
    let _ = conn.set_read_timeout(None);
    let mut byte = [0u8];
    let ended = || OPS_ENDED.load(Ordering::SeqCst) >= op;
    loop {
        match (&*conn).read(&mut byte) {
            // Its op has ended: what its client says or does now is not for this process.
            _ if ended() => return,
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
        "warm_ops": s.counters.warm.load(Ordering::Relaxed),
        "ops_running": s.running,
        "spare": s.spare,
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

#[cfg(test)]
mod tests {
    #[test]
    fn threads_are_counted_as_the_task_directory_lists_them() {
        let listed = || std::fs::read_dir("/proc/self/task").unwrap().count();
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let parked = std::sync::Arc::new(std::sync::Mutex::new(parked));
        let extra: Vec<_> = (0..4)
            .map(|_| {
                let parked = parked.clone();
                std::thread::spawn(move || {
                    let _ = parked.lock().unwrap().recv();
                })
            })
            .collect();
        // Other tests start and end threads meanwhile: compared where two listings around it agree.
        let agreed = (0..200).find_map(|_| {
            let before = listed();
            let counted = super::threads();
            (listed() == before).then_some((counted, before))
        });
        let (counted, listed) = agreed.expect("the thread count never held still");
        assert_eq!(counted, Some(listed));
        assert!(super::task_links_count_threads(), "Linux's /proc counts them in the task directory's links");
        assert!(listed >= 5, "this thread and the four parked: {listed}");
        drop(stop);
        extra.into_iter().for_each(|t| t.join().unwrap());
    }
}
