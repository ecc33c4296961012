//! Messaging for people: `send`, `inbox`, `history`, `watch`. Each composes the storage contract's
//! ops as agmsg's own commands do, and prints for a terminal (aligned, colored on a tty unless
//! `NO_COLOR`) or, with `--json`, agmsg's JSONL records. Text output shows control and bidi characters
//! as escapes ([`agmsg_host::display`]); `--json` is JSON-escaped as it is.
//!
//! `inbox` and `watch` consume through the read cursor exactly what they printed (§2.2, the library's
//! `storage::inbox`): a crash before the consume re-delivers, after it does not; a message not shown
//! is never consumed.

use std::io::{self, IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::framing::record_failure;
use agmsg_host::display;
use agmsg_host::storage::StorageError;
use agmsg_host::storage::StoreSession;
use agmsg_host::storage::driver::Message;
use agmsg_host::storage::inbox;
use agmsg_host::storage::records::message_line;

/// Where messages go and how they look.
struct Printer {
    json: bool,
    color: bool,
    out: io::StdoutLock<'static>,
}

impl Printer {
    fn new(json: bool) -> Printer {
        let color = !json && io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        Printer { json, color, out: io::stdout().lock() }
    }

    /// Print one message; an error means stdout is gone (a closed pipe).
    fn message(&mut self, m: &Message) -> io::Result<()> {
        if self.json {
            return writeln!(self.out, "{}", message_line(m));
        }
        let (dim, bold, reset) = if self.color { ("\x1b[2m", "\x1b[1m", "\x1b[0m") } else { ("", "", "") };
        // Any agent writes bodies, and a driver every field: escapes, carriage returns and bidi controls
        // are shown, never sent to the terminal (a body keeps its newlines and tabs).
        let (at, from, to) = (display::line(&m.at), display::line(&m.from), display::line(&m.to));
        let body = display::text(&m.body);
        let mut lines = body.lines();
        writeln!(self.out, "{dim}{at}{reset}  {bold}{from}{reset} → {to}  {}", lines.next().unwrap_or(""))?;
        // Continuation lines line up under the body.
        let indent = " ".repeat(at.chars().count() + from.chars().count() + to.chars().count() + 7);
        for line in lines {
            writeln!(self.out, "{indent}{line}")?;
        }
        Ok(())
    }

    /// Print one message and flush it: whether it reached stdout (what `inbox` consumes).
    fn deliver(&mut self, m: &Message) -> bool {
        self.message(m).and_then(|()| self.flush()).is_ok()
    }

    fn note(&mut self, text: &str) -> io::Result<()> {
        if self.json { Ok(()) } else { writeln!(self.out, "{text}") }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `send <team> <from> <to> <body> [--force]`; a body of `-` is read from stdin, as a shell's `"$(cat)"`
/// reads it (trailing newlines dropped: agmsg's `send.sh` gets its body as an argument). Where agmsg's
/// team registry is, an unregistered team, sender or recipient is refused (1) unless `force`, as
/// agmsg's `send.sh` refuses it.
pub fn send(store: Option<PathBuf>, driver: Option<String>, team: &str, from: &str, to: &str, body: &str, force: bool) -> ExitCode {
    if !force && let Err(e) = agmsg_host::storage::roster::check_send(team, from, to) {
        return super::exit::fail("send", &e);
    }
    let body = if body == "-" {
        let mut bytes = Vec::new();
        if let Err(e) = io::stdin().read_to_end(&mut bytes) {
            return record_failure(&StorageError::runtime(format!("cannot read the body from stdin: {e}")));
        }
        match String::from_utf8(bytes) {
            Ok(body) => agmsg_host::shell::substituted(&body).to_owned(),
            Err(_) => return record_failure(&StorageError::runtime("the body on stdin is not UTF-8")),
        }
    } else {
        body.to_owned()
    };
    let result = StoreSession::resolve(store, driver, Some(team), true).and_then(|store| {
        let mut driver = store.driver()?;
        driver.send(team, from, to, &body)
    });
    match result {
        Ok(id) => {
            println!("{id}");
            ExitCode::SUCCESS
        }
        Err(e) => record_failure(&e),
    }
}

/// `history <team> [agent] [--limit N]`: oldest to newest.
pub fn history(
    store: Option<PathBuf>,
    driver: Option<String>,
    team: &str,
    agent: Option<&str>,
    limit: Option<u32>,
    json: bool,
) -> ExitCode {
    let result = StoreSession::resolve(store, driver, Some(team), true).and_then(|store| store.driver()?.history(team, agent, limit));
    match result {
        Ok(messages) => {
            let mut printer = Printer::new(json);
            let shown = messages.iter().try_for_each(|m| printer.message(m));
            let _ = shown.and_then(|()| if messages.is_empty() { printer.note("(no messages)") } else { Ok(()) });
            let _ = printer.flush();
            ExitCode::SUCCESS
        }
        Err(e) => record_failure(&e),
    }
}

/// `inbox <team> <agent>`: the unread messages, then consume exactly those.
pub fn inbox(store: Option<PathBuf>, driver: Option<String>, team: &str, agent: &str, json: bool) -> ExitCode {
    let result = StoreSession::resolve(store, driver, Some(team), true).and_then(|store| {
        let mut driver = store.driver()?;
        let mut printer = Printer::new(json);
        let unread = inbox::inbox(&mut driver, team, agent, |m| printer.deliver(m))?;
        if unread == 0 {
            let _ = printer.note("(no unread messages)");
        }
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => record_failure(&e),
    }
}

/// `watch <team> <agent> [--interval S]`: the §2.2 loop until Ctrl-C or a closed stdout. Between rounds it
/// waits, for at most the interval, on the driver's live wake-ups when it offers them
/// (`agmsg:storage/live`, 1.1.0), else on a change to its store file (`storage::wake`); a store where
/// neither works, or any driver with `AGMSG_WATCH_POLL=1`, is polled every interval.
pub fn watch(store: Option<PathBuf>, driver: Option<String>, team: &str, agent: &str, interval: Duration, json: bool) -> ExitCode {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    if let Err(e) = ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)) {
        return record_failure(&StorageError::runtime(format!("cannot handle Ctrl-C: {e}")));
    }
    let wake = std::env::var_os("AGMSG_WATCH_POLL").is_none_or(|v| v.is_empty() || v == "0");
    let result = StoreSession::resolve(store, driver, Some(team), true).and_then(|store| {
        let mut driver = store.driver()?;
        // The store directory the driver is granted (none for postgres, whose store is a database).
        let granted = store.source.capabilities.store().then_some(&store.grant);
        let mut waiter = inbox::Waiter::choose(&mut driver, granted, wake);
        let mut printer = Printer::new(json);
        let _ = printer.note(&format!("watching {team}:{agent} (Ctrl-C to stop)"));
        while !stop.load(Ordering::SeqCst) {
            let round = inbox::watch_round(&mut driver, team, agent, |m| printer.deliver(m))?;
            if !round.all_delivered {
                return Ok(());
            }
            inbox::wait_for_next_round(&mut driver, &mut waiter, team, agent, &round.cursor, interval, || stop.load(Ordering::SeqCst))?;
        }
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => record_failure(&e),
    }
}
