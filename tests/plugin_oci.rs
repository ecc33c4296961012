//! Third-party drivers published to an OCI registry (issue 38), against a real registry on 127.0.0.1
//! (Debian's docker-registry) and a hostile one: `plugin publish` (signed with an SSH key made by
//! ssh-keygen), `plugin install oci://...` by tag and by digest, the consent naming the publisher or
//! saying the driver is unsigned, `plugin update` (same key and grants: no question; wider: asked again,
//! shown what widened), the air-gapped artifact file, and each tampering case refused with nothing
//! installed or changed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::registry::{Answer, Hostile, Registry, http};
use common::{Env, Run, fixture};

/// A package directory (the hostile storage fixture's component) named `name`, version `version`,
/// asking for the store, inert sockets and `extra` capability lines.
fn package(env: &Env, name: &str, version: &str, extra: &str) -> PathBuf {
    let dir = env.dir.path().join("packages").join(format!("{name}-{version}"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(fixture("hostile-storage"), dir.join("driver.wasm")).unwrap();
    std::fs::write(
        dir.join("agmsg-driver.toml"),
        format!(
            "name = \"{name}\"\naxis = \"storage\"\nversion = \"{version}\"\napi = \"1.0.0\"\n[capabilities]\nstore = true\ninert_sockets = true\n{extra}"
        ),
    )
    .unwrap();
    dir
}

/// An ed25519 key pair made by ssh-keygen under the test's directory: the private key's path.
fn keygen(env: &Env, name: &str) -> PathBuf {
    let key = env.dir.path().join(format!("{name}_ed25519"));
    let out = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"]).arg(&key).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    key
}

fn pub_key(key: &Path) -> String {
    format!("{}.pub", key.display())
}

fn plugin(env: &Env, args: &[&str]) -> Run {
    let mut all = vec!["plugin"];
    all.extend_from_slice(args);
    env.run(&all)
}

fn ok(run: Run) -> Run {
    assert_eq!(run.code, 0, "{run:?}");
    run
}

fn installed(env: &Env, name: &str) -> PathBuf {
    env.dir.path().join(".agents/agmsg/plugins/storage").join(name)
}

fn trust_file(env: &Env) -> Option<String> {
    std::fs::read_to_string(env.dir.path().join(".agents/agmsg/trusted-plugins.json")).ok()
}

fn installed_version(env: &Env, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(installed(env, name).join("agmsg-driver.toml")).ok()?;
    text.lines().find_map(|l| l.strip_prefix("version = \"")).map(|v| v.trim_end_matches('"').to_owned())
}

/// `sha256:...` after "digest " in a publish's output.
fn digest_in(text: &str) -> String {
    let at = text.find("digest sha256:").unwrap_or_else(|| panic!("no digest in {text}")) + "digest ".len();
    text[at..at + 71].to_owned()
}

/// Publish `dir` to `destination`, signed with `key` if given: the output.
fn publish(env: &Env, dir: &Path, destination: &str, key: Option<&Path>) -> String {
    let mut args = vec!["publish", dir.to_str().unwrap(), destination];
    if let Some(key) = key {
        args.extend(["--sign-key", key.to_str().unwrap()]);
    }
    ok(plugin(env, &args)).stdout
}

/// A refused install or update: nothing installed, the trust file unchanged.
fn assert_refused_unchanged(env: &Env, run: &Run, name: &str, expected: &str, before: (Option<String>, Option<String>)) {
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains(expected), "expected {expected:?}: {run:?}");
    assert_eq!((installed_version(env, name), trust_file(env)), before, "nothing installed or changed");
}

#[test]
fn publish_then_install_by_tag_and_by_digest_naming_the_publisher() {
    let Some(registry) = Registry::start() else { return };
    let env = Env::new();
    let alice = keygen(&env, "alice");
    let reference = format!("oci://{}/drivers/notes:1.0.0", registry.addr);
    let out = publish(&env, &package(&env, "notes", "1.0.0", ""), &reference, Some(&alice));
    assert!(out.contains("published storage/notes 1.0.0") && out.contains("signed by SHA256:"), "{out}");
    let digest = digest_in(&out);

    // Signed by a key the user has not pinned: refused, saying how to pin it.
    let run = plugin(&env, &["install", &reference, "--yes"]);
    assert_refused_unchanged(&env, &run, "notes", "signed by a key you have not pinned (SHA256:", (None, None));

    ok(plugin(&env, &["keys", "add", "alice", &pub_key(&alice)]));
    let listed = ok(plugin(&env, &["keys", "list"])).stdout;
    assert!(listed.starts_with("alice ") && listed.contains("SHA256:") && listed.contains("ssh-ed25519 "), "{listed}");

    // Without a terminal and without --yes: the consent is shown (the publisher named), nothing written.
    let run = plugin(&env, &["install", &reference]);
    assert_refused_unchanged(&env, &run, "notes", "rerun with --yes", (None, None));
    assert!(run.stderr.contains("Publisher: alice (SHA256:"), "{run:?}");
    assert!(run.stderr.contains("It asks for:\n  store"), "{run:?}");

    let run = ok(plugin(&env, &["install", &reference, "--yes"]));
    assert!(run.stdout.contains("installed storage/notes 1.0.0") && run.stdout.contains("signed by alice (SHA256:"), "{run:?}");
    assert!(run.stdout.contains(&format!("{reference}@{digest}")), "{run:?}");
    let listed = ok(plugin(&env, &["list", "--json"])).json();
    let row = listed.iter().find(|r| r["driver"] == "storage/notes" && r["state"] == "trusted").unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!((row["source"].as_str(), row["digest"].as_str()), (Some(reference.as_str()), Some(digest.as_str())), "{row}");
    assert!(row["publisher"].as_str().is_some_and(|k| k.starts_with("SHA256:")), "{row}");
    let text = ok(plugin(&env, &["list"])).stdout;
    assert!(text.contains(&format!("(from {reference}, signed by SHA256:")), "{text}");

    // By digest, after removing it.
    ok(plugin(&env, &["remove", "storage/notes"]));
    let by_digest = format!("oci://{}/drivers/notes@{digest}", registry.addr);
    let run = ok(plugin(&env, &["install", &by_digest, "--yes"]));
    assert!(run.stdout.contains("installed storage/notes 1.0.0"), "{run:?}");
    // A digest the registry does not hold.
    let missing = format!("oci://{}/drivers/notes@sha256:{}", registry.addr, "0".repeat(64));
    assert_ne!(plugin(&env, &["install", &missing, "--yes"]).code, 0);

    // Unsigned: the consent says so plainly.
    let unsigned = format!("oci://{}/drivers/plain:1.0.0", registry.addr);
    let out = publish(&env, &package(&env, "plain", "1.0.0", ""), &unsigned, None);
    assert!(out.contains("unsigned"), "{out}");
    let run = plugin(&env, &["install", &unsigned]);
    assert!(run.code != 0 && run.stderr.contains("Publisher: UNSIGNED"), "{run:?}");
    let run = ok(plugin(&env, &["install", &unsigned, "--yes"]));
    assert!(run.stdout.contains("unsigned"), "{run:?}");
}

#[test]
fn update_with_the_same_key_and_grants_asks_nothing_and_wider_grants_ask_again() {
    let Some(registry) = Registry::start() else { return };
    let env = Env::new();
    let alice = keygen(&env, "alice");
    let bob = keygen(&env, "bob");
    ok(plugin(&env, &["keys", "add", "alice", &pub_key(&alice)]));
    ok(plugin(&env, &["keys", "add", "bob", &pub_key(&bob)]));
    let reference = format!("oci://{}/drivers/memo:stable", registry.addr);
    publish(&env, &package(&env, "memo", "1.0.0", "env = [\"MEMO_A\"]\n"), &reference, Some(&alice));
    ok(plugin(&env, &["install", &reference, "--yes"]));
    let run = ok(plugin(&env, &["update", "storage/memo"]));
    assert!(run.stdout.contains("is up to date"), "{run:?}");

    // Same key, narrower: installed without asking (no terminal, no --yes).
    publish(&env, &package(&env, "memo", "1.1.0", ""), &reference, Some(&alice));
    let run = ok(plugin(&env, &["update", "storage/memo"]));
    assert!(run.stdout.contains("updated without asking") && run.stdout.contains("installed storage/memo 1.1.0"), "{run:?}");
    assert_eq!(installed_version(&env, "memo").as_deref(), Some("1.1.0"));

    // Same key and grants, but older than what is installed (a registry rolling the tag back): asked.
    publish(&env, &package(&env, "memo", "1.0.9", ""), &reference, Some(&alice));
    let before = (installed_version(&env, "memo"), trust_file(&env));
    let run = plugin(&env, &["update", "storage/memo"]);
    assert_refused_unchanged(&env, &run, "memo", "It is version 1.0.9, not newer than the installed 1.1.0.", before);

    // Same key, a new variable: asked again, shown exactly what widened; refused without a terminal.
    publish(&env, &package(&env, "memo", "1.2.0", "env = [\"MEMO_A\", \"MEMO_B\"]\n"), &reference, Some(&alice));
    let before = (installed_version(&env, "memo"), trust_file(&env));
    let run = plugin(&env, &["update", "storage/memo"]);
    assert_refused_unchanged(&env, &run, "memo", "rerun with --yes", before);
    assert!(run.stderr.contains("it now also asks for:\n  + env:MEMO_A\n  + env:MEMO_B\n"), "{run:?}");
    assert!(run.stderr.contains("Publisher: alice (SHA256:"), "{run:?}");
    let run = ok(plugin(&env, &["update", "storage/memo", "--yes"]));
    assert!(run.stdout.contains("installed storage/memo 1.2.0"), "{run:?}");

    // Another pinned key, nothing wider: asked again, told the key changed.
    publish(&env, &package(&env, "memo", "1.3.0", "env = [\"MEMO_A\", \"MEMO_B\"]\n"), &reference, Some(&bob));
    let before = (installed_version(&env, "memo"), trust_file(&env));
    let run = plugin(&env, &["update", "storage/memo"]);
    assert_refused_unchanged(&env, &run, "memo", "It is signed by a DIFFERENT key: bob (SHA256:", before);
    // Unsigned now: asked again, told so.
    publish(&env, &package(&env, "memo", "1.4.0", "env = [\"MEMO_A\", \"MEMO_B\"]\n"), &reference, None);
    let before = (installed_version(&env, "memo"), trust_file(&env));
    let run = plugin(&env, &["update", "storage/memo"]);
    assert_refused_unchanged(&env, &run, "memo", "It is UNSIGNED now (it was signed by alice", before);
}

#[test]
fn an_artifact_file_installs_air_gapped_with_the_same_verification() {
    if !common::registry::tools_present() {
        return;
    }
    let env = Env::new();
    let alice = keygen(&env, "alice");
    let mallory = keygen(&env, "mallory");
    ok(plugin(&env, &["keys", "add", "alice", &pub_key(&alice)]));
    let file = env.dir.path().join("notes.tar");
    let out = publish(&env, &package(&env, "notes", "1.0.0", ""), file.to_str().unwrap(), Some(&alice));
    assert!(out.contains("an OCI image layout"), "{out}");
    let forged = env.dir.path().join("forged.tar");
    publish(&env, &package(&env, "notes", "1.0.0", ""), forged.to_str().unwrap(), Some(&mallory));

    let run = plugin(&env, &["install", forged.to_str().unwrap(), "--yes"]);
    assert_refused_unchanged(&env, &run, "notes", "signed by a key you have not pinned", (None, None));
    let run = ok(plugin(&env, &["install", &format!("{}:1.0.0", file.display()), "--yes"]));
    assert!(run.stdout.contains("signed by alice"), "{run:?}");
}

/// The image manifest `reference` names in `registry`, parsed.
fn manifest_of(registry: &Registry, repository: &str, tag: &str) -> serde_json::Value {
    let (status, _, body) = http(
        &registry.addr,
        "GET",
        &format!("/v2/{repository}/manifests/{tag}"),
        &[("Accept", "application/vnd.oci.image.manifest.v1+json")],
        b"",
    )
    .unwrap();
    assert_eq!(status, 200);
    serde_json::from_slice(&body).unwrap()
}

fn layer(manifest: &serde_json::Value, media_type: &str) -> serde_json::Value {
    manifest["layers"].as_array().unwrap().iter().find(|l| l["mediaType"] == media_type).unwrap().clone()
}

/// A registry, a test home with alice's key pinned, and alice's signed `notes` 1.0.0 published as
/// `drivers/notes:1.0.0`; `None`: skipped.
struct Published {
    registry: Registry,
    env: Env,
    alice: PathBuf,
}

impl Published {
    fn new() -> Option<Published> {
        let registry = Registry::start()?;
        let env = Env::new();
        let alice = keygen(&env, "alice");
        ok(plugin(&env, &["keys", "add", "alice", &pub_key(&alice)]));
        publish(&env, &package(&env, "notes", "1.0.0", ""), &format!("oci://{}/drivers/notes:1.0.0", registry.addr), Some(&alice));
        Some(Published { registry, env, alice })
    }

    fn at(&self, repo: &str) -> String {
        format!("oci://{}/{repo}", self.registry.addr)
    }

    fn manifest(&self) -> serde_json::Value {
        manifest_of(&self.registry, "drivers/notes", "1.0.0")
    }

    fn wasm_digest(&self) -> String {
        layer(&self.manifest(), "application/wasm")["digest"].as_str().unwrap().to_owned()
    }

    /// `plugin install <reference> --yes` is refused with `expected`, nothing installed or changed.
    fn refused(&self, reference: &str, expected: &str) {
        let run = plugin(&self.env, &["install", reference, "--yes"]);
        assert_refused_unchanged(&self.env, &run, "notes", expected, (None, None));
        assert!(!installed(&self.env, "notes").exists());
    }
}

#[test]
fn tampered_a_signature_by_another_key_is_refused() {
    let Some(p) = Published::new() else { return };
    let mallory = keygen(&p.env, "mallory");
    publish(&p.env, &package(&p.env, "notes", "1.0.0", ""), &p.at("drivers/forged:1.0.0"), Some(&mallory));
    p.refused(&p.at("drivers/forged:1.0.0"), "signed by a key you have not pinned");
    ok(plugin(&p.env, &["install", &p.at("drivers/notes:1.0.0"), "--yes"]));
}

#[test]
fn tampered_a_blob_that_is_not_its_digest_is_refused() {
    let Some(p) = Published::new() else { return };
    // Corrupted in the registry's own storage (which serves it as it is).
    let file = p.registry.blob_file(&p.wasm_digest());
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    p.refused(&p.at("drivers/notes:1.0.0"), "answered something else for its component");
}

#[test]
fn tampered_a_manifest_and_a_component_from_different_publications_are_refused() {
    let Some(p) = Published::new() else { return };
    // Another publication by alice, with another component.
    let other = package(&p.env, "notes", "2.0.0", "");
    let mut wasm = std::fs::read(other.join("driver.wasm")).unwrap();
    wasm.extend_from_slice(&[0, 6, 5, b'o', b't', b'h', b'e', b'r']);
    std::fs::write(other.join("driver.wasm"), &wasm).unwrap();
    publish(&p.env, &other, &p.at("drivers/notes:2.0.0"), Some(&p.alice));
    // 1.0.0's manifest, signature and config with 2.0.0's component, put in the registry as a tag.
    let mut mixed = p.manifest();
    let theirs = layer(&manifest_of(&p.registry, "drivers/notes", "2.0.0"), "application/wasm");
    let layers = mixed["layers"].as_array_mut().unwrap();
    let at = layers.iter().position(|l| l["mediaType"] == "application/wasm").unwrap();
    layers[at] = theirs;
    let (status, _, body) = http(
        &p.registry.addr,
        "PUT",
        "/v2/drivers/notes/manifests/mixed",
        &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
        &serde_json::to_vec(&mixed).unwrap(),
    )
    .unwrap();
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    p.refused(&p.at("drivers/notes:mixed"), "does not cover this component and manifest");
}

#[test]
fn tampered_a_signature_made_for_something_else_is_refused() {
    let Some(p) = Published::new() else { return };
    // alice's own key, over the very statement, but signed for git (-n git), as a commit would be.
    let mut image = p.manifest();
    let digest = |media_type: &str| layer(&image, media_type)["digest"].as_str().unwrap().to_owned();
    let statement = format!(
        "agmsg-driver-signature-v1\naxis storage\nname notes\nversion 1.0.0\ncomponent {}\nmanifest {}\n",
        digest("application/wasm"),
        digest("application/vnd.agmsg.driver.manifest.v1+toml")
    );
    let mut child = Command::new("ssh-keygen")
        .args(["-q", "-Y", "sign", "-n", "git", "-f"])
        .arg(&p.alice)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), statement.as_bytes()).unwrap();
    let signed = child.wait_with_output().unwrap();
    assert!(signed.status.success(), "{signed:?}");
    let signature = push_blob(&p.registry, "drivers/notes", "application/vnd.agmsg.driver.signature.v1+sshsig", &signed.stdout);
    let layers = image["layers"].as_array_mut().unwrap();
    let at = layers.iter().position(|l| l["mediaType"] == "application/vnd.agmsg.driver.signature.v1+sshsig").unwrap();
    layers[at] = signature;
    let (status, _, body) = http(
        &p.registry.addr,
        "PUT",
        "/v2/drivers/notes/manifests/git",
        &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
        &serde_json::to_vec(&image).unwrap(),
    )
    .unwrap();
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    p.refused(&p.at("drivers/notes:git"), "was made for \"git\", not for an agmsg driver");
}

