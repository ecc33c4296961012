//! A small blocking PostgreSQL client: postgres-protocol's message codecs over a `std::net::TcpStream`
//! (optionally inside rustls), one connection, one request at a time. Grown from the issue-19 spike
//! (`spikes/postgres/guest/src/pg.rs`).
//!
//! WASI has no TCP_NODELAY (the guest's `set_nodelay` reaches nothing): Nagle is on, and two small writes
//! in a row wait for the server's delayed ACK (~40 ms). So every request, a whole pipelined batch
//! included, is built in one buffer and leaves in ONE socket write ([`Conn::send`]); the TLS stream does
//! the same for its records.
//!
//! Every read and write is bounded by the op's deadline ([`Conn::set_deadline`]): a server that is down,
//! slow or gone answers with an error before the host's own call deadline would trap.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::IsNull;
use postgres_protocol::authentication::sasl::{self, ChannelBinding, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;

/// How the connection is protected, as libpq's `sslmode`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SslMode {
    /// Plain TCP.
    Disable,
    /// TLS if the server offers it, else plain; no certificate check (libpq's default).
    Prefer,
    /// TLS or fail; no certificate check.
    Require,
    /// TLS, the chain checked against the CA (the given PEM, else the public roots) and the host name.
    VerifyFull,
}

impl SslMode {
    pub fn parse(s: &str) -> Option<SslMode> {
        match s {
            "disable" => Some(SslMode::Disable),
            "prefer" | "" => Some(SslMode::Prefer),
            "require" => Some(SslMode::Require),
            "verify-full" => Some(SslMode::VerifyFull),
            _ => None,
        }
    }
}

/// Where and how to connect.
#[derive(Clone, Debug)]
pub struct Config {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub password: Option<String>,
    pub dbname: String,
    pub sslmode: SslMode,
    /// PEM text of the CA bundle for verify-full (None: the public web roots).
    pub ca_pem: Option<String>,
}

impl Config {
    /// `host:port`, as the errors name the endpoint.
    pub fn endpoint(&self) -> String {
        if self.host.contains(':') { format!("[{}]:{}", self.host, self.port) } else { format!("{}:{}", self.host, self.port) }
    }
}

/// A failure: the server's own error (the connection is still usable), or anything else (it is not).
#[derive(Debug)]
pub enum Error {
    /// An ErrorResponse: SQLSTATE and message. The connection went back to ReadyForQuery.
    Server { code: String, message: String },
    /// I/O, TLS, protocol or authentication trouble: the connection must be dropped.
    Broken(String),
}

impl Error {
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Server { code, .. } => Some(code),
            Error::Broken(_) => None,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Server { code, message } => write!(f, "{message} (SQLSTATE {code})"),
            Error::Broken(message) => f.write_str(message),
        }
    }
}

