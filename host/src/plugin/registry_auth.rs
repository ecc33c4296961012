//! The user's credentials for an OCI registry, looked for where container tools keep them: first the
//! files podman, skopeo and buildah read (containers-auth.json(5)), then Docker's:
//!
//! 1. `$REGISTRY_AUTH_FILE`
//! 2. `$XDG_RUNTIME_DIR/containers/auth.json`
//! 3. `$XDG_CONFIG_HOME/containers/auth.json`, else `~/.config/containers/auth.json`
//! 4. `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`
//!
//! In each file, as Docker reads its own: the credential helper named for the registry (`credHelpers`),
//! else the default one (`credsStore`), else the inline entry (`auths`, the most specific key first:
//! `registry/repository`, its parents, then the registry). A helper is the program
//! `docker-credential-<name>` on `PATH`, asked `get` with the registry on its stdin, given the user's
//! environment and a time limit. The first place that has credentials wins; a damaged file or a failing
//! helper is warned about and passed over. Looked up only when a registry asks, so an anonymous pull
//! never runs a helper.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use agmsg_runtime::caps::process::{find_on_path, run_bounded};

use crate::display;
use crate::log::host_log;

/// How long a credential helper may take (one that unlocks a keychain may ask the user).
const HELPER_TIME_LIMIT: Duration = Duration::from_secs(30);
/// The most of a credentials file that is read.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// A user name and its secret, for basic authentication; never printed.
pub struct Credentials {
    user: String,
    secret: String,
}

impl Credentials {
    /// `user:secret`, as basic authentication encodes it.
    pub fn basic(&self) -> String {
        format!("{}:{}", self.user, self.secret)
    }
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Credentials {{ user: {:?}, secret: <hidden> }}", self.user)
    }
}

/// What a lookup found, and where it looked (for the refusal when a registry wants credentials).
#[derive(Debug)]
pub struct Lookup {
    pub found: Option<(Credentials, String)>,
    pub looked: Vec<String>,
}

/// The credentials for `repository` on `registry`, with the environment read through `var`.
pub fn find(registry: &str, repository: &str, var: &dyn Fn(&str) -> Option<OsString>) -> Lookup {
    find_within(registry, repository, var, HELPER_TIME_LIMIT)
}

/// [`find`], a helper given `limit`.
fn find_within(registry: &str, repository: &str, var: &dyn Fn(&str) -> Option<OsString>, limit: Duration) -> Lookup {
    let mut looked = Vec::new();
    for (file, docker) in places(var) {
        looked.push(file.display().to_string());
        let bytes = match super::read_file(&file, MAX_FILE_BYTES) {
            Ok(bytes) => bytes,
            Err(_) if !file.exists() => continue,
            Err(e) => {
                host_log::warn(&format!("registry credentials: {}", e.message));
                continue;
            }
        };
        let config: serde_json::Value = match serde_json::from_slice(&bytes) {
            Ok(config @ serde_json::Value::Object(_)) => config,
            Ok(_) => {
                host_log::warn(&format!("registry credentials: {} is not a JSON object: passed over", file.display()));
                continue;
            }
            Err(e) => {
                host_log::warn(&format!("registry credentials: {} is not JSON ({e}): passed over", file.display()));
                continue;
            }
        };
        if let Some(found) = in_file(&config, docker, registry, repository, var, limit) {
            let place = match &found.1 {
                Some(helper) => format!("{} (its helper docker-credential-{helper})", file.display()),
                None => file.display().to_string(),
            };
            return Lookup { found: Some((found.0, place)), looked };
        }
    }
    Lookup { found: None, looked }
}

/// The files to look in, in order, each marked whether it is Docker's (only Docker's has `credsStore`).
fn places(var: &dyn Fn(&str) -> Option<OsString>) -> Vec<(PathBuf, bool)> {
    let set = |name: &str| var(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = set("HOME");
    let mut places = Vec::new();
    if let Some(file) = set("REGISTRY_AUTH_FILE") {
        places.push((file, false));
    }
    if let Some(runtime) = set("XDG_RUNTIME_DIR") {
        places.push((runtime.join("containers/auth.json"), false));
    }
    if let Some(config) = set("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config"))) {
        places.push((config.join("containers/auth.json"), false));
    }
    if let Some(docker) = set("DOCKER_CONFIG").or_else(|| home.as_ref().map(|h| h.join(".docker"))) {
        places.push((docker.join("config.json"), true));
    }
    places
}