/// Put `bytes` in `registry`'s `repository` as a blob: its descriptor.
fn push_blob(registry: &Registry, repository: &str, media_type: &str, bytes: &[u8]) -> serde_json::Value {
    let digest = format!("sha256:{}", agmsg_host::plugin::sha256_hex(bytes));
    let (status, headers, _) = http(&registry.addr, "POST", &format!("/v2/{repository}/blobs/uploads/"), &[], b"").unwrap();
    assert_eq!(status, 202);
    let location = headers.iter().find(|(k, _)| k == "location").map(|(_, v)| v.clone()).unwrap();
    let location = location.strip_prefix(&format!("http://{}", registry.addr)).unwrap_or(&location).to_owned();
    let sep = if location.contains('?') { '&' } else { '?' };
    let path = format!("{location}{sep}digest={}", digest.replace(':', "%3A"));
    let (status, _, body) = http(&registry.addr, "PUT", &path, &[("Content-Type", "application/octet-stream")], bytes).unwrap();
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    serde_json::json!({ "mediaType": media_type, "digest": digest, "size": bytes.len() })
}

#[test]
fn a_name_inside_an_artifact_never_becomes_a_path() {
    let Some(p) = Published::new() else { return };
    // An artifact pushed by hand (no publish to refuse it): its agmsg-driver.toml names the driver
    // "../../../../escape", unsigned.
    let toml = b"name = \"../../../../escape\"\naxis = \"storage\"\nversion = \"1.0.0\"\napi = \"1.0.0\"\n[capabilities]\nstore = true\ninert_sockets = true\n";
    let repo = "drivers/escape";
    let config = push_blob(&p.registry, repo, "application/vnd.wasm.config.v0+json", b"{}");
    let wasm = push_blob(&p.registry, repo, "application/wasm", &std::fs::read(fixture("hostile-storage")).unwrap());
    let manifest = push_blob(&p.registry, repo, "application/vnd.agmsg.driver.manifest.v1+toml", toml);
    let image = serde_json::json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config, "layers": [wasm, manifest],
    });
    let (status, _, body) = http(
        &p.registry.addr,
        "PUT",
        &format!("/v2/{repo}/manifests/1"),
        &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
        &serde_json::to_vec(&image).unwrap(),
    )
    .unwrap();
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    p.refused(&p.at(&format!("{repo}:1")), "name must match");
    let escaped: Vec<_> = walk(p.env.dir.path().parent().unwrap()).into_iter().filter(|f| f.ends_with("escape")).collect();
    assert!(escaped.is_empty(), "written outside the plugin directory: {escaped:?}");
}