fn broken(e: impl std::fmt::Display) -> Error {
    Error::Broken(e.to_string())
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Broken("no answer before the deadline".into()),
            io::ErrorKind::UnexpectedEof => Error::Broken("the server closed the connection".into()),
            _ => Error::Broken(e.to_string()),
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;

fn server_error(fields: postgres_protocol::message::backend::ErrorFields<'_>) -> Error {
    let (mut code, mut message) = (String::new(), String::new());
    let mut fields = fields;
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'C' => code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    Error::Server { code, message }
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<crate::tls::TlsStream>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(b),
            Stream::Tls(s) => s.read(b),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(b),
            Stream::Tls(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// A value bound to a statement parameter, in text format.
pub type Param<'a> = Option<&'a str>;

/// The rows of one statement (text format; NULL is `None`) and its command tag (`INSERT 0 1`, ...).
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Vec<Option<String>>>,
    pub tag: String,
}

impl Outcome {
    /// How many rows the command affected, from its tag (`UPDATE 3` is 3).
    pub fn affected(&self) -> u64 {
        self.tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
    }
}

/// One open connection.
pub struct Conn {
    stream: Stream,
    rbuf: BytesMut,
    wbuf: BytesMut,
    deadline: Instant,
    /// The transaction status of the last ReadyForQuery: `I` idle, `T` in a transaction, `E` failed.
    pub txn_status: u8,
    /// The channels this session LISTENs on (a session keeps listening until it ends).
    listening: Vec<String>,
}

impl Conn {
    /// Connect, negotiate TLS as `sslmode` says, and authenticate (SCRAM-SHA-256[-PLUS], md5 or
    /// cleartext, as the server asks), all before `deadline`.
    pub fn connect(c: &Config, deadline: Instant) -> Result<Conn> {
        let tcp = connect_tcp(c, deadline)?;
        let mut startup = BytesMut::new();
        frontend::startup_message(
            [("user", c.user.as_str()), ("database", c.dbname.as_str()), ("application_name", "agmsg-host"), ("client_encoding", "UTF8")],
            &mut startup,
        )
        .map_err(broken)?;
        set_timeouts(&tcp, deadline)?;
        let (stream, startup_sent) = if c.sslmode == SslMode::Disable {
            (Stream::Plain(tcp), false)
        } else {
            let mut tcp = tcp;
            let mut request = BytesMut::new();
            frontend::ssl_request(&mut request);
            tcp.write_all(&request)?;
            let mut answer = [0u8; 1];
            tcp.read_exact(&mut answer)?;
            match answer[0] {
                b'S' => {
                    // The startup message leaves in the same write as the client's Finished.
                    let tls = crate::tls::handshake(tcp, c, &startup)?;
                    (Stream::Tls(Box::new(tls)), true)
                }
                b'N' if c.sslmode == SslMode::Prefer => (Stream::Plain(tcp), false),
                b'N' => return Err(Error::Broken(format!("the server does not offer TLS, and sslmode is {:?}", c.sslmode))),
                other => return Err(Error::Broken(format!("unexpected answer {other:#04x} to the TLS request"))),
            }
        };
        let mut conn = Conn {
            stream,
            rbuf: BytesMut::with_capacity(16 * 1024),
            wbuf: BytesMut::new(),
            deadline,
            txn_status: b'I',
            listening: Vec::new(),
        };
        if !startup_sent {
            conn.wbuf = startup;
            conn.send()?;
        }
        conn.authenticate(c)?;
        Ok(conn)
    }

    fn authenticate(&mut self, c: &Config) -> Result<()> {
        let password = || {
            c.password.as_deref().ok_or_else(|| {
                Error::Broken(format!("the server asks user '{}' for a password: set PGPASSWORD or a password file", c.user))
            })
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            match self.recv()? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    frontend::password_message(password()?.as_bytes(), &mut self.wbuf).map_err(broken)?;
                    self.send()?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let hash = postgres_protocol::authentication::md5_hash(c.user.as_bytes(), password()?.as_bytes(), body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.wbuf).map_err(broken)?;
                    self.send()?;
                }
                Message::AuthenticationSasl(body) => {
                    let (mut plus, mut plain) = (false, false);
                    let mut mechanisms = body.mechanisms();
                    while let Some(m) = mechanisms.next().map_err(broken)? {
                        plus |= m == sasl::SCRAM_SHA_256_PLUS;
                        plain |= m == sasl::SCRAM_SHA_256;
                    }
                    // Channel binding (tls-server-end-point) when the server offers it over TLS; 'n' without TLS.
                    let (mechanism, binding) = match self.channel_binding() {
                        Some(binding) if plus => (sasl::SCRAM_SHA_256_PLUS, binding),
                        _ if plain => (sasl::SCRAM_SHA_256, ChannelBinding::unsupported()),
                        _ => return Err(Error::Broken("the server offers no SASL mechanism this driver supports".into())),
                    };
                    let s = ScramSha256::new(password()?.as_bytes(), binding);
                    frontend::sasl_initial_response(mechanism, s.message(), &mut self.wbuf).map_err(broken)?;
                    self.send()?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram.as_mut().ok_or_else(|| broken("unexpected SASL continue"))?;
                    s.update(body.data()).map_err(|e| Error::Broken(format!("SCRAM: {e}")))?;
                    frontend::sasl_response(s.message(), &mut self.wbuf).map_err(broken)?;
                    self.send()?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    scram
                        .as_mut()
                        .ok_or_else(|| broken("unexpected SASL final"))?
                        .finish(body.data())
                        .map_err(|e| Error::Broken(format!("SCRAM: the server's proof is wrong: {e}")))?;
                }
                Message::BackendKeyData(_) | Message::ParameterStatus(_) => {}
                Message::ReadyForQuery(r) => {
                    self.txn_status = r.status();
                    return Ok(());
                }
                Message::ErrorResponse(e) => {
                    // During start-up the server closes the connection after an error.
                    return Err(Error::Broken(server_error(e.fields()).to_string()));
                }
                _ => return Err(broken("unexpected message during start-up")),
            }
        }
    }

    fn channel_binding(&self) -> Option<ChannelBinding> {
        match &self.stream {
            Stream::Plain(_) => None,
            Stream::Tls(s) => crate::tls::server_end_point(&s.conn).map(ChannelBinding::tls_server_end_point),
        }
    }

    /// Bound every later read and write by `deadline`.
    pub fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = deadline;
    }

    /// The buffered request, in one socket write.
    fn send(&mut self) -> Result<()> {
        set_timeouts(self.stream.tcp(), self.deadline)?;
        let result = self.stream.write_all(&self.wbuf).and_then(|()| self.stream.flush());
        self.wbuf.clear();
        Ok(result?)
    }

    /// The next backend message (notices and notifications skipped).
    fn recv(&mut self) -> Result<Message> {
        loop {
            if let Some(m) = Message::parse(&mut self.rbuf).map_err(broken)? {
                match m {
                    Message::NoticeResponse(_) | Message::NotificationResponse(_) => continue,
                    m => return Ok(m),
                }
            }
            set_timeouts(self.stream.tcp(), self.deadline)?;
            let mut chunk = [0u8; 16 * 1024];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(Error::Broken("the server closed the connection".into()));
            }
            self.rbuf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Read to ReadyForQuery: each statement's outcome, or the first server error.
    fn collect(&mut self) -> Result<Vec<Outcome>> {
        let mut out = Vec::new();
        let mut rows = Vec::new();
        let mut error: Option<Error> = None;
        loop {
            match self.recv()? {
                Message::DataRow(r) => {
                    let buf = r.buffer();
                    let row: Vec<Option<String>> = r
                        .ranges()
                        .map(|range| Ok(range.map(|range| String::from_utf8_lossy(&buf[range]).into_owned())))
                        .collect()
                        .map_err(broken)?;
                    rows.push(row);
                }
                Message::CommandComplete(c) => {
                    out.push(Outcome { rows: std::mem::take(&mut rows), tag: c.tag().map_err(broken)?.to_owned() })
                }
                Message::EmptyQueryResponse => out.push(Outcome::default()),
                Message::ErrorResponse(e) => {
                    if error.is_none() {
                        error = Some(server_error(e.fields()));
                    }
                }
                Message::ReadyForQuery(r) => {
                    self.txn_status = r.status();
                    return match error {
                        Some(e) => Err(e),
                        None => Ok(out),
                    };
                }
                Message::RowDescription(_)
                | Message::ParseComplete
                | Message::BindComplete
                | Message::NoData
                | Message::CloseComplete
                | Message::ParameterDescription(_)
                | Message::ParameterStatus(_)
                | Message::PortalSuspended => {}
                _ => return Err(broken("unexpected message from the server")),
            }
        }
    }

    /// Fixed SQL through the simple protocol (several statements allowed). Never with values in it.
    pub fn simple(&mut self, sql: &str) -> Result<Vec<Outcome>> {
        frontend::query(sql, &mut self.wbuf).map_err(broken)?;
        self.send()?;
        self.collect()
    }

    /// Statements with parameters, pipelined: all in one write and one round trip, with one Sync at
    /// the end. Outside an explicit transaction they form one implicit transaction: all of them commit
    /// at the Sync, or (after any error) none does.
    pub fn batch(&mut self, statements: &[(&str, &[Param<'_>])]) -> Result<Vec<Outcome>> {
        for (sql, params) in statements {
            frontend::parse("", sql, std::iter::empty(), &mut self.wbuf).map_err(broken)?;
            frontend::bind(
                "",
                "",
                [0i16],
                params.iter(),
                |p, buf| match p {
                    Some(s) => {
                        buf.extend_from_slice(s.as_bytes());
                        Ok(IsNull::No)
                    }
                    None => Ok(IsNull::Yes),
                },
                [0i16],
                &mut self.wbuf,
            )
            .map_err(|e| match e {
                frontend::BindError::Conversion(e) => broken(e),
                frontend::BindError::Serialization(e) => broken(e),
            })?;
            frontend::execute("", 0, &mut self.wbuf).map_err(broken)?;
        }
        frontend::sync(&mut self.wbuf);
        self.send()?;
        self.collect()
    }

    /// One statement with parameters, one round trip.
    pub fn query(&mut self, sql: &str, params: &[Param<'_>]) -> Result<Outcome> {
        self.batch(&[(sql, params)])?.pop().ok_or_else(|| broken("no result"))
    }

    /// LISTEN on `channel` (once per session), in a transaction of its own: it has committed when this
    /// returns, so every NOTIFY committed from now on reaches this session. `channel` must be a plain
    /// lower-case identifier (`[a-z0-9_]`, at most 63 bytes): it is written into the statement.
    pub fn listen(&mut self, channel: &str) -> Result<()> {
        let plain = !channel.is_empty()
            && channel.len() <= 63
            && channel.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            && !channel.as_bytes()[0].is_ascii_digit();
        if !plain {
            return Err(Error::Broken(format!("not a plain channel name: {channel:?}")));
        }
        if !self.listening.iter().any(|c| c == channel) {
            self.simple(&format!("LISTEN {channel}"))?;
            self.listening.push(channel.to_owned());
        }
        Ok(())
    }

    /// Wait, outside any query, for a notification on `channel` until `until`: true when one came, false
    /// when the time passed first. Notifications that arrived earlier (during queries) were skipped; the
    /// caller looks at the data after LISTEN and before waiting, so none of them matters.
    pub fn wait_notification(&mut self, channel: &str, until: Instant) -> Result<bool> {
        loop {
            while let Some(m) = Message::parse(&mut self.rbuf).map_err(broken)? {
                match m {
                    Message::NotificationResponse(n) => {
                        if n.channel().map_err(broken)? == channel {
                            return Ok(true);
                        }
                    }
                    Message::NoticeResponse(_) | Message::ParameterStatus(_) => {}
                    // A FATAL error (the server shutting down, the session terminated) ends the session.
                    Message::ErrorResponse(e) => return Err(Error::Broken(server_error(e.fields()).to_string())),
                    _ => return Err(broken("unexpected message from the server while waiting for a notification")),
                }
            }
            let left = until.min(self.deadline).saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            self.stream.tcp().set_read_timeout(Some(left))?;
            let mut chunk = [0u8; 16 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(Error::Broken("the server closed the connection".into())),
                Ok(n) => self.rbuf.extend_from_slice(&chunk[..n]),
                // The time passed; the connection is as it was (rustls keeps a partial record).
                Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Say goodbye (best effort).
    pub fn close(mut self) {
        frontend::terminate(&mut self.wbuf);
        self.deadline = self.deadline.min(Instant::now() + Duration::from_millis(200));
        let _ = self.send();
    }
}

/// Socket read and write time-outs for what is left before `deadline`.
fn set_timeouts(tcp: &TcpStream, deadline: Instant) -> Result<()> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(Error::Broken("no answer before the deadline".into()));
    }
    tcp.set_read_timeout(Some(left))?;
    tcp.set_write_timeout(Some(left))?;
    Ok(())
}

/// A TCP connection to the first address of the endpoint that answers, before `deadline`.
fn connect_tcp(c: &Config, deadline: Instant) -> Result<TcpStream> {
    let addrs: Vec<SocketAddr> =
        (c.host.as_str(), c.port).to_socket_addrs().map_err(|e| Error::Broken(format!("cannot resolve {}: {e}", c.host)))?.collect();
    let mut last = Error::Broken(format!("{} resolves to no address", c.host));
    for addr in addrs {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Broken("could not connect before the deadline".into()));
        }
        match TcpStream::connect_timeout(&addr, left) {
            Ok(tcp) => return Ok(tcp),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                last = Error::Broken("could not connect before the deadline".into())
            }
            Err(e) => last = Error::Broken(format!("cannot connect: {e}")),
        }
    }
    Err(last)
}

/// A text array literal (`{"a","b",NULL}`) for a `text[]` parameter.
pub fn text_array<'a>(items: impl IntoIterator<Item = Option<&'a str>>) -> String {
    let mut out = String::from("{");
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(s) => {
                out.push('"');
                for ch in s.chars() {
                    if ch == '"' || ch == '\\' {
                        out.push('\\');
                    }
                    out.push(ch);
                }
                out.push('"');
            }
        }
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn array_literals_quote_everything() {
        assert_eq!(super::text_array([Some("a"), None, Some("b\"c\\d"), Some("")]), r#"{"a",NULL,"b\"c\\d",""}"#);
        assert_eq!(super::text_array(std::iter::empty()), "{}");
    }
}
