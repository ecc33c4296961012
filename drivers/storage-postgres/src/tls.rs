//! rustls (ring provider) for connections upgraded by SSLRequest: `require`/`prefer` encrypt without
//! checking the certificate (as libpq does without a root certificate); `verify-full` checks the chain
//! against the CA (PEM text from the host, else the public web roots) and the host name.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::pg::{Config, Error, Result, SslMode};

/// A TLS stream whose every flush is ONE socket write (no TCP_NODELAY in WASI; see `pg.rs`).
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
            let result = self.sock.write_all(&self.out);
            self.out.clear();
            result?;
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
            // A socket time-out surfaces here as WouldBlock/TimedOut, with no TLS state lost.
            if self.conn.read_tls(&mut self.sock)? == 0 {
                return Ok(0);
            }
            self.conn.process_new_packets().map_err(io::Error::other)?;
            self.push()?; // alerts, key updates
        }
    }
}

fn tls_error(e: impl std::fmt::Display) -> Error {
    Error::Broken(format!("TLS: {e}"))
}

/// The handshake, then `first` (the startup message) in the same socket write as the client's Finished.
pub fn handshake(tcp: TcpStream, c: &Config, first: &[u8]) -> Result<TlsStream> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().map_err(tls_error)?;
    let config = match c.sslmode {
        SslMode::VerifyFull => {
            let mut roots = RootCertStore::empty();
            match &c.ca_pem {
                Some(pem) => {
                    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
                        roots.add(cert.map_err(|e| tls_error(format!("the CA certificate is not valid PEM: {e}")))?).map_err(tls_error)?;
                    }
                    if roots.is_empty() {
                        return Err(tls_error("the CA file holds no certificate"));
                    }
                }
                None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        _ => builder.dangerous().with_custom_certificate_verifier(Arc::new(NoVerify(provider))).with_no_client_auth(),
    };
    let name = ServerName::try_from(c.host.clone()).map_err(|e| tls_error(format!("{}: {e}", c.host)))?;
    let conn = ClientConnection::new(Arc::new(config), name).map_err(tls_error)?;
    let mut s = TlsStream { conn, sock: tcp, out: Vec::new() };
    s.push()?; // ClientHello
    while s.conn.is_handshaking() {
        if s.conn.read_tls(&mut s.sock)? == 0 {
            return Err(tls_error("the server closed the connection during the handshake"));
        }
        s.conn.process_new_packets().map_err(tls_error)?;
        if s.conn.is_handshaking() {
            s.push()?;
        }
    }
    s.conn.writer().write_all(first)?;
    s.push()?; // [CCS,] Finished and the startup message: one write
    Ok(s)
}

/// tls-server-end-point channel binding data (RFC 5929): the hash of the server's certificate, with the
/// hash of its signature algorithm (SHA-256 for MD5, SHA-1 and SHA-256 signatures). `None` (no -PLUS,
/// plain SCRAM instead) for a certificate whose hash cannot be told.
pub fn server_end_point(conn: &ClientConnection) -> Option<Vec<u8>> {
    let cert = conn.peer_certificates()?.first()?;
    let algorithm = signature_hash(cert.as_ref())?;
    Some(ring::digest::digest(algorithm, cert.as_ref()).as_ref().to_vec())
}

/// The digest for tls-server-end-point, from the certificate's signature algorithm OID.
fn signature_hash(der: &[u8]) -> Option<&'static ring::digest::Algorithm> {
    // DER of the OIDs (content bytes) that name the signature algorithm.
    const SHA256: &[&[u8]] = &[
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0b], // sha256WithRSAEncryption
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02],       // ecdsa-with-SHA256
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x05], // sha1WithRSAEncryption
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x04], // md5WithRSAEncryption
    ];
    const SHA384: &[&[u8]] = &[
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0c], // sha384WithRSAEncryption
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x03],       // ecdsa-with-SHA384
    ];
    const SHA512: &[&[u8]] = &[
        &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x0d], // sha512WithRSAEncryption
        &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x04],       // ecdsa-with-SHA512
    ];
    // The outer signatureAlgorithm follows the tbsCertificate: find the last OID in the certificate.
    let oid = last_oid(der)?;
    if SHA256.contains(&oid) {
        Some(&ring::digest::SHA256)
    } else if SHA384.contains(&oid) {
        Some(&ring::digest::SHA384)
    } else if SHA512.contains(&oid) {
        Some(&ring::digest::SHA512)
    } else {
        None
    }
}

/// The certificate's outer signatureAlgorithm OID: Certificate ::= SEQUENCE { tbsCertificate,
/// signatureAlgorithm SEQUENCE { OID, ... }, signatureValue }.
fn last_oid(der: &[u8]) -> Option<&[u8]> {
    fn header(d: &[u8]) -> Option<(u8, usize, usize)> {
        let tag = *d.first()?;
        let first = *d.get(1)? as usize;
        if first < 0x80 {
            return Some((tag, 2, first));
        }
        let n = first & 0x7f;
        if n == 0 || n > 4 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = (len << 8) | *d.get(2 + i)? as usize;
        }
        Some((tag, 2 + n, len))
    }
    let (tag, h, len) = header(der)?;
    if tag != 0x30 {
        return None;
    }
    let body = der.get(h..h + len)?;
    let (_, tbs_h, tbs_len) = header(body)?;
    let rest = body.get(tbs_h + tbs_len..)?;
    let (tag, alg_h, alg_len) = header(rest)?;
    if tag != 0x30 {
        return None;
    }
    let alg = rest.get(alg_h..alg_h + alg_len)?;
    let (tag, oid_h, oid_len) = header(alg)?;
    if tag != 0x06 {
        return None;
    }
    alg.get(oid_h..oid_h + oid_len)
}

/// No certificate check (`require`, `prefer`), but the handshake's signatures are still verified.
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
