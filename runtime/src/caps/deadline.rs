//! The call deadline inside host calls.
//!
//! Epoch interruption stops a driver only while its wasm runs; a driver blocked in a host call (a WASI
//! sleep, a poll on a socket, a blocking stream read) would run past its deadline for as long as the
//! call blocks. Every way a WASI guest can block goes through `wasi:io/poll` (`poll`,
//! `pollable.block`) or the blocking methods of `wasi:io/streams`: this module puts its own versions of
//! those two interfaces in the linker, which run wasmtime-wasi's own implementation under the call's
//! deadline and trap with [`DeadlineExceeded`] when it passes. The host's own interfaces bound their
//! waits by the same deadline (`lock`, `process`), so no host call outlives the call that made it.

use std::time::Instant;

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::io as async_io;
use wasmtime_wasi::p2::bindings::sync::io::{poll, streams};
use wasmtime_wasi::p2::{DynPollable, StreamError, StreamResult};
use wasmtime_wasi::runtime::in_tokio;
use wasmtime_wasi_io::streams::{DynInputStream, DynOutputStream};

/// A call ran past its deadline while blocked in a host call. The failure mapping reports it as the
/// time limit, like an epoch interrupt.
#[derive(Debug, Clone, Copy)]
pub struct DeadlineExceeded;

impl std::fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the call's deadline passed during a blocking host call")
    }
}

impl std::error::Error for DeadlineExceeded {}

/// The guest's view of `wasi:io` while a call runs: the resource table and the call's deadline.
pub struct DeadlineIo<'a> {
    pub table: &'a mut ResourceTable,
    pub deadline: Instant,
}

struct DeadlineIoData;

impl HasData for DeadlineIoData {
    type Data<'a> = DeadlineIo<'a>;
}

/// Replace the blocking `wasi:io` functions of a linker that already has WASI with deadline-bound ones,
/// for a state that projects a [`DeadlineIo`].
pub fn bind_wasi_io<T: 'static>(linker: &mut Linker<T>, project: fn(&mut T) -> DeadlineIo<'_>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let result = poll::add_to_linker::<T, DeadlineIoData>(linker, project)
        .and_then(|()| streams::add_to_linker::<T, DeadlineIoData>(linker, project));
    linker.allow_shadowing(false);
    result
}

impl DeadlineIo<'_> {
    /// Run a blocking wasmtime-wasi future until it completes or the deadline passes.
    fn block<T>(&mut self, f: impl AsyncFnOnce(&mut ResourceTable) -> T) -> wasmtime::Result<T> {
        let deadline = tokio::time::Instant::from_std(self.deadline);
        let table = &mut *self.table;
        in_tokio(async move { tokio::time::timeout_at(deadline, f(table)).await }).map_err(|_| wasmtime::Error::new(DeadlineExceeded))
    }

    fn block_stream<T>(&mut self, f: impl AsyncFnOnce(&mut ResourceTable) -> StreamResult<T>) -> StreamResult<T> {
        self.block(f).map_err(StreamError::Trap)?
    }
}

impl poll::Host for DeadlineIo<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        self.block(async |t| async_io::poll::Host::poll(t, pollables).await)?
    }
}

impl poll::HostPollable for DeadlineIo<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        poll::HostPollable::ready(self.table, pollable)
    }
    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        DeadlineIo::block(self, async |t| async_io::poll::HostPollable::block(t, pollable).await)?
    }
    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        poll::HostPollable::drop(self.table, pollable)
    }
}

impl streams::Host for DeadlineIo<'_> {
    fn convert_stream_error(&mut self, err: StreamError) -> wasmtime::Result<streams::StreamError> {
        streams::Host::convert_stream_error(self.table, err)
    }
}

impl streams::HostInputStream for DeadlineIo<'_> {
    fn drop(&mut self, stream: Resource<DynInputStream>) -> wasmtime::Result<()> {
        streams::HostInputStream::drop(self.table, stream)
    }
    fn read(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<Vec<u8>> {
        streams::HostInputStream::read(self.table, stream, len)
    }
    fn blocking_read(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<Vec<u8>> {
        self.block_stream(async |t| async_io::streams::HostInputStream::blocking_read(t, stream, len).await)
    }
    fn skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        streams::HostInputStream::skip(self.table, stream, len)
    }
    fn blocking_skip(&mut self, stream: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        self.block_stream(async |t| async_io::streams::HostInputStream::blocking_skip(t, stream, len).await)
    }
    fn subscribe(&mut self, stream: Resource<DynInputStream>) -> wasmtime::Result<Resource<DynPollable>> {
        streams::HostInputStream::subscribe(self.table, stream)
    }
}

impl streams::HostOutputStream for DeadlineIo<'_> {
    fn drop(&mut self, stream: Resource<DynOutputStream>) -> wasmtime::Result<()> {
        streams::HostOutputStream::drop(self.table, stream)
    }
    fn check_write(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<u64> {
        streams::HostOutputStream::check_write(self.table, stream)
    }
    fn write(&mut self, stream: Resource<DynOutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        streams::HostOutputStream::write(self.table, stream, bytes)
    }
    fn blocking_write_and_flush(&mut self, stream: Resource<DynOutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        self.block_stream(async |t| async_io::streams::HostOutputStream::blocking_write_and_flush(t, stream, bytes).await)
    }
    fn blocking_write_zeroes_and_flush(&mut self, stream: Resource<DynOutputStream>, len: u64) -> StreamResult<()> {
        self.block_stream(async |t| async_io::streams::HostOutputStream::blocking_write_zeroes_and_flush(t, stream, len).await)
    }
    fn subscribe(&mut self, stream: Resource<DynOutputStream>) -> wasmtime::Result<Resource<DynPollable>> {
        streams::HostOutputStream::subscribe(self.table, stream)
    }
    fn write_zeroes(&mut self, stream: Resource<DynOutputStream>, len: u64) -> StreamResult<()> {
        streams::HostOutputStream::write_zeroes(self.table, stream, len)
    }
    fn flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        streams::HostOutputStream::flush(self.table, stream)
    }
    fn blocking_flush(&mut self, stream: Resource<DynOutputStream>) -> StreamResult<()> {
        self.block_stream(async |t| async_io::streams::HostOutputStream::blocking_flush(t, stream).await)
    }
    fn splice(&mut self, dst: Resource<DynOutputStream>, src: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        streams::HostOutputStream::splice(self.table, dst, src, len)
    }
    fn blocking_splice(&mut self, dst: Resource<DynOutputStream>, src: Resource<DynInputStream>, len: u64) -> StreamResult<u64> {
        self.block_stream(async |t| async_io::streams::HostOutputStream::blocking_splice(t, dst, src, len).await)
    }
}
