//! TLS (rustls) for both ends, mutual TLS as an option, and the shared token
//! that decides who may join.

use tonic::metadata::MetadataValue;
use tonic::transport::{Certificate, ClientTlsConfig, Identity, ServerTlsConfig};
use tonic::{Request, Status};

/// The coordinator's certificate and key (PEM), and optionally the CA whose
/// client certificates it demands (mutual TLS).
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// Certificate chain, PEM.
    pub cert_pem: Vec<u8>,
    /// Private key, PEM.
    pub key_pem: Vec<u8>,
    /// CA of the client certificates; `Some` turns on mutual TLS.
    pub client_ca_pem: Option<Vec<u8>>,
}

impl ServerTls {
    pub(crate) fn config(&self) -> ServerTlsConfig {
        let mut tls =
            ServerTlsConfig::new().identity(Identity::from_pem(&self.cert_pem, &self.key_pem));
        if let Some(ca) = &self.client_ca_pem {
            tls = tls.client_ca_root(Certificate::from_pem(ca));
        }
        tls
    }
}

/// The CA a client trusts, the name it expects on the coordinator's
/// certificate, and optionally its own certificate and key (mutual TLS).
#[derive(Debug, Clone)]
pub struct ClientTls {
    /// CA certificate, PEM.
    pub ca_pem: Vec<u8>,
    /// Name on the coordinator's certificate (default: the address's host).
    pub domain: Option<String>,
    /// This client's certificate and key, PEM.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

impl ClientTls {
    pub(crate) fn config(&self, host: &str) -> ClientTlsConfig {
        let mut tls = ClientTlsConfig::new()
            .ca_certificate(Certificate::from_pem(&self.ca_pem))
            .domain_name(self.domain.clone().unwrap_or_else(|| host.to_string()));
        if let Some((cert, key)) = &self.identity {
            tls = tls.identity(Identity::from_pem(cert, key));
        }
        tls
    }
}

/// Metadata key of the shared token.
const AUTHORIZATION: &str = "authorization";

/// Adds the shared token (if any) to every call.
#[derive(Debug, Clone)]
pub struct AttachToken(pub Option<MetadataValue<tonic::metadata::Ascii>>);

impl AttachToken {
    /// The interceptor for `token`; a token that is not printable ASCII is an
    /// error.
    pub fn new(token: Option<&str>) -> Result<Self, crate::NetError> {
        token
            .map(|t| {
                format!("Bearer {t}").parse().map_err(|_| {
                    crate::NetError::Config("the token must be printable ASCII".into())
                })
            })
            .transpose()
            .map(Self)
    }
}

impl tonic::service::Interceptor for AttachToken {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(v) = &self.0 {
            request.metadata_mut().insert(AUTHORIZATION, v.clone());
        }
        Ok(request)
    }
}

/// Refuses every call that does not carry the shared token (when one is set).
#[derive(Debug, Clone)]
pub struct RequireToken(pub Option<String>);

impl tonic::service::Interceptor for RequireToken {
    fn call(&mut self, request: Request<()>) -> Result<Request<()>, Status> {
        let Some(token) = &self.0 else {
            return Ok(request);
        };
        let given = request
            .metadata()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        match given {
            Some(g) if constant_time_eq(g.as_bytes(), token.as_bytes()) => Ok(request),
            _ => Err(Status::unauthenticated("missing or wrong token")),
        }
    }
}

/// Equality whose time does not depend on where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    #[test]
    fn only_the_right_token_passes() {
        let mut require = RequireToken(Some("s3cret".into()));
        let mut attach = AttachToken::new(Some("s3cret")).unwrap();
        assert!(require.call(attach.call(Request::new(())).unwrap()).is_ok());
        let mut wrong = AttachToken::new(Some("guess")).unwrap();
        let refused = require
            .call(wrong.call(Request::new(())).unwrap())
            .unwrap_err();
        assert_eq!(refused.code(), tonic::Code::Unauthenticated);
        assert!(require.call(Request::new(())).is_err());
        assert!(RequireToken(None).call(Request::new(())).is_ok());
    }
}
