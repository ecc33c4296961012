//! A minimal blocking PostgreSQL client: postgres-protocol's message codecs over a std::net::TcpStream
//! (optionally wrapped in rustls). One connection, one request at a time (plus explicit pipelining).
use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::authentication::sasl::{self, ChannelBinding, ScramSha256};
use postgres_protocol::message::backend::Message;
use postgres_protocol::message::frontend;
use postgres_protocol::IsNull;
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

#[derive(Debug)]
pub struct PgError {
    pub severity: String,
    pub code: String,
    pub message: String,
}
impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.severity, self.code, self.message)
    }
}
impl std::error::Error for PgError {}

fn pg_error(fields: postgres_protocol::message::backend::ErrorFields<'_>) -> PgError {
    let mut e = PgError { severity: String::new(), code: String::new(), message: String::new() };
    let mut fields = fields;
    while let Ok(Some(f)) = fields.next() {
        match f.type_() {
            b'S' => e.severity = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'C' => e.code = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            b'M' => e.message = String::from_utf8_lossy(f.value_bytes()).into_owned(),
            _ => {}
        }
    }
    e
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum SslMode {
    Disable,
    Require,
    VerifyFull,
}

pub struct ConnectOptions<'a> {
    pub addr: &'a str,
    pub user: &'a str,
    pub password: &'a str,
    pub dbname: &'a str,
    pub sslmode: SslMode,
    /// PEM bytes of the CA bundle for verify-full (None: webpki-roots).
    pub ca_pem: Option<Vec<u8>>,
    /// Server name checked against the certificate (verify-full) and sent as SNI.
    pub server_name: &'a str,
}

enum Stream {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<crate::tls::TlsStream>),
}
impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            #[cfg(feature = "tls")]
            Stream::Tls(s) => &s.sock,
        }
    }
}
impl Read for Stream {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(b),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.read(b),
        }
    }
}
impl Write for Stream {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(b),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            Stream::Tls(s) => s.flush(),
        }
    }
}

pub struct Notification {
    pub process_id: i32,
    pub channel: String,
    pub payload: String,
}

pub type Row = Vec<Option<String>>;

pub struct QueryResult {
    pub rows: Vec<Row>,
    pub tag: String,
}

