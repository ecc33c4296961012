//! `agmsg-host plugin install | list | inspect | trust | untrust | remove`: third-party drivers, with the
//! user's consent to exactly what each one asks for. The workflows are the library's
//! ([`agmsg_host::plugin::commands`]); here the arguments, the terminal the consent is asked on, and
//! the printing.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use super::exit;
use agmsg_host::error::HostError;
use agmsg_host::plugin::commands::{self, Prompt};

/// How the user answers the consent question.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Consent {
    /// Grant everything the driver asks for, without asking
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Grant only this capability (repeatable): store, env:NAME, program:NAME, network:HOST:PORT,
    /// memory:MIB, timeout:MS, inert-sockets. The driver gets what it asks for AND is granted.
    #[arg(long = "grant", value_name = "CAPABILITY")]
    pub grants: Vec<String>,
}

impl Consent {
    fn library(&self) -> commands::Consent {
        commands::Consent { yes: self.yes, grants: self.grants.clone() }
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Install a driver package (a directory holding agmsg-driver.toml, the manifest itself, or a
    /// .wasm component with --manifest), or an agent type's directory (type.conf, its template,
    /// optionally a plug component), into $AGMSG_HOME/plugins/<axis>/<name>/ and trust it
    Install {
        /// The package directory, its agmsg-driver.toml, its component (.wasm), or a type directory
        source: PathBuf,
        /// The manifest, when SOURCE is a component whose manifest is elsewhere
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        #[command(flatten)]
        consent: Consent,
    },
    /// Every driver found: axis/name, version, builtin / trusted / UNTRUSTED, what it is granted, path
    List {
        /// One JSON object per line
        #[arg(long)]
        json: bool,
    },
    /// A driver's manifest, its component's real imports and exports, sha256, and whether this host
    /// can run it
    Inspect {
        /// A package directory, manifest or component file, a type directory, or an installed driver
        /// or type (axis/name or name)
        target: String,
        /// The manifest, when TARGET is a component whose manifest is elsewhere
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// One JSON object
        #[arg(long)]
        json: bool,
    },
    /// Trust a plugin found in a plugin directory, granting what it asks for (or what --grant says)
    Trust {
        /// axis/name, or a name that is unambiguous across axes
        reference: String,
        /// Which directory, when the plugin is found in several
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        #[command(flatten)]
        consent: Consent,
    },
    /// Stop trusting a plugin (it stays where it is, ignored)
    Untrust {
        /// axis/name, or a name that is unambiguous across axes
        reference: String,
    },
    /// Delete a plugin installed in $AGMSG_HOME/plugins, and its trust
    Remove {
        /// axis/name, or a name that is unambiguous across axes
        reference: String,
    },
}

/// The consent question, put on the terminal: the text on stderr, the answer from stdin.
struct Terminal;

impl Prompt for Terminal {
    fn show(&mut self, text: &str) {
        eprint!("{text}");
    }

    fn ask(&mut self, question: &str) -> Option<std::io::Result<String>> {
        if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
            return None;
        }
        eprint!("{question}");
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        Some(std::io::stdin().read_line(&mut answer).map(|_| answer))
    }
}

pub fn run(command: PluginCommand) -> ExitCode {
    let axes = agmsg_host::plugin_axes();
    let report = match command {
        PluginCommand::Install { source, manifest, consent } => {
            commands::install(&axes, &source, manifest.as_deref(), &consent.library(), &mut Terminal)
        }
        PluginCommand::List { json } => {
            let listed = commands::list(&axes, json).and_then(|text| {
                std::io::stdout().write_all(text.as_bytes()).map_err(|e| HostError::refused(format!("writing the list: {e}")))
            });
            return exit::report("plugin", listed);
        }
        // A component this host would refuse is reported in full, then exits 1.
        PluginCommand::Inspect { target, manifest, json } => match commands::inspect(&axes, &target, manifest.as_deref(), json) {
            Ok(commands::Inspection { text, loads: false }) => {
                print!("{text}");
                return exit::no();
            }
            other => other.map(|inspection| inspection.text),
        },
        PluginCommand::Trust { reference, path, consent } => {
            commands::trust(&axes, &reference, path.as_deref(), &consent.library(), &mut Terminal)
        }
        PluginCommand::Untrust { reference } => commands::untrust(&axes, &reference),
        PluginCommand::Remove { reference } => commands::remove(&axes, &reference),
    };
    exit::report("plugin", report.map(|text| print!("{text}")))
}
