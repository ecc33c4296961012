//! A driver's stdout or stderr, captured: what it printed since the host last took it, capped.
//!
//! The instance's WASI context writes into it for the instance's whole life; the host takes what
//! accumulated after each call ([`CapturedOutput::take`]), which empties it. The cap is per call (what
//! one call may print before it traps), not per instance, so an instance kept from one op to the next
//! (`crate::warm`) prints its later calls' output as it did its first's.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};
use wasmtime_wasi_io::bytes::Bytes;

/// A call printed more than a captured stream takes in one call (the trap's error, which the failure
/// report names).
#[derive(Debug, Clone, Copy)]
pub struct OutputCapExceeded;

impl std::fmt::Display for OutputCapExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the driver printed more than its stdout or stderr takes in one call")
    }
}

impl std::error::Error for OutputCapExceeded {}

/// One captured stream. Clones share the buffer: the WASI context holds one, the host another.
#[derive(Clone)]
pub struct CapturedOutput {
    capacity: usize,
    buffer: Arc<Mutex<Vec<u8>>>,
}

impl CapturedOutput {
    /// A stream that traps a call printing more than `capacity` bytes.
    pub fn new(capacity: usize) -> CapturedOutput {
        CapturedOutput { capacity, buffer: Arc::default() }
    }

    /// What was printed since the last take, leaving the stream empty.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // A poisoned lock only means a writer panicked mid-append: the bytes are still bytes.
        self.buffer.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn room(&self) -> usize {
        self.capacity.saturating_sub(self.lock().len())
    }
}

impl IsTerminal for CapturedOutput {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CapturedOutput {
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }

    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi_io::async_trait]
impl Pollable for CapturedOutput {
    async fn ready(&mut self) {}
}

impl OutputStream for CapturedOutput {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        let mut buffer = self.lock();
        if bytes.len() > self.capacity.saturating_sub(buffer.len()) {
            return Err(StreamError::Trap(wasmtime::Error::new(OutputCapExceeded)));
        }
        buffer.extend_from_slice(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        match self.room() {
            0 => Err(StreamError::Closed),
            room => Ok(room),
        }
    }
}

impl tokio::io::AsyncWrite for CapturedOutput {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, bytes: &[u8]) -> Poll<std::io::Result<usize>> {
        let mut buffer = self.lock();
        let fits = bytes.len().min(self.capacity.saturating_sub(buffer.len()));
        buffer.extend_from_slice(&bytes[..fits]);
        Poll::Ready(Ok(fits))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Taking empties the stream for every clone, and the cap counts from the last take.
    #[test]
    fn the_cap_is_per_take_and_taking_empties_every_clone() {
        let host = CapturedOutput::new(4);
        let mut guest = host.clone();
        guest.write(Bytes::from_static(b"abc")).unwrap();
        assert!(guest.write(Bytes::from_static(b"de")).is_err(), "past the cap");
        assert_eq!(host.take(), b"abc");
        guest.write(Bytes::from_static(b"defg")).unwrap();
        assert_eq!(host.take(), b"defg", "what the guest wrote after a take reaches the host");
        assert_eq!(guest.check_write().unwrap(), 4);
    }
}
