//! Where the binary decides its exit code: the one map from the library's [`ExitClass`] (and a yes/no
//! answer) to a process code, and the one way a failure's message is printed. No other file of `cli/`
//! names a code.

use std::process::ExitCode;

use agmsg_host::display;
use agmsg_host::error::{ExitClass, HostError};
use agmsg_host::terminal::driver::Answer;

/// The exit code of a failure of `class`: agmsg's scripts' 1 (failure) and 2 (usage), its delivery
/// engine's 3 (not overridden), its spawn's and despawn's 3 (not done in time), its sync adapter's 14
/// (an optional op not offered), a driver's own status codes (§1.4, §2.3).
pub fn code(class: ExitClass) -> ExitCode {
    ExitCode::from(match class {
        ExitClass::Refused => 1,
        ExitClass::Usage => 2,
        ExitClass::NotOverridden | ExitClass::TimedOut => 3,
        ExitClass::NotOffered => 14,
        ExitClass::Storage(status) => status.exit_code(),
        ExitClass::Terminal(kind) => kind.exit_code(),
    })
}

/// The number an `ExitCode` stands for (std keeps it opaque), for passing it on.
pub fn number(code: ExitCode) -> u8 {
    (0..=u8::MAX).find(|&n| ExitCode::from(n) == code).unwrap_or(1)
}

/// A yes/no question's answer as agmsg's tests read it: 0 yes, 1 no, 2 cannot tell.
pub fn answer(answer: Answer) -> ExitCode {
    ExitCode::from(match answer {
        Answer::Yes => 0,
        Answer::No => 1,
        Answer::Unknown => 2,
    })
}

/// "No" (or "none found") as an exit code: a command whose answer is its code.
pub fn no() -> ExitCode {
    answer(Answer::No)
}

/// A failure: `agmsg-host <context>: <message>` on stderr as one visible, capped line (the message may
/// carry a driver's or a manifest's text: it can neither drive the terminal nor forge a line), then the
/// class's code.
pub fn fail(context: &str, e: &HostError) -> ExitCode {
    eprintln!("agmsg-host {context}: {}", display::line(&e.message));
    code(e.class)
}

/// As [`fail`], for a command whose messages are several lines by design: each line its own visible
/// line, each prefixed. An empty message prints nothing (delivery's "not overridden").
pub fn fail_lines(context: &str, e: &HostError) -> ExitCode {
    for line in e.message.lines() {
        eprintln!("agmsg-host {context}: {}", display::line(line));
    }
    code(e.class)
}

/// The outcome of a command that prints its own success: `Ok` exits 0, an error as [`fail`].
pub fn report(context: &str, result: Result<(), HostError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(context, &e),
    }
}
