//! The vocabulary of what a driver may touch, shared by plugin manifests (what a driver asks for), the
//! trust file (what the user consented to and granted) and the sandbox (what an instance gets).
//!
//! A driver's capabilities are a flat list of items. One item *covers* another when granting the first
//! grants at least the second; "declared AND granted" is then the declared items that some granted item
//! covers, and "what widened" is the declared items that the consented set does not cover.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One thing a driver may use.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Capability {
    /// Its store directory, preopened read-write (storage drivers).
    Store,
    /// Read one environment variable of the host (and pass it to programs it runs).
    Env { name: String },
    /// Run one program, named (never by path), resolved on the host's `PATH`. `args`: the argument
    /// vectors it may pass, each a list of glob patterns matched one per argument (`**` alone matches
    /// any number of arguments); `None` is any arguments.
    Program {
        name: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        args: Option<Vec<Vec<String>>>,
    },
    /// Open TCP connections to one `host:port`.
    Network { endpoint: String },
    /// A memory cap above the default, in MiB.
    Memory { mb: u64 },
    /// A per-call deadline above the default, in milliseconds.
    Timeout { ms: u64 },
    /// Link the component's `wasi:sockets` imports although no network is granted, with every socket
    /// call denied. Grants nothing: it is for language runtimes (CPython under componentize-py) that
    /// import sockets whether or not the driver uses them; without it such imports are refused at load.
    InertSockets,
}

impl Capability {
    /// Whether granting `self` grants at least `wanted`.
    pub fn covers(&self, wanted: &Capability) -> bool {
        use Capability::*;
        match (self, wanted) {
            (Store, Store) | (InertSockets, InertSockets) => true,
            (Env { name: a }, Env { name: b }) => a == b,
            (Program { name: a, args: granted }, Program { name: b, args: asked }) => {
                a == b
                    && match (granted, asked) {
                        (None, _) => true,
                        (Some(_), None) => false,
                        (Some(granted), Some(asked)) => asked.iter().all(|pattern| granted.contains(pattern)),
                    }
            }
            (Network { endpoint: a }, Network { endpoint: b }) => a == b,
            (Memory { mb: a }, Memory { mb: b }) => a >= b,
            (Timeout { ms: a }, Timeout { ms: b }) => a >= b,
            _ => false,
        }
    }

    /// Parse a `--grant` token: `store`, `env:NAME`, `program:NAME` (with whatever argument patterns
    /// the manifest declares for it), `network:HOST:PORT`, `memory:MIB`, `timeout:MS`, `inert-sockets`.
    pub fn parse_grant(token: &str) -> Result<Capability, String> {
        let (kind, value) = token.split_once(':').unwrap_or((token, ""));
        let number = |what: &str| {
            value.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| format!("--grant {token}: {what} must be a positive whole number"))
        };
        let cap = match (kind, value) {
            ("store", "") => Capability::Store,
            ("inert-sockets", "") => Capability::InertSockets,
            ("env", name) => Capability::Env { name: name.to_owned() },
            ("program", name) => Capability::Program { name: name.to_owned(), args: None },
            ("network", endpoint) => Capability::Network { endpoint: endpoint.to_owned() },
            ("memory", _) => Capability::Memory { mb: number("memory (MiB)")? },
            ("timeout", _) => Capability::Timeout { ms: number("timeout (ms)")? },
            _ => {
                return Err(format!(
                    "--grant {token}: expected store, env:NAME, program:NAME, network:HOST:PORT, memory:MIB, timeout:MS or inert-sockets"
                ));
            }
        };
        cap.validate().map_err(|e| format!("--grant {token}: {e}"))?;
        Ok(cap)
    }

    /// What granting it means beyond its name, for the consent prompt.
    pub fn consequence(&self) -> Option<&'static str> {
        match self {
            Capability::Env { .. } => Some("it reads the variable, and may pass or set it for programs it runs"),
            Capability::Network { endpoint }
                if parse_endpoint(endpoint).is_ok_and(|(host, _)| host.parse::<std::net::IpAddr>().is_err()) =>
            {
                Some("a host name: it may also make DNS lookups (of any name)")
            }
            Capability::Program { args: None, .. } => Some("with any arguments: whatever that program can do"),
            _ => None,
        }
    }

    /// Names and values that are well formed (a manifest or a grant can be wrong).
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Capability::Store | Capability::Memory { .. } | Capability::Timeout { .. } | Capability::InertSockets => Ok(()),
            Capability::Env { name } if is_env_name(name) => Ok(()),
            Capability::Env { name } => Err(format!("invalid environment variable name {name:?}")),
            Capability::Program { name, .. } if !is_program_name(name) => {
                Err(format!("invalid program name {name:?} (programs are named, never given by path)"))
            }
            // Patterns are shown in the consent prompt: printable text, one line each.
            Capability::Program { args: Some(args), name } => args
                .iter()
                .flatten()
                .find(|p| (p.as_str() != "**" && glob::Pattern::new(p).is_err()) || !crate::display::is_printable_line(p, 1024))
                .map_or(Ok(()), |p| Err(format!("program {name}: invalid argument pattern {p:?}"))),
            Capability::Program { .. } => Ok(()),
            Capability::Network { endpoint } => parse_endpoint(endpoint).map(|_| ()),
        }
    }
}

impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Store => f.write_str("store"),
            Capability::Env { name } => write!(f, "env:{name}"),
            Capability::Program { name, args: None } => write!(f, "program:{name} (any arguments)"),
            Capability::Program { name, args: Some(args) } => {
                let shapes: Vec<String> = args.iter().map(|a| a.join(" ")).collect();
                write!(f, "program:{name} (arguments: {})", shapes.join(" | "))
            }
            Capability::Network { endpoint } => write!(f, "network:{endpoint}"),
            Capability::Memory { mb } => write!(f, "memory:{mb} (MiB)"),
            Capability::Timeout { ms } => write!(f, "timeout:{ms} (ms per call)"),
            Capability::InertSockets => f.write_str("inert-sockets (wasi:sockets linked, every call denied)"),
        }
    }
}

/// A set of capabilities (what a manifest declares, or what a user granted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Capabilities(pub Vec<Capability>);

impl Capabilities {
    /// Whether some item of `self` covers `wanted`.
    pub fn covers(&self, wanted: &Capability) -> bool {
        self.0.iter().any(|have| have.covers(wanted))
    }

    /// The items of `self` that `other` does not cover: what `self` asks for beyond `other`.
    pub fn beyond(&self, other: &Capabilities) -> Vec<Capability> {
        self.0.iter().filter(|c| !other.covers(c)).cloned().collect()
    }

    /// What a driver gets: the items of `self` (declared) that `granted` covers.
    pub fn granted_by(&self, granted: &Capabilities) -> Capabilities {
        Capabilities(self.0.iter().filter(|c| granted.covers(c)).cloned().collect())
    }

    pub fn store(&self) -> bool {
        self.0.contains(&Capability::Store)
    }

    pub fn inert_sockets(&self) -> bool {
        self.0.contains(&Capability::InertSockets)
    }

    pub fn env(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|c| match c {
            Capability::Env { name } => Some(name.as_str()),
            _ => None,
        })
    }

    /// Each program and its argument patterns (`None`: any arguments).
    pub fn programs(&self) -> impl Iterator<Item = (&str, Option<&Vec<Vec<String>>>)> {
        self.0.iter().filter_map(|c| match c {
            Capability::Program { name, args } => Some((name.as_str(), args.as_ref())),
            _ => None,
        })
    }

    pub fn network(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|c| match c {
            Capability::Network { endpoint } => Some(endpoint.as_str()),
            _ => None,
        })
    }

    pub fn memory_mb(&self) -> Option<u64> {
        self.0.iter().filter_map(|c| if let Capability::Memory { mb } = c { Some(*mb) } else { None }).max()
    }

    pub fn timeout_ms(&self) -> Option<u64> {
        self.0.iter().filter_map(|c| if let Capability::Timeout { ms } = c { Some(*ms) } else { None }).max()
    }

    /// One line per item, for prompts and listings; `none` when empty.
    pub fn summary(&self) -> String {
        if self.0.is_empty() {
            return "none".to_owned();
        }
        self.0.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    }
}

/// Whether `args` is one of the argument vectors `patterns` allows.
pub fn args_match(patterns: &[Vec<String>], args: &[String]) -> bool {
    patterns.iter().any(|pattern| matches_one(pattern, args))
}

/// One pattern against the arguments, in O(pattern × arguments) however many `**` it holds (the
/// arguments come from the driver): `reach[j]` says whether the pattern items so far can consume
/// exactly the first `j` arguments.
fn matches_one(pattern: &[String], args: &[String]) -> bool {
    let mut reach = vec![false; args.len() + 1];
    reach[0] = true;
    for item in pattern {
        if item == "**" {
            // Any number of arguments: every position after a reachable one is reachable.
            let first = reach.iter().position(|r| *r);
            reach.iter_mut().enumerate().for_each(|(j, r)| *r = first.is_some_and(|f| j >= f));
        } else {
            let Ok(glob) = glob::Pattern::new(item) else { return false };
            for j in (1..=args.len()).rev() {
                reach[j] = reach[j - 1] && glob.matches(&args[j - 1]);
            }
            reach[0] = false;
        }
    }
    reach[args.len()]
}

