//! Builds the bundled driver components (wasm32-wasip2) and embeds them in the host binary, with their
//! sha256 computed here so that the host never hashes its own drivers at run time, and with their
//! machine code, precompiled here with the host's own engine configuration, so that no bundled driver
//! is ever compiled at run time (a first call costs what a warm one does, with or without a cache).
//!
//! The drivers are built by a nested cargo in a separate target directory (`target/wasm`): the outer
//! cargo holds the lock of the main one.
//!
//! It also embeds the guest SDK's sources (and the local crates it builds from) that `driver new`
//! writes into a new project ([`embed_sdk`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

#[path = "../runtime/src/engine_config.rs"]
mod engine_config;

/// A driver built into the host: a crate under `drivers/` whose Cargo.toml says so.
struct Bundled {
    /// Its axis's name (`storage`); the generated code names `Axis::Storage`, so a driver of an axis the
    /// host does not know is a compile error.
    axis: String,
    name: String,
    package: String,
    /// Its agmsg manifest file (a terminal driver's `terminal.conf`), embedded beside it.
    manifest: Option<PathBuf>,
    /// `default = true`: the axis's driver when nothing selects one (at most one per axis).
    default: bool,
}

impl Bundled {
    fn wasm_file(&self) -> String {
        format!("{}.wasm", self.package.replace('-', "_"))
    }

    /// `Axis::<Variant>` for the generated code.
    fn axis_variant(&self) -> String {
        let mut chars = self.axis.chars();
        chars.next().map(|c| c.to_ascii_uppercase().to_string() + chars.as_str()).unwrap_or_default()
    }
}

/// Every workspace member under `drivers/` (the root Cargo.toml lists them by name) with a
/// `[package.metadata.agmsg] bundled = { axis, name[, manifest] }` table, by axis and then name: adding a
/// bundled driver is adding its folder and its line in the members. A directory under `drivers/` that is
/// not listed (a driver being written) is not read.
fn bundled_drivers(workspace: &Path) -> Vec<Bundled> {
    let mut found = Vec::new();
    for dir in driver_members(workspace) {
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_else(|e| panic!("{}/Cargo.toml: {e}", dir.display()));
        let manifest: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}/Cargo.toml: {e}", dir.display()));
        let package = &manifest["package"];
        let Some(bundled) = package.get("metadata").and_then(|m| m.get("agmsg")).and_then(|a| a.get("bundled")) else { continue };
        let field = |key: &str| bundled.get(key).and_then(|v| v.as_str()).map(str::to_owned);
        let missing = |key: &str| panic!("{}/Cargo.toml: [package.metadata.agmsg] bundled needs `{key}`", dir.display());
        found.push(Bundled {
            axis: field("axis").unwrap_or_else(|| missing("axis")),
            name: field("name").unwrap_or_else(|| missing("name")),
            package: package["name"].as_str().expect("a package has a name").to_owned(),
            manifest: field("manifest").map(|file| dir.join(file)),
            default: bundled
                .get("default")
                .map(|v| v.as_bool().unwrap_or_else(|| panic!("{}/Cargo.toml: `default` is true or false", dir.display())))
                .unwrap_or(false),
        });
    }
    found.sort_by(|a, b| (&a.axis, &a.name).cmp(&(&b.axis, &b.name)));
    for pair in found.windows(2) {
        if pair[0].axis == pair[1].axis && pair[0].default && pair[1].default {
            panic!("bundled drivers {} and {} are both the {} default", pair[0].name, pair[1].name, pair[0].axis);
        }
    }
    found
}

