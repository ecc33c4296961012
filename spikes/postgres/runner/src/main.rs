//! Runs a wasm32-wasip2 command component with TCP connect allowed to exactly the given host:port
//! endpoints (the same shape as agmsg-host's grant_network), stdio inherited, optional preopened dir.
//! usage: pgspike-runner <component.wasm> --allow HOST:PORT [--allow ...] [--dir HOSTDIR::GUESTDIR] [--env K=V] -- args...
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Instant;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::p2::bindings::sync::Command;
use wasmtime_wasi::sockets::SocketAddrUse;
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}
impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

fn main() -> wasmtime::Result<()> {
    let mut argv = std::env::args().skip(1);
    let wasm = argv.next().expect("component path");
    let mut allowed: Vec<SocketAddr> = Vec::new();
    let mut names = false;
    let mut guest_args = vec![wasm.clone()];
    let mut builder = WasiCtxBuilder::new();
    builder.inherit_stdio();
    while let Some(a) = argv.next() {
        match a.as_str() {
            "--allow" => {
                let ep = argv.next().unwrap();
                let (h, p) = ep.rsplit_once(':').unwrap();
                names |= h.parse::<std::net::IpAddr>().is_err();
                allowed.extend((h, p.parse::<u16>().unwrap()).to_socket_addrs()?);
            }
            "--dir" => {
                let d = argv.next().unwrap();
                let (h, g) = d.split_once("::").unwrap();
                builder.preopened_dir(h, g, FsPerms::ReadOnly)?;
            }
            "--env" => {
                let kv = argv.next().unwrap();
                let (k, v) = kv.split_once('=').unwrap();
                builder.env(k, v);
            }
            "--" => {
                guest_args.extend(argv.by_ref());
            }
            other => panic!("unknown arg {other}"),
        }
    }
    builder.args(&guest_args);
    let allowed = Arc::new(allowed);
    builder.allow_tcp(true).allow_ip_name_lookup(names).socket_addr_check(move |addr, usage| {
        let ok = match usage {
            SocketAddrUse::TcpConnect => allowed.contains(&addr),
            SocketAddrUse::TcpBind => addr.ip().is_unspecified() && addr.port() == 0,
            _ => false,
        };
        if !ok {
            eprintln!("[runner] denied {usage:?} {addr}");
        }
        Box::pin(std::future::ready(ok))
    });

    let t0 = Instant::now();
    let mut config = Config::new();
    config.wasm_component_model(true);
    let engine = Engine::new(&config)?;
    // cache the compiled artifact next to the wasm so repeated runs measure the guest, not Cranelift
    let cwasm = format!("{wasm}.cwasm");
    let bytes = std::fs::read(&wasm)?;
    let component = match std::fs::metadata(&cwasm) {
        Ok(m) if m.modified()? >= std::fs::metadata(&wasm)?.modified()? => unsafe {
            Component::deserialize_file(&engine, &cwasm)?
        },
        _ => {
            let c = Component::new(&engine, &bytes)?;
            std::fs::write(&cwasm, c.serialize()?)?;
            c
        }
    };
    let t_load = t0.elapsed();
    if guest_args.iter().any(|a| a == "--imports") {
        for (name, _) in component.component_type().imports(&engine) {
            println!("import {name}");
        }
        return Ok(());
    }
    let mut linker: Linker<State> = Linker::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    let mut store = Store::new(&engine, State { wasi: builder.build(), table: ResourceTable::new() });
    let t1 = Instant::now();
    let cmd = Command::instantiate(&mut store, &component, &linker)?;
    let res = cmd.wasi_cli_run().call_run(&mut store)?;
    eprintln!("[runner] load {:?} run {:?} result {:?}", t_load, t1.elapsed(), res);
    if res.is_err() {
        std::process::exit(1);
    }
    Ok(())
}