/// `host:port` (a name or an IP; `[v6]:port` for IPv6) into its parts.
pub fn parse_endpoint(endpoint: &str) -> Result<(String, u16), String> {
    let bad = || format!("invalid network endpoint {endpoint:?} (expected host:port)");
    let (host, port) = endpoint.rsplit_once(':').ok_or_else(bad)?;
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    let port: u16 = port.parse().ok().filter(|p| *p > 0).ok_or_else(bad)?;
    let host_ok = !host.is_empty() && host.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b));
    if !host_ok {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// A program is named, never given by path: letters, digits and `._+-`, not starting with a dot.
pub fn is_program_name(s: &str) -> bool {
    !s.is_empty() && !s.starts_with('.') && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
}

pub fn is_env_name(s: &str) -> bool {
    let mut bytes = s.bytes();
    bytes.next().is_some_and(|b| b.is_ascii_alphabetic() || b == b'_') && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(name: &str, args: Option<&[&[&str]]>) -> Capability {
        Capability::Program { name: name.into(), args: args.map(|a| a.iter().map(|v| v.iter().map(|s| s.to_string()).collect()).collect()) }
    }

    #[test]
    fn coverage_and_what_widened() {
        let consented = Capabilities(vec![Capability::Store, program("tmux", Some(&[&["-V"]])), Capability::Memory { mb: 128 }]);
        let update = Capabilities(vec![
            Capability::Store,
            program("tmux", Some(&[&["-V"], &["kill-server"]])),
            Capability::Memory { mb: 64 },
            Capability::Network { endpoint: "db:5432".into() },
        ]);
        let widened: Vec<String> = update.beyond(&consented).iter().map(ToString::to_string).collect();
        assert_eq!(widened, ["program:tmux (arguments: -V | kill-server)", "network:db:5432"]);
        // `program:tmux` granted on the command line covers whatever patterns are declared.
        assert!(program("tmux", None).covers(&program("tmux", Some(&[&["x"]]))));
        assert!(!program("tmux", Some(&[&["x"]])).covers(&program("tmux", None)));
        let got = update.granted_by(&Capabilities(vec![Capability::Store, Capability::Memory { mb: 100 }]));
        assert_eq!(got.0, [Capability::Store, Capability::Memory { mb: 64 }]);
    }

    #[test]
    fn argument_patterns() {
        let patterns: Vec<Vec<String>> = vec![vec!["-S".into(), "*".into(), "**".into()], vec!["-V".into()]];
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(args_match(&patterns, &args(&["-V"])));
        assert!(args_match(&patterns, &args(&["-S", "/tmp/sock", "list-panes", "-a"])));
        assert!(args_match(&patterns, &args(&["-S", "/tmp/sock"])));
        assert!(!args_match(&patterns, &args(&["-V", "extra"])));
        assert!(!args_match(&patterns, &args(&["kill-server"])));
        assert!(!args_match(&patterns, &args(&[])));
        // Several `**` stay linear: a pathological pattern over many arguments answers at once.
        let many: Vec<String> = (0..20_000).map(|i| if i % 2 == 0 { "a".to_owned() } else { "x".to_owned() }).collect();
        let tricky = vec![["**", "a", "**", "b", "**", "c"].map(String::from).to_vec()];
        assert!(!args_match(&tricky, &many));
        let star = vec![["**"].map(String::from).to_vec()];
        assert!(args_match(&star, &many) && args_match(&star, &[]));
        assert!(args_match(&[["x", "**", "y"].map(String::from).to_vec()], &args(&["x", "y"])));
    }

    #[test]
    fn grant_tokens() {
        assert_eq!(Capability::parse_grant("store").unwrap(), Capability::Store);
        assert_eq!(Capability::parse_grant("network:127.0.0.1:80").unwrap(), Capability::Network { endpoint: "127.0.0.1:80".into() });
        assert_eq!(Capability::parse_grant("memory:512").unwrap(), Capability::Memory { mb: 512 });
        for bad in ["program:/bin/sh", "env:A-B", "network:nohost", "memory:0", "root", "store:x"] {
            assert!(Capability::parse_grant(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_endpoint("[::1]:8080").unwrap(), ("::1".to_owned(), 8080));
    }
}