/// The directories of the root workspace's members under `drivers/`.
fn driver_members(workspace: &Path) -> Vec<PathBuf> {
    let root = workspace.join("Cargo.toml");
    let text = std::fs::read_to_string(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let manifest: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let members = manifest["workspace"]["members"].as_array().expect("workspace.members is a list");
    members
        .iter()
        .map(|m| m.as_str().expect("a workspace member is a path"))
        .filter(|m| m.starts_with("drivers/"))
        .map(|m| workspace.join(m))
        .collect()
}

/// The local crates the crate at `dir` builds from, transitively, into `found`: its manifest's path
/// dependencies (normal, build and per-target; not dev), and its `workspace = true` ones that the root's
/// `[workspace.dependencies]` gives a path. A driver embeds their code, so their sources are watched.
fn path_dependencies(workspace: &Path, workspace_deps: &toml::Table, dir: &Path, found: &mut BTreeSet<PathBuf>) {
    let file = dir.join("Cargo.toml");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let manifest: toml::Table = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let kinds = ["dependencies", "build-dependencies"];
    let targets = manifest.get("target").and_then(|t| t.as_table()).into_iter().flat_map(|t| t.values());
    let tables = kinds.iter().filter_map(|k| manifest.get(*k)).chain(targets.flat_map(|t| kinds.iter().filter_map(move |k| t.get(*k))));
    for (name, spec) in tables.filter_map(|t| t.as_table()).flat_map(|t| t.iter()) {
        let path = match spec.get("path").and_then(|p| p.as_str()) {
            Some(path) => dir.join(path),
            None if spec.get("workspace").and_then(|w| w.as_bool()) == Some(true) => {
                match workspace_deps.get(name).and_then(|d| d.get("path")).and_then(|p| p.as_str()) {
                    Some(path) => workspace.join(path),
                    None => continue,
                }
            }
            None => continue,
        };
        let path = path.canonicalize().unwrap_or_else(|e| panic!("{}: dependency {name} at {}: {e}", file.display(), path.display()));
        if found.insert(path.clone()) {
            path_dependencies(workspace, workspace_deps, &path, found);
        }
    }
}

/// The guest SDK crate and the local crates it builds from (the contract), embedded in the binary so
/// that `driver new` writes them into a new project (`vendor/<package>/`): a project builds with the
/// binary and a Rust toolchain only, never from this build tree (issue 35 §5). Every file of each crate
/// is embedded (its manifest made standalone: no workspace inheritance, its local dependencies pointed
/// at their vendored copies), but its tests, benches, examples and dotfiles; and a Cargo.lock of the
/// workspace's, trimmed to what the SDK builds from, so that a new project starts with the versions the
/// SDK is tested with. The generated `SDK_FILES` lists (path in the project, bytes).
fn embed_sdk(workspace: &Path, workspace_deps: &toml::Table, root: &toml::Table, out: &Path) {
    let sdk = workspace.join("guest-sdk").canonicalize().expect("guest-sdk/");
    let mut crates = BTreeSet::from([sdk.clone()]);
    path_dependencies(workspace, workspace_deps, &sdk, &mut crates);
    // Each local crate's directory → its package name, which is its directory under vendor/.
    let names: Vec<(PathBuf, String)> = crates.iter().map(|dir| (dir.clone(), package_name(dir))).collect();
    let vendored = |dir: &Path| names.iter().find(|(d, _)| d == dir).map(|(_, n)| n.clone());
    let generated = out.join("sdk");
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for (dir, name) in &names {
        println!("cargo:rerun-if-changed={}", dir.display());
        let manifest = standalone_manifest(workspace, workspace_deps, root, dir, &vendored);
        let file = generated.join(name).join("Cargo.toml");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, manifest).unwrap();
        files.push((format!("vendor/{name}/Cargo.toml"), file));
        let mut found = Vec::new();
        crate_files(dir, Path::new(""), &mut found);
        for relative in found {
            files.push((format!("vendor/{name}/{}", relative.display()), dir.join(&relative)));
        }
    }
    let lock = generated.join("Cargo.lock");
    std::fs::write(&lock, trimmed_lock(workspace, &package_name(&sdk))).unwrap();
    files.push(("Cargo.lock".to_owned(), lock));
    files.sort();
    let mut code = String::from(
        "// Generated by build.rs: the guest SDK a new driver project is written with.\npub static SDK_FILES: &[(&str, &[u8])] = &[\n",
    );
    for (relative, file) in &files {
        code.push_str(&format!("    ({relative:?}, include_bytes!({:?})),\n", file.display().to_string()));
    }
    code.push_str("];\n");
    std::fs::write(out.join("sdk_files.rs"), code).unwrap();
}

fn package_name(dir: &Path) -> String {
    let file = dir.join("Cargo.toml");
    let manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    manifest["package"]["name"].as_str().expect("a package has a name").to_owned()
}

