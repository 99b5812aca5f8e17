//! TLS for `simulate -tls`: a self-signed certificate made at start (rcgen) for
//! `localhost`, `127.0.0.1` and `::1`, or the operator's PEM files; rustls with the ring
//! provider, offering ALPN `h2` then `http/1.1`, so a client that can speak HTTP/2 gets
//! it and any other gets HTTP/1.1 on the same port.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

use crate::Tls;
use crate::error::SimulatorError;

/// The names the generated certificate is valid for.
pub(crate) const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// What the server threads need to accept TLS, and the certificate to show clients.
pub(crate) struct TlsSetup {
    pub acceptor: TlsAcceptor,
    /// The certificate chain served, PEM (what a client adds to its roots).
    pub certificate_pem: String,
}

struct Identity {
    chain_pem: String,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

pub(crate) fn setup(tls: &Tls) -> Result<TlsSetup, SimulatorError> {
    let identity = match tls {
        Tls::SelfSigned => self_signed()?,
        Tls::PemFiles { cert, key } => from_files(cert, key)?,
    };
    // The provider is named, not taken from the process default: another crate in the
    // same binary may enable a second one, and then there is no default.
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SimulatorError::Tls(format!("cannot set up rustls: {e}")))?
        .with_no_client_auth()
        .with_single_cert(identity.chain, identity.key)
        .map_err(|e| SimulatorError::Tls(bad_pair(tls, &e)))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsSetup {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        certificate_pem: identity.chain_pem,
    })
}

fn bad_pair(tls: &Tls, error: &rustls::Error) -> String {
    match tls {
        Tls::SelfSigned => format!("the generated certificate was refused: {error}"),
        Tls::PemFiles { cert, key } => format!(
            "certificate {} and key {} cannot be used together: {error}",
            cert.display(),
            key.display()
        ),
    }
}

fn self_signed() -> Result<Identity, SimulatorError> {
    let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|n| (*n).to_owned()).collect();
    let generated = rcgen::generate_simple_self_signed(names)
        .map_err(|e| SimulatorError::Tls(format!("cannot generate a certificate: {e}")))?;
    let key = PrivatePkcs8KeyDer::from(generated.signing_key.serialize_der());
    Ok(Identity {
        chain_pem: generated.cert.pem(),
        chain: vec![generated.cert.der().clone()],
        key: PrivateKeyDer::Pkcs8(key),
    })
}

fn read(path: &Path, what: &str) -> Result<Vec<u8>, SimulatorError> {
    std::fs::read(path).map_err(|e| {
        SimulatorError::Tls(format!("cannot read {what} file {}: {e}", path.display()))
    })
}

fn from_files(cert: &Path, key: &Path) -> Result<Identity, SimulatorError> {
    let cert_bytes = read(cert, "certificate")?;
    let chain = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| SimulatorError::Tls(format!("{}: bad PEM: {e}", cert.display())))?;
    if chain.is_empty() {
        return Err(SimulatorError::Tls(format!(
            "{}: no PEM certificate (-----BEGIN CERTIFICATE-----) found",
            cert.display()
        )));
    }
    let key_bytes = read(key, "key")?;
    let key_der = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| {
        SimulatorError::Tls(format!("{}: no usable PEM private key: {e}", key.display()))
    })?;
    Ok(Identity {
        chain_pem: String::from_utf8_lossy(&cert_bytes).into_owned(),
        chain,
        key: key_der,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn files(cert: &str, key: &str) -> Tls {
        Tls::PemFiles {
            cert: PathBuf::from(cert),
            key: PathBuf::from(key),
        }
    }

    #[test]
    fn self_signed_certificates_serve_h2_then_http11() {
        let setup = setup(&Tls::SelfSigned).unwrap();
        assert!(
            setup
                .certificate_pem
                .starts_with("-----BEGIN CERTIFICATE-----")
        );
        let config = setup.acceptor.config();
        assert_eq!(
            config.alpn_protocols,
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        );
    }

    #[test]
    fn pem_files_are_checked_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            path.to_str().unwrap().to_owned()
        };
        let cert = write("cert.pem", &generated.cert.pem());
        let key = write("key.pem", &generated.signing_key.serialize_pem());
        let other_key = rcgen::KeyPair::generate().unwrap().serialize_pem();
        let other = write("other.pem", &other_key);
        let junk = write("junk.pem", "not pem at all\n");
        let setup = setup(&files(&cert, &key)).unwrap();
        assert_eq!(setup.certificate_pem, generated.cert.pem());
        let rows: &[(Tls, &str)] = &[
            (
                files("/nonexistent/c.pem", &key),
                "cannot read certificate file /nonexistent/c.pem",
            ),
            (
                files(&cert, "/nonexistent/k.pem"),
                "cannot read key file /nonexistent/k.pem",
            ),
            (files(&junk, &key), "junk.pem: no PEM certificate"),
            (files(&key, &key), "key.pem: no PEM certificate"),
            (files(&cert, &junk), "junk.pem: no usable PEM private key"),
            (files(&cert, &other), "cannot be used together"),
        ];
        for (tls, want) in rows {
            let err = super::setup(tls).err().unwrap().to_string();
            assert!(
                err.starts_with("tls: ") && err.contains(want),
                "{tls:?}: {err}"
            );
        }
    }
}
