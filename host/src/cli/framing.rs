//! How a command reports its outcome, in one place: agmsg's status words and exit codes, the
//! `AGMSG-DIRECTIVE` line, and failure messages (a driver's text shown as one visible line).

use std::io::{self, Write};
use std::process::ExitCode;

use agmsg_host::storage::StorageError;
use agmsg_host::storage::driver::Directive;
use agmsg_host::{directive, display};

pub use agmsg_host::error::Shape;

/// A control op's failure: the §1.6 directive if any, the status word last on stdout, the message on
/// stderr, the status's exit code.
pub fn control_failure(e: &StorageError, driver: &str) -> ExitCode {
    let mut out = io::stdout().lock();
    if let Some(d) = &e.directive {
        match directive_line(d, driver) {
            Some(line) => {
                let _ = writeln!(out, "{line}");
            }
            None => eprintln!(
                "agmsg-host: driver '{driver}' gave a directive of type '{}', which is not relayed (a driver may only ask to install packages)",
                display::line(&d.kind)
            ),
        }
    }
    let _ = writeln!(out, "{}", e.status.word());
    record_failure(e)
}

/// A record op's failure: nothing on stdout, the message on stderr, the status's exit code. The message
/// may carry a driver's text (its error, its panic): it is printed as one visible, capped line, so a
/// driver can neither drive the terminal nor forge a line of its own.
pub fn record_failure(e: &StorageError) -> ExitCode {
    eprintln!("agmsg-host: {}", display::line(&e.message));
    super::exit::code(e.into())
}

/// A §1.6 directive line, when the host relays it ([`directive::relayable`]: an install, its commands
/// in the host's own form only); the host adds the driver's name. The reason goes through the same
/// rule as a driver's messages (JSON would escape a newline, but not an escape sequence's DEL/C1 or
/// bidi controls, nor cap a huge reason).
fn directive_line(d: &Directive, driver: &str) -> Option<String> {
    let (commands, dropped) = directive::relayable(&d.kind, &d.commands)?;
    if dropped > 0 {
        eprintln!("agmsg-host: driver '{driver}' asked to run {dropped} command(s) that are not a plain package install; not relayed");
    }
    Some(agmsg_contract::records::directive(directive::INSTALL_DEPS, driver, Some(&commands), &display::line(&d.reason)))
}
