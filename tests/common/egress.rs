//! A witness for the network tests: a TCP port that really listens on 127.0.0.1, so that a blocked
//! connection is seen not to arrive (rather than failing only because nothing listens there).

use std::io::ErrorKind;
use std::net::TcpListener;

pub struct Listener {
    listener: TcpListener,
}

impl Listener {
    pub fn new() -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Listener { listener }
    }

    pub fn port(&self) -> String {
        self.listener.local_addr().unwrap().port().to_string()
    }

    /// Called once the process that tried to connect has ended: a connection it made is in the
    /// listen queue by then (the kernel completes the handshake before `connect` returns), so an
    /// empty queue is proof that none was made. No waiting involved.
    #[track_caller]
    pub fn assert_no_connection(&self, what: &str) {
        match self.listener.accept() {
            Ok((_, from)) => panic!("{what}: a connection from {from} reached 127.0.0.1:{}", self.port()),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => panic!("{what}: accept failed: {e}"),
        }
    }
}
