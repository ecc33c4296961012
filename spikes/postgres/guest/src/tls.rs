//! rustls (ring provider) for SSLRequest-upgraded connections: sslmode=require (encrypt, no
//! verification, as libpq without a root cert) and verify-full (chain to the CA file + host name).
use crate::pg::{ConnectOptions, Result, SslMode};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

/// A TLS stream whose every flush is ONE write to the socket. wasi:sockets has no TCP_NODELAY (the
/// guest's set_nodelay is accepted and ignored; wasmtime-wasi never sets it on the host socket), so
/// Nagle is on: two small writes in a row wait ~40 ms for the peer's delayed ACK. rustls'
/// StreamOwned writes the handshake's last flight and the first application data separately.
pub struct TlsStream {
    pub conn: ClientConnection,
    pub sock: TcpStream,
    out: Vec<u8>,
}
impl TlsStream {
    fn push(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            self.conn.write_tls(&mut self.out)?;
        }
        if !self.out.is_empty() {
            let r = self.sock.write_all(&self.out);
            self.out.clear();
            r?;
        }
        Ok(())
    }
}
impl Write for TlsStream {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.conn.writer().write(b)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.conn.writer().flush()?;
        self.push()
    }
}
impl Read for TlsStream {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(b) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            // A socket read time-out surfaces here as WouldBlock/TimedOut with no state lost.
            if self.conn.read_tls(&mut self.sock)? == 0 {
                return Ok(0);
            }
            self.conn.process_new_packets().map_err(io::Error::other)?;
            self.push()?; // alerts, key updates
        }
    }
}

/// Handshake, then `first` (the startup message) in the same socket write as the client's Finished.
pub fn handshake(tcp: TcpStream, o: &ConnectOptions<'_>, first: &[u8]) -> Result<TlsStream> {
    let mut provider = rustls::crypto::ring::default_provider();
    // Experiment knob: PGSPIKE_CIPHER=chacha keeps only the ChaCha20-Poly1305 suites.
    if std::env::var("PGSPIKE_CIPHER").as_deref() == Ok("chacha") {
        provider.cipher_suites.retain(|s| format!("{:?}", s.suite()).contains("CHACHA20"));
    }
    let provider = Arc::new(provider);
    let builder = ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
    let config = match o.sslmode {
        SslMode::VerifyFull => {
            let mut roots = RootCertStore::empty();
            match &o.ca_pem {
                Some(pem) => {
                    for cert in CertificateDer::pem_slice_iter(pem) {
                        roots.add(cert?)?;
                    }
                }
                None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        _ => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
            .with_no_client_auth(),
    };
    let name = ServerName::try_from(o.server_name.to_owned())?;
    let conn = ClientConnection::new(Arc::new(config), name)?;
    let mut s = TlsStream { conn, sock: tcp, out: Vec::new() };
    s.push()?; // ClientHello
    while s.conn.is_handshaking() {
        if s.conn.read_tls(&mut s.sock)? == 0 {
            return Err("server closed the connection during the TLS handshake".into());
        }
        s.conn.process_new_packets()?;
        if s.conn.is_handshaking() {
            s.push()?;
        }
    }
    s.conn.writer().write_all(first)?;
    s.push()?; // [CCS,] Finished and the startup message: one write
    Ok(s)
}

/// tls-server-end-point channel binding data: the hash of the server's certificate. RFC 5929 says
/// the certificate's signature hash (SHA-256 for MD5/SHA-1/SHA-256 signatures); SHA-256 here, which
/// fits the usual sha256WithRSAEncryption / ecdsa-with-SHA256 certificates (a real driver picks by
/// the signature algorithm, or offers no -PLUS for others).
pub fn server_end_point(conn: &ClientConnection) -> Option<Vec<u8>> {
    let cert = conn.peer_certificates()?.first()?;
    Some(ring::digest::digest(&ring::digest::SHA256, cert.as_ref()).as_ref().to_vec())
}

#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);
impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(m, c, d, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
