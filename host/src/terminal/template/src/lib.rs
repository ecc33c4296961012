//! {{name}}: an agmsg terminal driver.
//!
//! Every op starts as "unsupported" (exit 13): agmsg then knows this terminal cannot do it, which is
//! never mistaken for a failure. Fill in what your terminal can do, running its CLI through
//! `agmsg_guest_sdk::process::run` (declare it in `terminal.conf`'s `programs=`), and validate every id
//! with one grammar function before running anything.

use agmsg_guest_sdk::terminal::{
    ArrangeOutcome, Description, Detection, Intent, NamingMode, PanePresence, SpawnTarget, TermError, TerminalDriver,
};

#[derive(Default)]
struct Driver;

agmsg_guest_sdk::export_terminal_driver!(Driver);

fn unsupported<T>(op: &str) -> Result<T, TermError> {
    Err(TermError::unsupported(format!("{{name}} cannot {op} yet")))
}

impl TerminalDriver for Driver {
    fn check(&self) -> Result<(), TermError> {
        Ok(())
    }

    /// Keep in step with terminal.conf.
    fn describe(&self) -> Description {
        Description {
            name: "{{name}}".into(),
            priority: 50,
            backend: "{{name}} (describe what a pane is here)".into(),
            capabilities: Vec::new(),
            hints: Vec::new(),
        }
    }

    /// Present only when this session runs under the terminal (read the variables `env=` declares).
    fn detect(&self, _session_id: &str) -> Detection {
        Detection::Absent
    }

    fn spawn(&self, _name: &str, _project: &str, _target: SpawnTarget, _boot: &[String]) -> Result<String, TermError> {
        unsupported("spawn")
    }
    fn despawn(&self, _id: &str) -> Result<(), TermError> {
        unsupported("despawn")
    }
    fn peek(&self, _id: &str, _lines: Option<u32>) -> Result<String, TermError> {
        unsupported("peek")
    }
    fn poke(&self, _id: &str, _text: &str) -> Result<(), TermError> {
        unsupported("poke")
    }
    /// `Gone` only when the terminal itself says so: agmsg deletes a member's placement on it.
    fn pane_state(&self, _id: &str) -> Result<PanePresence, TermError> {
        unsupported("tell pane state")
    }
    fn where_is(&self, _id: &str) -> Result<String, TermError> {
        unsupported("locate panes")
    }
    fn arrange(&self, _source: &str, _intent: Intent, _target: &str) -> Result<ArrangeOutcome, TermError> {
        unsupported("arrange")
    }
    fn name(&self, _id: &str, _team: &str, _agent: &str, _mode: NamingMode) -> Result<(), TermError> {
        unsupported("name panes")
    }
}
