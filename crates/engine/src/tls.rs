//! [`TlsOptions`](workload::TlsOptions) -> a rustls client configuration (vegeta's `-insecure`,
//! `-root-certs`, `-cert`, `-key`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use workload::TlsOptions;

use crate::EngineError;

/// The client configuration of the tools around a run that speak HTTP/1.1 over TLS
/// (`https://` OTLP endpoints and trace stores): the system's roots, no client
/// certificate, as an attack's targets get without TLS flags.
pub fn tool_client_config() -> Result<Arc<ClientConfig>, EngineError> {
    client_config(&TlsOptions::default(), false)
}

/// The client configuration for `options`, offering h2 before http/1.1 in ALPN
/// when `offer_h2`.
pub(crate) fn client_config(
    options: &TlsOptions,
    offer_h2: bool,
) -> Result<Arc<ClientConfig>, EngineError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|err| EngineError::Tls {
            path: None,
            reason: err.to_string(),
        })?;
    let builder = if options.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
    } else {
        builder.with_root_certificates(root_store(&options.root_certs)?)
    };
    let mut config = match (&options.client_cert, &options.client_key) {
        (Some(cert), Some(key)) => builder
            .with_client_auth_cert(read_certs(cert)?, read_key(key)?)
            .map_err(|err| EngineError::Tls {
                path: Some(cert.clone()),
                reason: err.to_string(),
            })?,
        (None, None) => builder.with_no_client_auth(),
        _ => {
            return Err(EngineError::Tls {
                path: None,
                reason: "-cert and -key go together".to_owned(),
            });
        }
    };
    config.alpn_protocols = if offer_h2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}

/// `-tls-server-name`, checked: the name every TLS connection sends and verifies.
pub(crate) fn server_name(
    options: &TlsOptions,
) -> Result<Option<ServerName<'static>>, EngineError> {
    let Some(name) = &options.server_name else {
        return Ok(None);
    };
    ServerName::try_from(name.clone())
        .map(Some)
        .map_err(|err| EngineError::Tls {
            path: None,
            reason: format!("-tls-server-name {name:?}: {err}"),
        })
}

fn root_store(files: &[PathBuf]) -> Result<RootCertStore, EngineError> {
    let mut store = RootCertStore::empty();
    if files.is_empty() {
        // Hosts without system roots still work with -root-certs or -insecure.
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = store.add(cert);
        }
        return Ok(store);
    }
    for file in files {
        for cert in read_certs(file)? {
            store.add(cert).map_err(|err| EngineError::Tls {
                path: Some(file.clone()),
                reason: err.to_string(),
            })?;
        }
    }
    Ok(store)
}

fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, EngineError> {
    let fail = |reason: String| EngineError::Tls {
        path: Some(path.to_owned()),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|err| fail(err.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| fail(err.to_string()))?;
    if certs.is_empty() {
        return Err(fail("no PEM certificates in the file".to_owned()));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, EngineError> {
    PrivateKeyDer::from_pem_file(path).map_err(|err| EngineError::Tls {
        path: Some(path.to_owned()),
        reason: err.to_string(),
    })
}

/// `-insecure`: accept any certificate, but still check handshake signatures so the
/// connection is at least consistent.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// What to do about a failed handshake, for the errors that have a usual fix: a
/// certificate nobody here trusts or for another name, or a server that does not
/// speak TLS at all (its cleartext bytes read as broken records). Empty otherwise.
pub(crate) fn hint(err: &rustls::Error) -> &'static str {
    use rustls::CertificateError as Cert;
    match err {
        rustls::Error::InvalidCertificate(Cert::UnknownIssuer) => {
            " (give -root-certs FILE with the CA that signed it, or -insecure)"
        }
        rustls::Error::InvalidCertificate(
            Cert::NotValidForName | Cert::NotValidForNameContext { .. },
        ) => " (give -tls-server-name NAME with a name it is valid for, or -insecure)",
        rustls::Error::InvalidMessage(_) => " (does the server speak TLS?)",
        _ => "",
    }
}
