//! The engine's configuration, in one place for the two that need it: the runtime, and `build.rs`,
//! which precompiles the bundled drivers into the binary. Machine code loads only into an engine
//! configured exactly as the one that produced it, so both must build it from here.

/// How every engine of this host is configured.
pub fn engine_config() -> wasmtime::Config {
    let mut config = wasmtime::Config::new();
    config.epoch_interruption(true);
    config.wasm_component_model(true);
    // Deterministic codegen settings: precompiled artifacts (embedded, or in the compile cache) are
    // keyed by this engine's compatibility hash, so keep the config stable across runs.
    config.cranelift_opt_level(wasmtime::OptLevel::Speed);
    // One instance per process: the data segments are copied into the new memory at instantiation,
    // which costs less than wasmtime's copy-on-write image (a memfd filled and sealed at every load,
    // then mapped).
    config.memory_init_cow(false);
    config
}
