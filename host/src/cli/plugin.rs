//! `agmsg-host plugin install | list | inspect | trust | untrust | remove | publish | update | keys`:
//! third-party drivers, with the user's consent to exactly what each one asks for, from a directory or
//! as published to an OCI registry. The workflows are the library's ([`agmsg_host::plugin::commands`],
//! [`agmsg_host::plugin::published`]); here the arguments, the terminal the consent is asked on, and
//! the printing.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use super::exit;
use agmsg_host::error::HostError;
use agmsg_host::plugin::commands::{self, Prompt};
use agmsg_host::plugin::oci;
use agmsg_host::plugin::published::{self, Source};

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

/// How far a registry may send a download.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct Download {
    /// Let the registry redirect to this host (repeatable; over HTTPS): registries that serve blobs from
    /// a CDN need it. Any other redirect to another host is refused
    #[arg(long = "allow-redirect", value_name = "HOST")]
    pub redirect_hosts: Vec<String>,
}

impl Download {
    fn options(&self) -> oci::Options {
        oci::Options { redirect_hosts: self.redirect_hosts.clone(), ..oci::Options::default() }
    }
}

#[derive(Debug, clap::Subcommand)]
pub enum KeysCommand {
    /// Pin a publisher's SSH public key (ed25519) under a name: drivers it signs are shown as its
    Add {
        /// What you call the publisher
        name: String,
        /// The public key: a line like `ssh-ed25519 AAAA...`, or its .pub file
        key: String,
    },
    /// The pinned keys: name, fingerprint, key
    List {
        /// One JSON object per line
        #[arg(long)]
        json: bool,
    },
    /// Unpin a key (by name or fingerprint)
    Remove {
        /// The name, or the SHA256:... fingerprint
        which: String,
    },
}

#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Install a driver package (a directory holding agmsg-driver.toml, the manifest itself, or a
    /// .wasm component with --manifest), an agent type's directory (type.conf, its template,
    /// optionally a plug component), or a published driver (oci://<registry>/<repository>:<tag> or
    /// @sha256:<digest>, or an OCI image layout .tar file) into $AGMSG_HOME/plugins/<axis>/<name>/ and
    /// trust it. A published driver's digests and signature are verified first, and the consent names
    /// its publisher or says it is unsigned
    Install {
        /// The package directory, its agmsg-driver.toml, its component (.wasm), a type directory, an
        /// oci:// reference, or an OCI image layout .tar (optionally :<tag> or @sha256:<digest>)
        source: PathBuf,
        /// The manifest, when SOURCE is a component whose manifest is elsewhere
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        #[command(flatten)]
        consent: Consent,
        #[command(flatten)]
        download: Download,
    },
    /// Publish a driver package as an OCI artifact (the CNCF Wasm layout, with its agmsg-driver.toml
    /// and, with --sign-key, an SSH signature over both): to a registry, or to an OCI image layout .tar
    Publish {
        /// The package directory, its agmsg-driver.toml, or its component (.wasm) with --manifest; or an
        /// agent type's directory (holding type.conf)
        source: PathBuf,
        /// oci://<registry>/<repository>:<tag>, or a file ending in .tar
        destination: String,
        /// The manifest, when SOURCE is a component whose manifest is elsewhere
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
        /// Sign it with this ed25519 private key (through ssh-keygen -Y sign, which asks for its
        /// passphrase or uses your agent)
        #[arg(long, value_name = "PRIVATE_KEY")]
        sign_key: Option<PathBuf>,
        /// The version an agent type is published as (its files name none): default, the tag
        #[arg(long, value_name = "SEMVER")]
        version: Option<String>,
        #[command(flatten)]
        download: Download,
    },
    /// Install the newer version of a driver installed from a registry or an artifact file, from the
    /// same source: without asking when signed by the same key and asking for nothing more; otherwise
    /// asked again, shown what changed
    Update {
        /// axis/name, or a name that is unambiguous across axes
        reference: String,
        #[command(flatten)]
        consent: Consent,
        #[command(flatten)]
        download: Download,
    },
    /// The publishers' keys you pinned (SSH ed25519 public keys)
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
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
        PluginCommand::Install { source, manifest, consent, download } => match Source::parse(&source.to_string_lossy()) {
            Ok(Some(published)) if manifest.is_none() => {
                published::install(&axes, &published, &download.options(), &consent.library(), &mut Terminal)
            }
            Ok(_) => commands::install(&axes, &source, manifest.as_deref(), &consent.library(), &mut Terminal),
            Err(e) => Err(e),
        },
        PluginCommand::Publish { source, destination, manifest, sign_key, version, download } => {
            let what = published::Publishing { manifest: manifest.as_deref(), sign_key: sign_key.as_deref(), version: version.as_deref() };
            published::publish(&axes, &source, &destination, &what, &download.options())
        }
        PluginCommand::Update { reference, consent, download } => {
            published::update(&axes, &reference, &download.options(), &consent.library(), &mut Terminal)
        }
        PluginCommand::Keys { command } => match command {
            KeysCommand::Add { name, key } => published::keys_add(&name, &key),
            KeysCommand::List { json } => published::keys_list(json),
            KeysCommand::Remove { which } => published::keys_remove(&which),
        },
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
