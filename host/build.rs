//! Builds the bundled driver components (wasm32-wasip2) and embeds them in the host binary, with their
//! sha256 computed here so that the host never hashes its own drivers at run time, and with their
//! machine code, precompiled here with the host's own engine configuration, so that no bundled driver
//! is ever compiled at run time (a first call costs what a warm one does, with or without a cache).
//!
//! The drivers are built by a nested cargo in a separate target directory (`target/wasm`): the outer
//! cargo holds the lock of the main one.

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