/// Every path under `dir` (not following links), at most three levels down.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![(dir.to_owned(), 0)];
    while let Some((dir, depth)) = todo.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if depth < 3 && entry.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push((path.clone(), depth + 1));
            }
            found.push(path);
        }
    }
    found
}

/// A hostile registry serving `p`'s artifact, with `blob` deciding what a blob request gets (`None`:
/// the real blob).
fn hostile(p: &Published, blob: impl Fn(&str) -> Option<Answer> + Send + 'static) -> Hostile {
    let manifest = serde_json::to_vec(&p.manifest()).unwrap();
    let real = p.registry.addr.clone();
    Hostile::start(move |_, path| {
        if path.contains("/manifests/") {
            return Answer::Bytes(
                200,
                vec![("Content-Type".into(), "application/vnd.oci.image.manifest.v1+json".into())],
                manifest.clone(),
            );
        }
        let digest = path.rsplit('/').next().unwrap_or("").to_owned();
        if let Some(answer) = blob(&digest) {
            return answer;
        }
        let (status, _, body) = http(&real, "GET", &format!("/v2/drivers/notes/blobs/{digest}"), &[], b"").unwrap();
        Answer::Bytes(status, vec![], body)
    })
}

/// A registry in front of the real one that wants a bearer token, which its token service gives for
/// `basic` (base64 of user:secret) only.
fn token_registry(p: &Published, basic: &'static str) -> Hostile {
    let real = p.registry.addr.clone();
    Hostile::start_seeing_headers("127.0.0.1", move |_, path, head| {
        let addr = head.lines().find_map(|l| l.strip_prefix("Host: ").or_else(|| l.strip_prefix("host: "))).unwrap_or("").trim().to_owned();
        if path.starts_with("/token?") {
            if !head.contains(&format!("Basic {basic}")) || !path.contains("scope=repository%3Adrivers%2Fnotes%3Apull") {
                return Answer::Bytes(401, vec![], b"no".to_vec());
            }
            return Answer::Bytes(200, vec![], br#"{"token":"t0k3n"}"#.to_vec());
        }
        if !head.contains("Authorization: Bearer t0k3n") && !head.contains("authorization: Bearer t0k3n") {
            let challenge = format!(r#"Bearer realm="http://{addr}/token",service="test",scope="repository:drivers/notes:pull""#);
            return Answer::Bytes(401, vec![("WWW-Authenticate".into(), challenge)], vec![]);
        }
        let accept = [("Accept", "application/vnd.oci.image.manifest.v1+json")];
        let (status, headers, body) = http(&real, "GET", path, &accept, b"").unwrap();
        let kept = headers.into_iter().filter(|(k, _)| k == "content-type" || k == "docker-content-digest").collect();
        Answer::Bytes(status, kept, body)
    })
}

#[test]
fn a_registry_asking_for_a_token_gets_one_with_the_docker_config_credentials() {
    let Some(p) = Published::new() else { return };
    // base64("user:secret")
    let server = token_registry(&p, "dXNlcjpzZWNyZXQ=");
    let reference = format!("oci://{}/drivers/notes:1.0.0", server.addr);
    let docker = p.env.dir.path().join("docker");
    std::fs::create_dir_all(&docker).unwrap();
    let install = |env: &Env| -> Run {
        env.cmd().env("DOCKER_CONFIG", &docker).args(["plugin", "install", &reference, "--yes"]).output().unwrap().into()
    };
    // No credentials: the token service refuses, saying where they were looked for, and nothing is
    // installed.
    let run = install(&p.env);
    let looked = format!(
        "token service answered 401 Unauthorized (no credentials for it in {}",
        p.env.dir.path().join(".config/containers/auth.json").display()
    );
    assert_refused_unchanged(&p.env, &run, "notes", &looked, (None, None));
    assert!(run.stderr.contains(&docker.join("config.json").display().to_string()), "{run:?}");
    let config = format!(r#"{{"auths": {{"{}": {{"auth": "dXNlcjpzZWNyZXQ="}}}}}}"#, server.addr);
    std::fs::write(docker.join("config.json"), config).unwrap();
    let run = ok(install(&p.env));
    assert!(run.stdout.contains("installed storage/notes 1.0.0") && run.stdout.contains("signed by alice"), "{run:?}");
}

/// Docker's credential helpers (`credHelpers`, `credsStore`): the program on PATH is asked for the
/// registry's credentials; podman's auth file, read before Docker's, names a helper of its own.
#[test]
fn a_credential_helper_gives_the_credentials() {
    let Some(p) = Published::new() else { return };
    // base64("helped:s3")
    let server = token_registry(&p, "aGVscGVkOnMz");
    let reference = format!("oci://{}/drivers/notes:1.0.0", server.addr);
    let bin = p.env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let helper = bin.join("docker-credential-agmsgtest");
    let registry = server.addr.clone();
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 3\nread -r server\n[ \"$server\" = '{registry}' ] || {{ echo 'credentials not found in native keychain'; exit 1; }}\necho '{{\"ServerURL\":\"{registry}\",\"Username\":\"helped\",\"Secret\":\"s3\"}}'\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&helper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let auth_file = p.env.dir.path().join("auth.json");
    std::fs::write(&auth_file, format!(r#"{{"credHelpers": {{"{registry}": "agmsgtest"}}}}"#)).unwrap();
    let run = ok(p
        .env
        .cmd()
        .env("PATH", &path)
        .env("REGISTRY_AUTH_FILE", &auth_file)
        .args(["plugin", "install", &reference, "--yes"])
        .output()
        .unwrap()
        .into());
    assert!(run.stdout.contains("installed storage/notes 1.0.0"), "{run:?}");
}

#[test]
fn hostile_a_redirect_to_another_host_is_refused() {
    let Some(p) = Published::new() else { return };
    // Another loopback address: another host.
    let elsewhere = Hostile::start_on("127.0.0.2", |_, _| Answer::Bytes(404, vec![], vec![]));
    let target = format!("http://{}/blob", elsewhere.addr);
    let wasm = p.wasm_digest();
    let server = hostile(&p, move |d| (d == wasm).then(|| Answer::Bytes(307, vec![("Location".into(), target.clone())], vec![])));
    p.refused(
        &format!("oci://{}/drivers/notes:1.0.0", server.addr),
        &format!("redirected to http://{}: another host, refused", elsewhere.addr),
    );
}

#[test]
fn hostile_an_answer_longer_than_the_blob_is_cut_and_refused() {
    let Some(p) = Published::new() else { return };
    let wasm = p.wasm_digest();
    let server = hostile(&p, move |d| (d == wasm).then_some(Answer::Endless(512 << 20)));
    p.refused(&format!("oci://{}/drivers/notes:1.0.0", server.addr), "the answer is larger than");
}

#[test]
fn hostile_a_stalled_answer_is_given_up_in_time() {
    let Some(p) = Published::new() else { return };
    let wasm = p.wasm_digest();
    let server = hostile(&p, move |d| (d == wasm).then_some(Answer::Stall(std::time::Duration::from_secs(12))));
    let started = std::time::Instant::now();
    let reference = format!("oci://{}/drivers/notes:1.0.0", server.addr);
    let run: Run = p.env.cmd().env("AGMSG_OCI_TIMEOUT_SECS", "2").args(["plugin", "install", &reference, "--yes"]).output().unwrap().into();
    assert_refused_unchanged(&p.env, &run, "notes", "in time", (None, None));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "given up after {:?}", started.elapsed());
}

#[test]
fn hostile_an_oversize_component_is_refused_before_downloading() {
    let Some(p) = Published::new() else { return };
    let mut huge = p.manifest();
    let layers = huge["layers"].as_array_mut().unwrap();
    let at = layers.iter().position(|l| l["mediaType"] == "application/wasm").unwrap();
    layers[at]["size"] = serde_json::json!(300u64 << 20);
    let huge = serde_json::to_vec(&huge).unwrap();
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let blobs = asked.clone();
    let server = Hostile::start(move |_, path| {
        if path.contains("/manifests/") {
            return Answer::Bytes(200, vec![], huge.clone());
        }
        blobs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Answer::Endless(300 << 20)
    });
    p.refused(&format!("oci://{}/drivers/notes:1.0.0", server.addr), "more than the 256 MiB allowed");
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0, "no blob was asked for");
}

#[test]
fn hostile_a_manifest_that_is_not_the_digest_asked_for_is_refused() {
    let Some(p) = Published::new() else { return };
    let server = hostile(&p, |_| None);
    p.refused(&format!("oci://{}/drivers/notes@sha256:{}", server.addr, "1".repeat(64)), "not the sha256:1111");
}

/// An agent type's directory, as its author ships it, under `at`: `type.conf` with `conf` appended, and
/// its template.
fn kiro_type(env: &Env, at: &str, conf: &str, template: &str) -> PathBuf {
    let dir = env.dir.path().join("types-src").join(at).join("kiro");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("type.conf"),
        format!("name=kiro\nspawnable=yes\ntemplate=template.md\ndetect=KIRO_SESSION_ID\nhooks_file=.kiro/hooks.json\n{conf}"),
    )
    .unwrap();
    std::fs::write(dir.join("template.md"), template).unwrap();
    dir
}

/// The state `plugin list --json` gives `driver` (`types/kiro`).
fn listed_state(env: &Env, driver: &str) -> Option<String> {
    let run = ok(plugin(env, &["list", "--json"]));
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .rfind(|row| row["driver"] == driver)
        .and_then(|row| row["state"].as_str().map(str::to_owned))
}

/// An agent type published (issue 38): its directory travels as one tar layer, signed over its name,
/// version and the tar's digest. Installed by tag it is trusted as a directory install trusts it; an
/// update by the same key, newer, with the same type.conf installs without asking; a changed launch
/// word asks again, shown the lines that changed; the air-gapped form (a layout tar) installs too.
#[test]
fn an_agent_type_is_published_installed_and_updated() {
    let Some(registry) = Registry::start() else { return };
    let env = Env::new();
    let alice = keygen(&env, "alice");
    ok(plugin(&env, &["keys", "add", "alice", &pub_key(&alice)]));
    let reference = format!("oci://{}/types/kiro:stable", registry.addr);
    let publish_type = |dir: &Path, destination: &str, version: &str| {
        ok(plugin(&env, &["publish", dir.to_str().unwrap(), destination, "--version", version, "--sign-key", alice.to_str().unwrap()]))
            .stdout
    };
    let out = publish_type(&kiro_type(&env, "a", "cli=kiro\n", "v1\n"), &reference, "1.0.0");
    assert!(out.contains("published types/kiro 1.0.0") && out.contains("signed by SHA256:"), "{out}");
    // Without --version, a tag that is not a version is refused.
    let run = plugin(&env, &["publish", kiro_type(&env, "a", "cli=kiro\n", "v1\n").to_str().unwrap(), &reference]);
    assert!(run.code == 2 && run.stderr.contains("semantic version"), "{run:?}");

    let run = plugin(&env, &["install", &reference]);
    assert!(run.code != 0 && run.stderr.contains("Publisher: alice (SHA256:") && run.stderr.contains("rerun with --yes"), "{run:?}");
    assert_eq!(listed_state(&env, "types/kiro"), None);
    let run = ok(plugin(&env, &["install", &reference, "--yes"]));
    assert!(run.stdout.contains("installed types/kiro 1.0.0") && run.stdout.contains("signed by alice"), "{run:?}");
    let dir = env.dir.path().join(".agents/agmsg/plugins/types/kiro");
    assert_eq!(std::fs::read_to_string(dir.join("template.md")).unwrap(), "v1\n");
    assert!(listed_state(&env, "types/kiro").is_some_and(|s| s.starts_with("trusted")));
    assert!(ok(plugin(&env, &["update", "types/kiro"])).stdout.contains("is up to date"));

    // Same key, newer, the same type.conf (a new template): installed without asking.
    publish_type(&kiro_type(&env, "b", "cli=kiro\n", "v2\n"), &reference, "1.1.0");
    let run = ok(plugin(&env, &["update", "types/kiro"]));
    assert!(run.stdout.contains("updated without asking") && run.stdout.contains("installed types/kiro 1.1.0"), "{run:?}");
    assert_eq!(std::fs::read_to_string(dir.join("template.md")).unwrap(), "v2\n");

    // A new launch word: asked again, shown exactly what changed; refused without a terminal.
    publish_type(&kiro_type(&env, "c", "cli=kiro-next\n", "v2\n"), &reference, "1.2.0");
    let run = plugin(&env, &["update", "types/kiro"]);
    assert!(run.code != 0 && run.stderr.contains("Its type.conf changed:\n  - cli=kiro\n  + cli=kiro-next\n"), "{run:?}");
    assert!(run.stderr.contains("rerun with --yes"), "{run:?}");
    assert_eq!(std::fs::read_to_string(dir.join("type.conf")).unwrap().lines().find(|l| l.starts_with("cli=")), Some("cli=kiro"));
    assert!(ok(plugin(&env, &["update", "types/kiro", "--yes"])).stdout.contains("installed types/kiro 1.2.0"));

    // Air-gapped: the same publication as an OCI image layout file, installed elsewhere.
    let file = env.dir.path().join("kiro.tar");
    let out = publish_type(&kiro_type(&env, "d", "cli=kiro\n", "v3\n"), file.to_str().unwrap(), "2.0.0");
    assert!(out.contains("an OCI image layout; tag 2.0.0"), "{out}");
    let elsewhere = Env::new();
    ok(plugin(&elsewhere, &["keys", "add", "alice", &pub_key(&alice)]));
    let run = ok(plugin(&elsewhere, &["install", file.to_str().unwrap(), "--yes"]));
    assert!(run.stdout.contains("installed types/kiro 2.0.0") && run.stdout.contains("signed by alice"), "{run:?}");
}

/// A type artifact pushed by hand, hostile three ways: its tar holds a link to a file outside (or a
/// path climbing out), or its config names the type with terminal escapes. Each is refused, its words
/// inert (no escape reaches the terminal), nothing installed anywhere.
#[test]
fn hostile_a_type_artifact_with_a_link_a_climbing_path_or_escapes_is_refused() {
    let Some(p) = Published::new() else { return };
    let tar_of = |entries: &[(&str, tar::EntryType, &[u8])]| {
        let mut b = tar::Builder::new(Vec::new());
        for (path, kind, body) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_entry_type(*kind);
            h.set_size(body.len() as u64);
            h.set_mode(0o644);
            if *kind == tar::EntryType::Symlink {
                h.set_link_name("/etc/passwd").unwrap();
                h.set_size(0);
            }
            // Written raw: the tar crate's own checks would refuse a climbing path.
            h.as_old_mut().name[..path.len()].copy_from_slice(path.as_bytes());
            h.set_cksum();
            b.append(&h, if *kind == tar::EntryType::Symlink { &b""[..] } else { *body }).unwrap();
        }
        b.into_inner().unwrap()
    };
    let conf: &[u8] = b"name=kiro\ncli=kiro\ntemplate=template.md\n";
    let cases: [(&str, &str, Vec<u8>, &str); 3] = [
        (
            "types/linked",
            "kiro",
            tar_of(&[("type.conf", tar::EntryType::Regular, conf), ("template.md", tar::EntryType::Symlink, b"")]),
            "template.md is not a regular file or a directory",
        ),
        (
            "types/climbing",
            "kiro",
            tar_of(&[("type.conf", tar::EntryType::Regular, conf), ("../../escape", tar::EntryType::Regular, b"x")]),
            "\"../../escape\" is not a path inside the package",
        ),
        (
            "types/escapes",
            "kiro\u{1b}]2;pwned\u{7}",
            tar_of(&[("type.conf", tar::EntryType::Regular, conf), ("template.md", tar::EntryType::Regular, b"t")]),
            "the type's name",
        ),
    ];
    for (repo, name, tar, expected) in cases {
        let config = serde_json::to_vec(&serde_json::json!({ "name": name, "version": "1.0.0" })).unwrap();
        let config = push_blob(&p.registry, repo, "application/vnd.agmsg.type.config.v1+json", &config);
        let layer = push_blob(&p.registry, repo, "application/vnd.agmsg.type.v1.tar", &tar);
        let image = serde_json::json!({
            "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": config, "layers": [layer],
        });
        let (status, _, body) = http(
            &p.registry.addr,
            "PUT",
            &format!("/v2/{repo}/manifests/1.0.0"),
            &[("Content-Type", "application/vnd.oci.image.manifest.v1+json")],
            &serde_json::to_vec(&image).unwrap(),
        )
        .unwrap();
        assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
        let run = plugin(&p.env, &["install", &p.at(&format!("{repo}:1.0.0")), "--yes"]);
        assert!(run.code != 0 && run.stderr.contains(expected), "{repo}: {run:?}");
        assert!(run.stderr.contains("unsigned") || run.stderr.contains("refusing"), "{repo}: {run:?}");
        assert!(!run.stderr.contains('\u{1b}') && !run.stdout.contains('\u{1b}'), "{repo}: an escape reached the terminal: {run:?}");
        assert!(!p.env.dir.path().join(".agents/agmsg/plugins/types").exists(), "{repo}: something was installed");
    }
    let escaped: Vec<_> = walk(p.env.dir.path().parent().unwrap()).into_iter().filter(|f| f.ends_with("escape")).collect();
    assert!(escaped.is_empty(), "written outside the plugin directory: {escaped:?}");
}
