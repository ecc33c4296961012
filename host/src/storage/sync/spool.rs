//! A sync op's answer, held back until the op has succeeded: agmsg's engine takes every record it reads
//! as given, so a refused op prints nothing, whatever it had checked and passed before the refusal.
//! Small answers stay in memory; past [`IN_MEMORY`] bytes they go to an anonymous temporary file (gone
//! with the process, however it ends), so a page of 1,000 envelopes of 1 MiB never sits in memory.

use std::fs::File;
use std::io::{self, BufWriter, Seek, Write};

use crate::storage::StorageError;

/// How much of an answer is held in memory before it is spooled to a file.
pub const IN_MEMORY: usize = 16 << 20;

/// Lines held back for `out`; written by [`Spooled::finish`], dropped unwritten otherwise.
pub struct Spooled<W: Write> {
    memory: Vec<u8>,
    file: Option<BufWriter<File>>,
    out: W,
}

fn spool_error(e: io::Error) -> StorageError {
    StorageError::runtime(format!("cannot hold the answer back in a temporary file: {e}"))
}

fn out_error(e: io::Error) -> StorageError {
    StorageError::runtime(format!("cannot write to stdout: {e}"))
}

impl<W: Write> Spooled<W> {
    pub fn new(out: W) -> Spooled<W> {
        Spooled { memory: Vec::new(), file: None, out }
    }

    /// Hold one line (a newline is added).
    pub fn line(&mut self, line: &str) -> Result<(), StorageError> {
        if self.file.is_none() && self.memory.len() + line.len() < IN_MEMORY {
            self.memory.extend_from_slice(line.as_bytes());
            self.memory.push(b'\n');
            return Ok(());
        }
        if self.file.is_none() {
            let mut file = BufWriter::new(tempfile::tempfile().map_err(spool_error)?);
            file.write_all(&self.memory).map_err(spool_error)?;
            self.memory = Vec::new();
            self.file = Some(file);
        }
        let file = self.file.as_mut().expect("spooling");
        file.write_all(line.as_bytes()).and_then(|()| file.write_all(b"\n")).map_err(spool_error)
    }

    /// The op succeeded: write everything held, in order.
    pub fn finish(mut self) -> Result<(), StorageError> {
        match self.file.take() {
            None => self.out.write_all(&self.memory).map_err(out_error)?,
            Some(file) => {
                let mut file = file.into_inner().map_err(|e| spool_error(e.into_error()))?;
                file.rewind().map_err(spool_error)?;
                io::copy(&mut file, &mut self.out).map_err(out_error)?;
            }
        }
        self.out.flush().map_err(out_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_written_only_when_finished_and_in_order_past_the_memory_bound() {
        let mut out = Vec::new();
        let mut held = Spooled::new(&mut out);
        let line = "x".repeat(1 << 20);
        for _ in 0..20 {
            held.line(&line).unwrap();
        }
        held.line("last").unwrap();
        assert!(held.file.is_some() && held.memory.is_empty(), "spooled past the bound");
        held.finish().unwrap();
        assert_eq!(out.len(), 20 * ((1 << 20) + 1) + 5);
        assert!(out.ends_with(b"\nlast\n"));
        let mut dropped = Vec::new();
        let mut held = Spooled::new(&mut dropped);
        held.line("never").unwrap();
        drop(held);
        assert!(dropped.is_empty());
    }
}