pub struct Conn {
    stream: Stream,
    rbuf: BytesMut,
    wbuf: BytesMut,
    pub auth: &'static str,
    pub tls: Option<String>,
    pub server_version: String,
    pub backend_pid: i32,
    pub notifications: VecDeque<Notification>,
    pub txn_status: u8,
    /// (phase, elapsed since connect began): tcp, tls, auth.
    pub phases: Vec<(&'static str, std::time::Duration)>,
}

impl Conn {
    pub fn connect(o: &ConnectOptions<'_>) -> Result<Conn> {
        let t0 = std::time::Instant::now();
        let mut phases = Vec::new();
        let tcp = TcpStream::connect(o.addr)?;
        tcp.set_nodelay(true)?;
        phases.push(("tcp", t0.elapsed()));
        #[allow(unused_mut)]
        let mut tls_name = None;
        let mut startup = BytesMut::new();
        frontend::startup_message(
            [
                ("user", o.user),
                ("database", o.dbname),
                ("application_name", "agmsg-pgspike"),
                ("client_encoding", "UTF8"),
            ],
            &mut startup,
        )?;
        let mut startup_sent = false;
        let stream = if o.sslmode == SslMode::Disable {
            Stream::Plain(tcp)
        } else {
            let mut tcp = tcp;
            let mut b = BytesMut::new();
            frontend::ssl_request(&mut b);
            tcp.write_all(&b)?;
            let mut answer = [0u8; 1];
            tcp.read_exact(&mut answer)?;
            if answer[0] != b'S' {
                return Err(format!("server refused SSL (answered {:?})", answer[0] as char).into());
            }
            #[cfg(feature = "tls")]
            {
                let s = crate::tls::handshake(tcp, o, &startup)?;
                startup_sent = true;
                tls_name = Some(format!(
                    "{:?} {:?}",
                    s.conn.protocol_version().unwrap(),
                    s.conn.negotiated_cipher_suite().unwrap().suite()
                ));
                phases.push(("tls", t0.elapsed()));
                Stream::Tls(Box::new(s))
            }
            #[cfg(not(feature = "tls"))]
            return Err("built without tls".into());
        };
        let mut c = Conn {
            stream,
            rbuf: BytesMut::with_capacity(16 * 1024),
            wbuf: BytesMut::with_capacity(4 * 1024),
            auth: "trust",
            tls: tls_name,
            server_version: String::new(),
            backend_pid: 0,
            notifications: VecDeque::new(),
            txn_status: b'I',
            phases,
        };
        if !startup_sent {
            c.wbuf = startup;
            c.send()?;
        }
        c.phases.push(("startup sent", t0.elapsed()));
        let mut scram: Option<ScramSha256> = None;
        loop {
            match c.recv()? {
                Message::AuthenticationOk => {}
                Message::AuthenticationCleartextPassword => {
                    c.auth = "password (cleartext)";
                    frontend::password_message(o.password.as_bytes(), &mut c.wbuf)?;
                    c.send()?;
                }
                Message::AuthenticationMd5Password(body) => {
                    c.auth = "md5";
                    let h = postgres_protocol::authentication::md5_hash(
                        o.user.as_bytes(),
                        o.password.as_bytes(),
                        body.salt(),
                    );
                    frontend::password_message(h.as_bytes(), &mut c.wbuf)?;
                    c.send()?;
                }
                Message::AuthenticationSasl(body) => {
                    let mut plus = false;
                    let mut plain = false;
                    let mut mechs = body.mechanisms();
                    while let Some(m) = mechs.next()? {
                        plus |= m == sasl::SCRAM_SHA_256_PLUS;
                        plain |= m == sasl::SCRAM_SHA_256;
                    }
                    // Channel binding (tls-server-end-point) when the server offers it over TLS.
                    let binding = c.channel_binding();
                    let (mech, cb) = match binding {
                        Some(cb) if plus => (sasl::SCRAM_SHA_256_PLUS, cb),
                        _ if plain => (
                            sasl::SCRAM_SHA_256,
                            // 'n' when not on TLS; 'y' would make a -PLUS-offering server refuse us.
                            ChannelBinding::unsupported(),
                        ),
                        _ => return Err("no supported SASL mechanism".into()),
                    };
                    c.auth = if mech == sasl::SCRAM_SHA_256_PLUS {
                        "SCRAM-SHA-256-PLUS"
                    } else {
                        "SCRAM-SHA-256"
                    };
                    c.phases.push(("sasl offered", t0.elapsed()));
                    let s = ScramSha256::new(o.password.as_bytes(), cb);
                    frontend::sasl_initial_response(mech, s.message(), &mut c.wbuf)?;
                    c.send()?;
                    scram = Some(s);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let s = scram.as_mut().ok_or("unexpected SASL continue")?;
                    s.update(body.data())?; // PBKDF2 (4096 x HMAC-SHA-256) happens here
                    c.phases.push(("scram pbkdf2 done", t0.elapsed()));
                    frontend::sasl_response(s.message(), &mut c.wbuf)?;
                    c.send()?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    scram.as_mut().ok_or("unexpected SASL final")?.finish(body.data())?;
                    c.phases.push(("sasl final", t0.elapsed()));
                }
                Message::BackendKeyData(k) => c.backend_pid = k.process_id(),
                Message::ParameterStatus(p) => {
                    if p.name()? == "server_version" {
                        c.server_version = p.value()?.to_owned();
                    }
                }
                Message::ReadyForQuery(r) => {
                    c.txn_status = r.status();
                    c.phases.push(("ready", t0.elapsed()));
                    return Ok(c);
                }
                Message::ErrorResponse(e) => return Err(pg_error(e.fields()).into()),
                Message::NoticeResponse(_) => {}
                _ => return Err("unexpected message during startup".into()),
            }
        }
    }

    fn channel_binding(&self) -> Option<ChannelBinding> {
        match &self.stream {
            Stream::Plain(_) => None,
            #[cfg(feature = "tls")]
            Stream::Tls(s) => crate::tls::server_end_point(&s.conn).map(ChannelBinding::tls_server_end_point),
        }
    }

    fn send(&mut self) -> io::Result<()> {
        self.stream.write_all(&self.wbuf)?;
        self.stream.flush()?;
        self.wbuf.clear();
        Ok(())
    }

    /// The next backend message; notifications are queued, notices dropped, parameter statuses kept.
    fn recv(&mut self) -> Result<Message> {
        loop {
            match self.recv_raw()? {
                Message::NotificationResponse(n) => self.notifications.push_back(Notification {
                    process_id: n.process_id(),
                    channel: n.channel()?.to_owned(),
                    payload: n.message()?.to_owned(),
                }),
                Message::NoticeResponse(_) => {}
                m => return Ok(m),
            }
        }
    }

    fn recv_raw(&mut self) -> Result<Message> {
        loop {
            if let Some(m) = Message::parse(&mut self.rbuf)? {
                return Ok(m);
            }
            let mut tmp = [0u8; 16 * 1024];
            let n = self.stream.read(&mut tmp)?;
            if n == 0 {
                return Err("server closed the connection".into());
            }
            self.rbuf.extend_from_slice(&tmp[..n]);
        }
    }