/// The files of the crate at `dir` below `at` (relative paths, sorted), symlinks followed (the SDK's
/// `wit/` is one): all but its manifest, tests, benches, examples, build output and dotfiles.
fn crate_files(dir: &Path, at: &Path, found: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir.join(at))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(at).display()))
        .map(|e| e.unwrap().file_name())
        .collect();
    entries.sort();
    for name in entries {
        let text = name.to_string_lossy();
        let top = at.as_os_str().is_empty();
        if text.starts_with('.') || (top && ["Cargo.toml", "Cargo.lock", "target", "tests", "benches", "examples"].contains(&text.as_ref()))
        {
            continue;
        }
        let relative = at.join(&name);
        let meta = std::fs::metadata(dir.join(&relative)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(&relative).display()));
        if meta.is_dir() {
            crate_files(dir, &relative, found);
        } else {
            found.push(relative);
        }
    }
}

/// The crate at `dir`'s manifest as a crate of its own: `workspace = true` fields and dependencies
/// replaced by the root's values, local dependencies by their vendored copies (`../<package>`), no
/// dev-dependencies (its tests are not shipped).
fn standalone_manifest(
    workspace: &Path,
    workspace_deps: &toml::Table,
    root: &toml::Table,
    dir: &Path,
    vendored: &dyn Fn(&Path) -> Option<String>,
) -> String {
    let file = dir.join("Cargo.toml");
    let mut manifest: toml::Table =
        toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let inherited = |v: &toml::Value| v.get("workspace").and_then(|w| w.as_bool()) == Some(true);
    let empty = toml::Table::new();
    let ws = root.get("workspace").and_then(|w| w.as_table()).unwrap_or(&empty);
    let ws_package = ws.get("package").and_then(|p| p.as_table()).unwrap_or(&empty);
    if let Some(package) = manifest.get_mut("package").and_then(|p| p.as_table_mut()) {
        for (key, value) in package.iter_mut() {
            if inherited(value) {
                *value = ws_package.get(key).unwrap_or_else(|| panic!("{}: package.{key} inherits nothing", file.display())).clone();
            }
        }
    }
    if manifest.get("lints").is_some_and(inherited) {
        match ws.get("lints") {
            Some(lints) => manifest.insert("lints".into(), lints.clone()),
            None => manifest.remove("lints"),
        };
    }
    manifest.remove("dev-dependencies");
    let local = |path: &Path| -> toml::Value {
        let path = path.canonicalize().unwrap_or_else(|e| panic!("{}: {}: {e}", file.display(), path.display()));
        let name = vendored(&path).unwrap_or_else(|| panic!("{}: {} is not embedded", file.display(), path.display()));
        toml::Value::String(format!("../{name}"))
    };
    let fix = |deps: &mut toml::Table| {
        for (name, spec) in deps.iter_mut() {
            if inherited(spec) {
                let mut base = match workspace_deps.get(name) {
                    Some(toml::Value::String(version)) => {
                        toml::Table::from_iter([("version".to_owned(), toml::Value::String(version.clone()))])
                    }
                    Some(toml::Value::Table(table)) => table.clone(),
                    _ => panic!("{}: {name} inherits no workspace dependency", file.display()),
                };
                if let toml::Value::Table(own) = spec.clone() {
                    for (key, value) in own {
                        match key.as_str() {
                            "workspace" => {}
                            "features" => {
                                let mut all = base.get("features").and_then(|f| f.as_array()).cloned().unwrap_or_default();
                                all.extend(value.as_array().cloned().unwrap_or_default());
                                base.insert(key, toml::Value::Array(all));
                            }
                            _ => {
                                base.insert(key, value);
                            }
                        }
                    }
                }
                if let Some(path) = base.get("path").and_then(|p| p.as_str()).map(|p| workspace.join(p)) {
                    base.insert("path".into(), local(&path));
                }
                *spec = toml::Value::Table(base);
            } else if let Some(path) = spec.get("path").and_then(|p| p.as_str()).map(|p| dir.join(p)) {
                let value = local(&path);
                spec.as_table_mut().unwrap().insert("path".into(), value);
            }
        }
    };
    for kind in ["dependencies", "build-dependencies"] {
        if let Some(deps) = manifest.get_mut(kind).and_then(|d| d.as_table_mut()) {
            fix(deps);
        }
    }
    if let Some(targets) = manifest.get_mut("target").and_then(|t| t.as_table_mut()) {
        for (_, target) in targets.iter_mut() {
            let Some(target) = target.as_table_mut() else { continue };
            target.remove("dev-dependencies");
            for kind in ["dependencies", "build-dependencies"] {
                if let Some(deps) = target.get_mut(kind).and_then(|d| d.as_table_mut()) {
                    fix(deps);
                }
            }
        }
    }
    format!(
        "# Written by `agmsg-host driver new`: the copy of this crate built into agmsg-host, as a crate of its own\n\
         # (the driver depends on it by path). Replace the directory to move to another SDK.\n\n{}",
        sections(manifest)
    )
}

