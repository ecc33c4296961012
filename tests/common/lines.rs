//! A child's output read line by line on a thread, each line with the instant it arrived: what a test
//! or bench that times a long-running process (`watch`) reads.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc;
use std::time::Instant;

/// Lines of `output` as they arrive; the channel closes at end of output.
pub fn timestamped_lines(output: impl Read + Send + 'static) -> mpsc::Receiver<(Instant, String)> {
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(output).lines().map_while(Result::ok) {
            if tx.send((Instant::now(), line)).is_err() {
                break;
            }
        }
    });
    lines
}