    /// Reads until ReadyForQuery, collecting rows of every statement; the first error is returned.
    fn collect(&mut self) -> Result<Vec<QueryResult>> {
        let mut out = Vec::new();
        let mut rows = Vec::new();
        let mut err: Option<PgError> = None;
        loop {
            match self.recv()? {
                Message::DataRow(r) => {
                    let buf = r.buffer();
                    let row: Row = r
                        .ranges()
                        .map(|rg| Ok(rg.map(|rg| String::from_utf8_lossy(&buf[rg]).into_owned())))
                        .collect()?;
                    rows.push(row);
                }
                Message::CommandComplete(c) => out.push(QueryResult {
                    rows: std::mem::take(&mut rows),
                    tag: c.tag()?.to_owned(),
                }),
                Message::EmptyQueryResponse => {}
                Message::ErrorResponse(e) => {
                    if err.is_none() {
                        err = Some(pg_error(e.fields()))
                    }
                }
                Message::ReadyForQuery(r) => {
                    self.txn_status = r.status();
                    return match err {
                        Some(e) => Err(e.into()),
                        None => Ok(out),
                    };
                }
                Message::RowDescription(_)
                | Message::ParseComplete
                | Message::BindComplete
                | Message::NoData
                | Message::CloseComplete
                | Message::ParameterDescription(_)
                | Message::ParameterStatus(_) => {}
                Message::PortalSuspended => {}
                _ => return Err("unexpected message".into()),
            }
        }
    }

    /// Simple-query protocol (text, may hold several statements). Never for untrusted values.
    pub fn simple(&mut self, sql: &str) -> Result<Vec<QueryResult>> {
        frontend::query(sql, &mut self.wbuf)?;
        self.send()?;
        self.collect()
    }

    /// Parse (named statement) + describe + sync, one round trip.
    pub fn prepare(&mut self, name: &str, sql: &str) -> Result<()> {
        frontend::parse(name, sql, std::iter::empty(), &mut self.wbuf)?;
        frontend::describe(b'S', name, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        self.collect().map(|_| ())
    }

    fn queue_bind_execute(&mut self, stmt: &str, params: &[Option<&str>]) -> Result<()> {
        frontend::bind(
            "",
            stmt,
            [0i16], // all parameters in text format
            params.iter(),
            |p, buf| match p {
                Some(s) => {
                    buf.extend_from_slice(s.as_bytes());
                    Ok(IsNull::No)
                }
                None => Ok(IsNull::Yes),
            },
            [0i16], // results in text format
            &mut self.wbuf,
        )
        .map_err(|e| match e {
            frontend::BindError::Conversion(e) => e,
            frontend::BindError::Serialization(e) => e.into(),
        })?;
        frontend::execute("", 0, &mut self.wbuf)?;
        Ok(())
    }

    /// Bind + execute + sync of a prepared statement, one round trip.
    pub fn execute(&mut self, stmt: &str, params: &[Option<&str>]) -> Result<QueryResult> {
        self.queue_bind_execute(stmt, params)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        Ok(self.collect()?.pop().ok_or("no result")?)
    }

    /// Unnamed parse + bind + execute + sync, one round trip (a one-off parameterized statement).
    pub fn query(&mut self, sql: &str, params: &[Option<&str>]) -> Result<QueryResult> {
        self.send_query(sql, params)?;
        self.finish_query()
    }

    /// The first half of `query`: sends without reading (pipelining / proving a statement blocks).
    pub fn send_query(&mut self, sql: &str, params: &[Option<&str>]) -> Result<()> {
        frontend::parse("", sql, std::iter::empty(), &mut self.wbuf)?;
        self.queue_bind_execute("", params)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        Ok(())
    }
    pub fn finish_query(&mut self) -> Result<QueryResult> {
        Ok(self.collect()?.pop().ok_or("no result")?)
    }

    /// Waits up to `timeout` for bytes from the server without consuming a message boundary:
    /// true when something arrived (it is buffered), false on time-out.
    pub fn wait_readable(&mut self, timeout: Duration) -> Result<bool> {
        if !self.rbuf.is_empty() {
            return Ok(true);
        }
        self.stream.tcp().set_read_timeout(Some(timeout))?;
        let mut tmp = [0u8; 16 * 1024];
        let r = self.stream.read(&mut tmp);
        self.stream.tcp().set_read_timeout(None)?;
        match r {
            Ok(0) => Err("server closed the connection".into()),
            Ok(n) => {
                self.rbuf.extend_from_slice(&tmp[..n]);
                Ok(true)
            }
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// LISTEN side: the next notification, waiting at most `timeout` (idle connection only).
    pub fn next_notification(&mut self, timeout: Duration) -> Result<Option<Notification>> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            // Drain whatever complete messages are buffered.
            while let Some(m) = Message::parse(&mut self.rbuf)? {
                match m {
                    Message::NotificationResponse(n) => self.notifications.push_back(Notification {
                        process_id: n.process_id(),
                        channel: n.channel()?.to_owned(),
                        payload: n.message()?.to_owned(),
                    }),
                    Message::NoticeResponse(_) | Message::ParameterStatus(_) => {}
                    Message::ErrorResponse(e) => return Err(pg_error(e.fields()).into()),
                    _ => return Err("unexpected message while idle".into()),
                }
            }
            if let Some(n) = self.notifications.pop_front() {
                return Ok(Some(n));
            }
            let now = std::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            if !self.wait_readable(deadline - now)? {
                return Ok(None);
            }
        }
    }

    pub fn close(mut self) -> Result<()> {
        frontend::terminate(&mut self.wbuf);
        self.send()?;
        Ok(())
    }
}