/// A manifest's text, `[package]` first (a table serialises its keys in order).
fn sections(mut manifest: toml::Table) -> String {
    let mut text = String::new();
    let package = manifest.remove("package").map(|p| ("package".to_owned(), p));
    for (key, value) in package.into_iter().chain(manifest) {
        text.push_str(&toml::to_string(&toml::Table::from_iter([(key, value)])).expect("a manifest serialises"));
        text.push('\n');
    }
    text
}

/// The workspace's Cargo.lock, only the packages `package` builds from (itself included): a new project
/// resolves to the versions the SDK is built and tested with, and cargo adds the project's own.
fn trimmed_lock(workspace: &Path, package: &str) -> String {
    let file = workspace.join("Cargo.lock");
    let lock: toml::Table = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let packages = lock["package"].as_array().expect("Cargo.lock lists packages");
    let field = |p: &toml::Value, key: &str| p.get(key).and_then(|v| v.as_str()).unwrap_or("").to_owned();
    // A dependency line is "name", "name version" or "name version (source)".
    let matches = |p: &toml::Value, dep: &str| {
        let mut parts = dep.split(' ');
        parts.next() == Some(field(p, "name").as_str()) && parts.next().is_none_or(|v| v == field(p, "version"))
    };
    let mut keep = vec![false; packages.len()];
    let mut todo: Vec<String> = vec![package.to_owned()];
    while let Some(dep) = todo.pop() {
        let Some(i) = packages.iter().position(|p| matches(p, &dep)) else { continue };
        if std::mem::replace(&mut keep[i], true) {
            continue;
        }
        for d in packages[i].get("dependencies").and_then(|d| d.as_array()).into_iter().flatten() {
            todo.push(d.as_str().unwrap_or_default().to_owned());
        }
    }
    let kept: Vec<toml::Value> = packages.iter().zip(&keep).filter(|(_, k)| **k).map(|(p, _)| p.clone()).collect();
    let mut out = toml::Table::new();
    out.insert("version".into(), lock["version"].clone());
    out.insert("package".into(), toml::Value::Array(kept));
    format!(
        "# The versions agmsg-host's guest SDK is built and tested with; cargo adds this project's own.\n{}",
        toml::to_string(&out).unwrap()
    )
}

