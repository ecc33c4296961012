//! `agmsg-host storage list | switch <name> | convert <to>`: choosing and changing the active storage
//! driver (spec §3). The workflows are the library's (`storage::manage`); this parses, shows progress
//! on a terminal and prints the outcome.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use agmsg_contract::Status;

use super::framing::{control_failure, record_failure};
use agmsg_host::catalog::Origin;
use agmsg_host::display;
use agmsg_host::storage::location;
use agmsg_host::storage::manage::{self, Progress, Stage};

/// `storage list [--json]`: every driver this host can run (bundled, trusted plugins), the active one
/// marked, and the plugins that run once trusted, with the command that trusts them (the catalog's rows,
/// as `terminal list` shows them).
pub fn list(store_flag: Option<PathBuf>, json: bool) -> ExitCode {
    let active = location::storage_driver(None).unwrap_or_default();
    let listed = match agmsg_host::storage::source::listed(store_flag) {
        Ok(listed) => listed,
        Err(e) => return record_failure(&e),
    };
    let mut rows = Vec::new();
    for agmsg_host::storage::source::Listed { entry, backend } in listed {
        let (backend, capabilities) = match (&entry.origin, backend) {
            (Origin::Untrusted { trust_command, .. }, _) => (format!("(not trusted: {trust_command})"), Vec::new()),
            (_, Ok(described)) => described,
            (_, Err(e)) => (format!("(cannot describe: {e})"), Vec::new()),
        };
        rows.push((entry, backend, capabilities));
    }
    if json {
        let value: Vec<_> = rows
            .iter()
            .map(|(entry, backend, caps)| {
                let mut row = entry.json_fields();
                row.insert("backend".into(), backend.clone().into());
                row.insert("capabilities".into(), caps.clone().into());
                row.insert("active".into(), (entry.origin.runs() && entry.name == active).into());
                serde_json::Value::Object(row)
            })
            .collect();
        println!("{}", serde_json::Value::Array(value));
    } else {
        for (entry, backend, _) in &rows {
            let mark = if entry.origin.runs() && entry.name == active { "*" } else { " " };
            println!("{mark} {:<8} {:<9} {}", display::line(&entry.name), entry.origin.word(), display::line(backend));
        }
    }
    ExitCode::SUCCESS
}

/// `switch <driver> [--url URL] [--json]` or `convert <driver> [--url URL] [--json]`, parsed.
pub struct Choice {
    pub driver: String,
    pub url: Option<String>,
    pub json: bool,
}

impl Choice {
    /// The driver first, then `--url URL` and `--json` in any order; `None`: not that.
    pub fn parse(args: &[String]) -> Option<Choice> {
        let (driver, mut rest) = args.split_first()?;
        if driver.starts_with('-') {
            return None;
        }
        let mut choice = Choice { driver: driver.clone(), url: None, json: false };
        while let Some((flag, tail)) = rest.split_first() {
            match (flag.as_str(), tail) {
                ("--json", _) if !choice.json => (choice.json, rest) = (true, tail),
                ("--url", [url, tail @ ..]) if choice.url.is_none() => (choice.url, rest) = (Some(url.clone()), tail),
                _ => return None,
            }
        }
        Some(choice)
    }
}

/// What a workflow is doing, on stderr while it runs, only when stderr is a terminal (a script or a
/// pipe gets the outcome alone).
struct Shown {
    on: bool,
    to: String,
}

impl Shown {
    fn new(to: &str) -> Shown {
        Shown { on: std::io::stderr().is_terminal(), to: display::line(to).into_owned() }
    }
}

impl Progress for Shown {
    fn stage(&mut self, stage: Stage) {
        if !self.on {
            return;
        }
        match stage {
            Stage::Checking => eprintln!("checking '{}'...", self.to),
            Stage::MovingIn => eprintln!("moving the new store in..."),
            Stage::Recording => eprintln!("recording '{}' in agmsg's config...", self.to),
            Stage::Copying | Stage::Verifying => {}
        }
    }

    fn events(&mut self, stage: Stage, n: usize, done: bool) {
        let what = if stage == Stage::Copying { "copied" } else { "verified" };
        if self.on && done {
            eprintln!("\r{what}: {n} events");
        } else if self.on && n.is_multiple_of(5000) {
            eprint!("\r{what}: {n} events");
        }
    }
}

/// `storage switch <name> [--url URL] [--json]`: the library's switch; `ok` (or with `--json` an object
/// saying what is now configured), or the failure framed as a control op's.
pub fn switch(store_flag: Option<PathBuf>, choice: &Choice) -> ExitCode {
    let name = choice.driver.as_str();
    match manage::switch(store_flag, name, choice.url.as_deref(), &mut Shown::new(name)) {
        Ok(done) if choice.json => {
            println!("{}", serde_json::json!({ "status": Status::Ok.word(), "driver": done.driver, "config": done.config }));
            ExitCode::SUCCESS
        }
        Ok(done) => {
            println!("{}", Status::Ok.word());
            eprintln!("storage driver is now '{}' ({})", display::line(&done.driver), display::line(&done.config.display().to_string()));
            ExitCode::SUCCESS
        }
        Err(e) => control_failure(&e, name),
    }
}

/// `storage convert <to> [--url URL] [--json]`: the library's convert, showing its progress on a
/// terminal; `ok` (or with `--json` an object with the count), or the failure framed as a control op's.
pub fn convert(store_flag: Option<PathBuf>, choice: &Choice) -> ExitCode {
    let to = choice.driver.as_str();
    match manage::convert(store_flag, to, choice.url.as_deref(), &mut Shown::new(to)) {
        Ok(done) if choice.json => {
            let value = serde_json::json!({
                "status": Status::Ok.word(),
                "from": done.from,
                "to": done.to,
                "events": done.events,
                "store": done.store,
                "config": done.config,
            });
            println!("{value}");
            ExitCode::SUCCESS
        }
        Ok(done) => {
            println!("{}", Status::Ok.word());
            let [from, to] = [&done.from, &done.to].map(|s| display::line(s));
            eprintln!("converted {} events from '{from}' to '{to}'; the '{from}' store is left in place", done.events);
            // Only the v1 event log converts (as agmsg's export): what a store keeps outside it stays.
            eprintln!(
                "note: anything the '{from}' store keeps outside its event log (legacy rows that predate it) is not converted and stays there"
            );
            ExitCode::SUCCESS
        }
        Err(e) => control_failure(&e, to),
    }
}