/// The credentials one file gives, and the helper that gave them, if one did.
fn in_file(
    config: &serde_json::Value,
    docker: bool,
    registry: &str,
    repository: &str,
    var: &dyn Fn(&str) -> Option<OsString>,
    limit: Duration,
) -> Option<(Credentials, Option<String>)> {
    let helper = config["credHelpers"][registry].as_str().or_else(|| if docker { config["credsStore"].as_str() } else { None });
    if let Some(helper) = helper.filter(|h| !h.is_empty()) {
        return ask_helper(helper, registry, var, limit).map(|c| (c, Some(helper.to_owned())));
    }
    let auths = config["auths"].as_object()?;
    // The most specific key first: registry/a/b, registry/a, then the registry as Docker writes it.
    let mut keys: Vec<String> = Vec::new();
    let mut scope = format!("{registry}/{repository}");
    loop {
        keys.push(scope.clone());
        match scope.rsplit_once('/') {
            Some((parent, _)) => scope = parent.to_owned(),
            None => break,
        }
    }
    keys.extend([format!("https://{registry}"), format!("https://{registry}/v1/"), format!("http://{registry}")]);
    let entry = keys.iter().find_map(|k| auths.get(k))?;
    inline_entry(entry, registry).map(|c| (c, None))
}

/// An `auths` entry: `auth` (base64 of `user:secret`), else `username` and `password`.
fn inline_entry(entry: &serde_json::Value, registry: &str) -> Option<Credentials> {
    use base64::Engine;
    if let Some(auth) = entry["auth"].as_str().filter(|a| !a.is_empty()) {
        let decoded = base64::engine::general_purpose::STANDARD.decode(auth.trim()).ok().and_then(|d| String::from_utf8(d).ok());
        return match decoded.as_deref().and_then(|d| d.split_once(':')) {
            Some((user, secret)) => Some(Credentials { user: user.to_owned(), secret: secret.to_owned() }),
            None => {
                host_log::warn(&format!("registry credentials: the entry for {registry} is not base64 of user:password: passed over"));
                None
            }
        };
    }
    let user = entry["username"].as_str()?;
    let secret = entry["password"].as_str()?;
    Some(Credentials { user: user.to_owned(), secret: secret.to_owned() })
}