fn main() {
    let manifest_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let workspace = manifest_dir.parent().unwrap().to_path_buf();
    for watched in ["Cargo.toml", "wit", "Cargo.lock", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", workspace.join(watched).display());
    }
    // The listed drivers only: a directory being written beside them does not rebuild the host.
    let drivers = driver_members(&workspace);
    for dir in &drivers {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    // And the local crates they build from (the SDK, the contract, sync-seal, ...): their sources and
    // manifests, not their tests or data.
    let root: toml::Table =
        toml::from_str(&std::fs::read_to_string(workspace.join("Cargo.toml")).expect("the root Cargo.toml")).expect("the root Cargo.toml");
    let empty = toml::Table::new();
    let workspace_deps = root.get("workspace").and_then(|w| w.get("dependencies")).and_then(|d| d.as_table()).unwrap_or(&empty);
    let mut shared = BTreeSet::new();
    for dir in &drivers {
        path_dependencies(&workspace, workspace_deps, dir, &mut shared);
    }
    for dir in shared.iter().filter(|d| !drivers.iter().any(|driver| driver.canonicalize().is_ok_and(|c| &c == *d))) {
        for part in ["src", "Cargo.toml", "build.rs"].map(|p| dir.join(p)).iter().filter(|p| p.exists()) {
            println!("cargo:rerun-if-changed={}", part.display());
        }
    }
    embed_sdk(&workspace, workspace_deps, &root, &PathBuf::from(std::env::var("OUT_DIR").unwrap()));
    println!("cargo:rerun-if-env-changed=AGMSG_PREBUILT_DRIVERS");
    println!("cargo:rerun-if-changed=../runtime/src/engine_config.rs");

    let bundled = bundled_drivers(&workspace);
    let wasm_dir = match std::env::var_os("AGMSG_PREBUILT_DRIVERS") {
        Some(dir) => PathBuf::from(dir),
        None => build_drivers(&workspace, &bundled),
    };

    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let engine = precompiling_engine();
    let mut code = String::from(
        "// Generated by build.rs. A static, not a const: a const would be copied into each place that uses it.\npub static BUNDLED: &[BundledDriver] = &[\n",
    );
    for driver in &bundled {
        let path = wasm_dir.join(driver.wasm_file());
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("bundled driver {}: cannot read {}: {e}", driver.name, path.display()));
        let digest = hex(&Sha256::digest(&bytes));
        let embedded = out.join(driver.wasm_file());
        std::fs::write(&embedded, &bytes).unwrap();
        let manifest = match &driver.manifest {
            Some(file) => format!("Some(include_str!({:?}))", file.display().to_string()),
            None => "None".to_owned(),
        };
        let precompiled = match precompile(engine.as_ref(), &bytes) {
            Some(machine_code) => {
                let file = out.join(format!("{}.cwasm", driver.package.replace('-', "_")));
                std::fs::write(&file, &machine_code).unwrap();
                // Page-aligned, so that the host can run it in place (see runtime::code_memory).
                format!(
                    "Some({{ static CODE: PageAligned<[u8; {}]> = PageAligned(*include_bytes!({:?})); &CODE.0 }})",
                    machine_code.len(),
                    file.display().to_string()
                )
            }
            None => "None".to_owned(),
        };
        code.push_str(&format!(
            "    BundledDriver {{ axis: Axis::{}, name: {:?}, default: {}, sha256: {digest:?}, wasm: include_bytes!({:?}), manifest: {manifest}, precompiled: {precompiled} }},\n",
            driver.axis_variant(),
            driver.name,
            driver.default,
            embedded.display().to_string()
        ));
    }
    code.push_str("];\n");
    std::fs::write(out.join("bundled.rs"), code).unwrap();
}

fn build_drivers(workspace: &Path, bundled: &[Bundled]) -> PathBuf {
    let target_dir = workspace.join("target").join("wasm");
    // One cargo for both axes: the SDK's axis features are additive, and each component exports only the
    // world of the export macro it invokes.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(workspace).args(["build", "--target", "wasm32-wasip2", "--profile", "driver", "--target-dir"]).arg(&target_dir);
    for driver in bundled {
        cmd.args(["-p", &driver.package]);
    }
    // Flags meant for the host build must not leak into the wasm build, nor a wrapper (clippy's, under
    // `cargo clippy`: the components would be linted, and rebuilt each time the wrapper comes and goes).
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CLIPPY_CONF_DIR",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("failed to run cargo for the bundled drivers");
    if !status.success() {
        panic!(
            "building the bundled driver components failed. They need the wasm32-wasip2 target and Debian's \
             clang-19 and wasi-libc: run `scripts/setup` (see README.md)."
        );
    }
    target_dir.join("wasm32-wasip2").join("driver")
}

/// The engine that precompiles the bundled drivers: the host's configuration, for the machine this
/// build runs on (the usual case: built where it runs). Cross-compiling, nothing is precompiled; a binary
/// run on a CPU the code does not fit compiles at run time instead.
fn precompiling_engine() -> Option<wasmtime::Engine> {
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        println!("cargo:warning=cross-compiling: bundled drivers are not precompiled");
        return None;
    }
    match wasmtime::Engine::new(&engine_config::engine_config()) {
        Ok(engine) => Some(engine),
        Err(e) => {
            println!("cargo:warning=bundled drivers are not precompiled: {e}");
            None
        }
    }
}

fn precompile(engine: Option<&wasmtime::Engine>, wasm: &[u8]) -> Option<Vec<u8>> {
    match engine?.precompile_component(wasm) {
        Ok(code) => Some(code),
        Err(e) => {
            println!("cargo:warning=a bundled driver is not precompiled: {e}");
            None
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