/// `docker-credential-<helper> get`, given `registry` on its stdin.
fn ask_helper(helper: &str, registry: &str, var: &dyn Fn(&str) -> Option<OsString>, limit: Duration) -> Option<Credentials> {
    let warn = |why: &str| host_log::warn(&format!("registry credentials: docker-credential-{}: {why}", display::line(helper)));
    // A name, never a path: the program is looked up on PATH.
    if !helper.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) || helper.starts_with(['.', '-']) {
        warn("not a helper name: passed over");
        return None;
    }
    let program = format!("docker-credential-{helper}");
    let Some(path) = find_on_path(&program, &var("PATH").unwrap_or_default()) else {
        warn("not found on PATH: passed over");
        return None;
    };
    let mut command = std::process::Command::new(path);
    command.arg("get").current_dir("/");
    let output = match run_bounded(&program, command, Some(registry.as_bytes()), limit) {
        Ok(output) => output,
        Err(e) => {
            warn(&format!("{e}: passed over"));
            return None;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    if output.status != Some(0) {
        // Docker's helpers say so on stdout when they hold nothing for the registry.
        if !stdout.contains("credentials not found") {
            let said = if output.stderr.is_empty() { &output.stdout } else { &output.stderr };
            warn(&format!("failed ({}): passed over", display::line(String::from_utf8_lossy(said).trim())));
        }
        return None;
    }
    let answer: serde_json::Value = match serde_json::from_str(&stdout) {
        Ok(answer) => answer,
        Err(e) => {
            warn(&format!("its answer is not JSON ({e}): passed over"));
            return None;
        }
    };
    match (answer["Username"].as_str(), answer["Secret"].as_str()) {
        // An identity token is exchanged through OAuth, which this host does not do.
        (Some("<token>"), _) => {
            warn("gave an identity token, which agmsg-host cannot use: passed over");
            None
        }
        (Some(user), Some(secret)) => Some(Credentials { user: user.to_owned(), secret: secret.to_owned() }),
        _ => {
            warn("its answer has no Username and Secret: passed over");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    struct Home {
        dir: tempfile::TempDir,
        vars: HashMap<&'static str, OsString>,
    }

    impl Home {
        fn new() -> Home {
            let dir = tempfile::tempdir().unwrap();
            let vars = HashMap::from([("HOME", dir.path().as_os_str().to_owned()), ("PATH", dir.path().join("bin").into_os_string())]);
            Home { dir, vars }
        }

        fn write(&self, rel: &str, text: &str) {
            let path = self.dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }

        /// A credential helper on PATH: a shell script.
        fn helper(&self, name: &str, script: &str) {
            let path = self.dir.path().join("bin").join(format!("docker-credential-{name}"));
            self.write(&format!("bin/docker-credential-{name}"), &format!("#!/bin/sh\n{script}\n"));
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }

        fn find(&self, registry: &str, repository: &str) -> Lookup {
            find(registry, repository, &|name| self.vars.get(name).cloned())
        }

        fn basic(&self, registry: &str, repository: &str) -> Option<String> {
            self.find(registry, repository).found.map(|(c, _)| c.basic())
        }
    }

    #[test]
    fn inline_entries_the_most_specific_first() {
        let home = Home::new();
        assert_eq!(home.basic("r.example", "a/b"), None);
        // base64("user:secret"), base64("org:pw")
        home.write(
            ".docker/config.json",
            r#"{"auths":{"r.example":{"auth":"dXNlcjpzZWNyZXQ="},"r.example/a":{"auth":"b3JnOnB3"},"https://other.example":{"username":"u","password":"p:q"}}}"#,
        );
        assert_eq!(home.basic("r.example", "a/b").as_deref(), Some("org:pw"));
        assert_eq!(home.basic("r.example", "c").as_deref(), Some("user:secret"));
        assert_eq!(home.basic("other.example", "x").as_deref(), Some("u:p:q"));
        assert_eq!(home.basic("third.example", "x"), None);
    }

    #[test]
    fn podman_files_come_before_dockers() {
        let mut home = Home::new();
        home.write(".docker/config.json", r#"{"auths":{"r.example":{"auth":"dXNlcjpzZWNyZXQ="}}}"#);
        home.write(".config/containers/auth.json", r#"{"auths":{"r.example":{"auth":"b3JnOnB3"}}}"#);
        let found = home.find("r.example", "x");
        assert_eq!(found.found.as_ref().map(|(c, _)| c.basic()).as_deref(), Some("org:pw"));
        assert!(found.found.unwrap().1.ends_with(".config/containers/auth.json"));
        home.write("given.json", r#"{"auths":{"r.example":{"username":"given","password":"pw"}}}"#);
        home.vars.insert("REGISTRY_AUTH_FILE", home.dir.path().join("given.json").into_os_string());
        assert_eq!(home.basic("r.example", "x").as_deref(), Some("given:pw"));
    }

    #[test]
    fn a_helper_is_asked_with_the_registry_on_its_stdin() {
        let home = Home::new();
        home.helper(
            "test",
            r#"[ "$1" = get ] || exit 3; read -r server; [ "$server" = r.example ] || { echo "credentials not found in native keychain"; exit 1; }; echo '{"ServerURL":"r.example","Username":"helped","Secret":"s3"}'"#,
        );
        home.write(".docker/config.json", r#"{"credHelpers":{"r.example":"test"},"auths":{"r.example":{"auth":"dXNlcjpzZWNyZXQ="}}}"#);
        let found = home.find("r.example", "x").found.unwrap();
        assert_eq!(found.0.basic(), "helped:s3");
        assert!(found.1.ends_with("(its helper docker-credential-test)"), "{}", found.1);
        // credsStore: the default helper, for every registry without one of its own.
        home.write(".docker/config.json", r#"{"credsStore":"test"}"#);
        assert_eq!(home.basic("r.example", "x").as_deref(), Some("helped:s3"));
        assert_eq!(home.basic("elsewhere.example", "x"), None);
    }

    #[test]
    fn what_cannot_be_used_is_passed_over() {
        let home = Home::new();
        for config in [
            "not json",
            "[1]",
            r#"{"credHelpers":{"r.example":"../../bin/sh"}}"#,
            r#"{"credHelpers":{"r.example":"absent"}}"#,
            r#"{"credHelpers":{"r.example":"token"}}"#,
            r#"{"credHelpers":{"r.example":"broken"}}"#,
            r#"{"auths":{"r.example":{"auth":"bm8gY29sb24="}}}"#,
        ] {
            home.helper("token", r#"echo '{"Username":"<token>","Secret":"refresh"}'"#);
            home.helper("broken", "echo nope >&2; exit 2");
            home.write(".docker/config.json", config);
            let lookup = home.find("r.example", "x");
            assert!(lookup.found.is_none(), "{config}: {lookup:?}");
            assert_eq!(lookup.looked.len(), 2, "{lookup:?}");
        }
    }

    #[test]
    fn a_helper_that_hangs_is_given_up() {
        let home = Home::new();
        home.helper("slow", "sleep 600");
        home.write(".docker/config.json", r#"{"credsStore":"slow"}"#);
        let started = std::time::Instant::now();
        let lookup = find_within("r.example", "x", &|name| home.vars.get(name).cloned(), Duration::from_millis(300));
        assert!(lookup.found.is_none(), "{lookup:?}");
        assert!(started.elapsed() < Duration::from_secs(60), "the helper was waited for: {:?}", started.elapsed());
    }
}
